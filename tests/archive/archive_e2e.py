#!/usr/bin/env python3
"""The crawl's CDXJ index and WACZ package, end to end against the local
test web, checked by independent readers: warcio.js's cdx-index (npm
`warcio`, installed by the archive_warcio fixture into BUILD/npm) for every
index line, Python's zipfile, json and hashlib for the package.

  archive_e2e.py cdxj     a crawl (page requisites, chunked and brotli hosts,
                          1 MiB WARC files): each WARC file's own index is
                          warcio's output for it, line for line; index.cdxj is
                          all of them sorted byte by byte; its (URL, status)
                          pairs are the test web's logged responses
  archive_e2e.py resume   the crawl killed ARCHIVE_KILLS times (default 6),
                          every other kill a power cut (files cut back to what
                          was fsynced), resumed each time: the index.cdxj a
                          resume writes is warcio's lines of the WARC files it
                          found (none lost, none twice), and so is the final one
  archive_e2e.py wacz     a crawl with --wacz: every entry STORED, every hash
                          of datapackage.json and datapackage-digest.json
                          recomputed, the WARC files as written, the index
                          warcio's for the WARCs read out of the package, the
                          pages the test web's HTML pages with their titles,
                          seeds at depth 0; then a ZipNum index (crawler wacz
                          --zipnum-lines) read back through its .idx
  archive_e2e.py bad      a WARC file cut inside a record, a per-file index
                          with a wrong line and a torn one, bytes that are no
                          WARC, a folder a crawl holds: clear messages, counts,
                          the index of what can be read, exit codes

Environment: CRAWLER_BUILD, CRAWLER_SOURCE (as crawl_e2e.py), E2E_HOSTS,
E2E_PAGES, ARCHIVE_KILLS, ARCHIVE_SEED.
"""
import fcntl
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "resume"))
import crawl_e2e as e2e  # noqa: E402
import resume_e2e  # noqa: E402

WARCIO = os.path.join(e2e.BUILD, "npm", "node_modules", "warcio", "dist", "cli.js")


def fail(msg):
    e2e.fail(msg)


def warcio_lines(path):
    """warcio.js's cdx-index lines of one WARC file, in record order."""
    if not os.path.exists(WARCIO):
        fail("warcio.js is not installed at %s (the archive_warcio fixture)" % WARCIO)
    p = subprocess.run(["node", WARCIO, "cdx-index", path], capture_output=True, timeout=300)
    if p.returncode != 0:
        fail("warcio.js cdx-index %s exited %d: %s" % (path, p.returncode, p.stderr[-2000:]))
    return p.stdout.splitlines(keepends=True)


def warcs_of(out):
    return sorted(f for f in os.listdir(out) if f.endswith(".warc.gz"))


def index_lines(path):
    with open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "line %d: %r vs warcio %r" % (i + 1, x[:300], y[:300])
    return "%d lines vs warcio's %d" % (len(a), len(b))


def check_same(what, mine, ref, errors):
    if mine != ref:
        errors.append("%s differs from warcio.js: %s" % (what, first_difference(mine, ref)))


def check_index(out, files, errors, what="index.cdxj"):
    """index.cdxj holds warcio's lines of files, sorted byte by byte."""
    ref = sorted(line for w in files for line in warcio_lines(os.path.join(out, w)))
    check_same(what, index_lines(os.path.join(out, "index.cdxj")), ref, errors)
    return len(ref)


def crawl_args(tw, out, extra):
    return [e2e.CRAWLER, "crawl", "--seeds", os.path.join(tw.dir, "seeds.txt"), "-c",
            os.path.join(e2e.SOURCE, "configs", "testweb.conf"), "--dns-server",
            "127.0.0.1:%d" % tw.dns_port, "--allow-private-networks", "-o", out, "--quiet",
            "--host-delay", str(e2e.HOST_DELAY_MS), "--ip-delay", str(e2e.IP_DELAY_MS)] + extra


def run_crawl(tw, out, extra=()):
    with open(os.path.join(tw.dir, "seeds.txt"), "w") as f:
        f.write("\n".join(tw.run_mode("--seeds")) + "\n")
    p = subprocess.run(crawl_args(tw, out, list(extra)), capture_output=True, text=True,
                       timeout=240)
    if p.returncode != 0:
        fail("crawl exited %d: %s" % (p.returncode, p.stderr[-3000:]))
    return p


RICH_WEB = ["--requisites", "--fault", "h3=chunked", "--fault", "h4=br"]

# Records no crawl of the test web makes: odd statuses, Content-Types
# repeated, folded, non-ASCII, invalid UTF-8, with NUL or controls, header
# lines ended by bare LF, URLs with www labels, ports, userinfo, spaces,
# queries to sort, other record types, no URL, digests without a colon.
ODD = [
    (b"response", b"http://www.Example.com/A/b?z=1&a=2",
     b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\nbody"),
    (b"response", b"https://www2.example.com:8443/x?b&a&",
     b"HTTP/1.1 404 Not Found\r\ncontent-type:  Text/Plain \r\n\r\n"),
    (b"response", b"http://WWW.example.com/",
     b"HTTP/1.1 200\r\nContent-Type: a/b\r\nContent-Type: c/d;x\r\n\r\n"),
    (b"response", b"http://127.0.0.1:8080/p", b"HTTP/1.1  200 OK\r\nServer: x\r\n\r\n"),
    (b"response", b"http://[::1]/x", b"HTTP/1.1 abc OK\r\nContent-Type: image/png\r\n\r\n"),
    (b"response", b"ftp://x/y", b"HTTP/1.1\r\nContent-Type: x/y\r\n\r\n"),
    (b"response", b"http://www.example.com/?",
     b"HTTP/1.0 0302 Found\nContent-Type: text/css\nX: y\n\nbody\r\n\r\nmore"),
    (b"response", b"http://user:pw@example.com/a",
     b"HTTP/1.1 200 OK\r\nContent-Type: text/h\xc3\xa9ml\r\n\r\n"),
    (b"response", b"http://exa mple.com/",
     b"HTTP/1.1 200 OK\r\nContent-Type: text/\xe2\x82\xacuro\r\n\r\n"),
    (b"response", b"http://example.com/bad", b"HTTP/1.1 200 OK\r\nContent-Type: te\xffxt/x\r\n\r\n"),
    (b"response", b"http://example.com/nul",
     b"HTTP/1.1 200 OK\r\nContent-Type: a\x00b\r\nContent-Type: c/d\r\n\r\n"),
    (b"response", b"http://example.com/fold",
     b"HTTP/1.1 200 OK\r\nContent-Type: text/\r\n  html ;q\r\n\r\n"),
    (b"response", b"http://example.com/ctl", b"HTTP/1.1 200 OK\r\nContent-Type: a\x01\"\\b\r\n\r\n"),
    (b"response", b"http://example.com/sp",
     b"HTTP/1.1 200 OK\r\nContent-Type : text/html\r\nContent-Type\t: x\r\n\r\n"),
    (b"response", b"http://example.com/n1", b"HTTP/1.1 1e3 OK\r\n\r\n"),
    (b"response", b"http://example.com/n2", b"HTTP/1.1 0x1F OK\r\n\r\n"),
    (b"response", b"http://example.com/n3", b"HTTP/1.1 99999999999999999999999 OK\r\n\r\n"),
    (b"response", b"http://example.com/n4", b"HTTP/1.1 -0 OK\r\n\r\n"),
    (b"response", b"http://example.com/n5", b"HTTP/1.1 .5e-7 OK\r\n\r\n"),
    (b"response", b"http://example.com/nodigest", b"HTTP/1.1 200 OK\r\n\r\n"),
    (b"revisit", b"http://example.com/r",
     b"HTTP/1.1 304 Not Modified\r\nContent-Type: text/html\r\n\r\n"),
    (b"revisit", b"http://example.com/r0", b""),
    (b"request", b"http://example.com/q", b"GET / HTTP/1.1\r\n\r\n"),
    (b"resource", b"http://example.com/res", b"hello"),
    (b"metadata", b"http://example.com/meta", b"a: b\r\n"),
    (b"response", b"http://example.com/a?c=3&b=2&a=1&B=0",
     b"HTTP/1.1 200 OK\r\nContent-Type: \xc2\xa0text/x\xc2\xa0\r\n\r\n"),
    (b"response", b"http://www12.example.com:80/%7Euser/%2e%2E/x", b"HTTP/1.1 200 OK\r\n\r\n"),
    (b"response", None, b"HTTP/1.1 200 OK\r\n\r\n"),
]


def odd_warc(path):
    with open(path, "wb") as out:
        for i, (typ, url, block) in enumerate(ODD):
            h = b"WARC/1.1\r\nWARC-Type: " + typ + b"\r\nWARC-Record-ID: <urn:uuid:%d>\r\n" % i
            h += b"WARC-Date: 2024-05-06T07:08:09.123Z\r\n"
            if url is not None:
                h += b"WARC-Target-URI: " + url + b"\r\n"
            if i != 19:
                h += b"WARC-Payload-Digest: " + (b"sha1:A:B" if i == 3 else b"nocolon" if i == 4
                                                 else b"sha1:ABCDEF") + b"\r\n"
            ctype = b"application/warc-fields" if typ == b"metadata" else \
                b"application/http; msgtype=response"
            h += b"Content-Type: " + ctype + b"\r\nContent-Length: %d\r\n\r\n" % len(block)
            out.write(gzip.compress(h + block + b"\r\n\r\n"))


def check_odd_records(work, errors):
    """crawler index over records of every odd kind equals warcio.js."""
    odd = os.path.join(work, "odd")
    os.makedirs(odd)
    odd_warc(os.path.join(odd, "odd.warc.gz"))
    run_index(odd)
    ref = warcio_lines(os.path.join(odd, "odd.warc.gz"))
    check_same("the index of odd records", index_lines(os.path.join(odd, "odd.cdxj")), ref, errors)
    check_same("the sorted index of odd records", index_lines(os.path.join(odd, "index.cdxj")),
               sorted(ref), errors)
    return len(ref)


def test_cdxj():
    work = tempfile.mkdtemp(prefix="archive-cdxj-")
    tw = e2e.TestWeb(work, e2e.gen_args(RICH_WEB))
    out = os.path.join(work, "out")
    try:
        run_crawl(tw, out, ["--page-requisites", "--set", "output.warc_max_mb=1"])
    finally:
        tw.stop()
    errors = []
    files = warcs_of(out)
    if len(files) < 2:
        errors.append("%d WARC files: want several (1 MiB each)" % len(files))
    for w in files:
        side = os.path.join(out, w[:-len(".warc.gz")] + ".cdxj")
        if not os.path.exists(side):
            errors.append("%s has no index beside it" % w)
            continue
        check_same(side, index_lines(side), warcio_lines(os.path.join(out, w)), errors)
    n = check_index(out, files, errors)
    # what the index names is what the test web answered
    lines = index_lines(os.path.join(out, "index.cdxj"))
    indexed = set()
    kinds = {}
    for line in lines:
        j = json.loads(line.split(b" ", 2)[2])
        indexed.add("%s\t%s" % (j["url"], j["status"]))
        kinds[j.get("mime", "-")] = kinds.get(j.get("mime", "-"), 0) + 1
    served = set("http://%s%s\t%d" % (f[2], f[5], int(f[6])) for f in tw.log_fields()
                 if int(f[6]) > 0)
    if indexed != served:
        errors.append("index and test web log differ: only indexed %s; only served %s" %
                      (sorted(indexed - served)[:5], sorted(served - indexed)[:5]))
    if not kinds.get("warc/revisit") or not kinds.get("text/html") or len(kinds) < 4:
        errors.append("too few kinds of records indexed: %s" % kinds)
    odd = check_odd_records(work, errors)
    if errors:
        fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("cdxj: %d lines in %d WARC files equal warcio.js's (mimes %s), and %d lines of odd "
          "records" % (n, len(files), sorted(kinds.items()), odd))


def wait_new_index(out, old_ino, p, timeout=60):
    """Waits until the resumed crawl p has written index.cdxj anew."""
    path = os.path.join(out, "index.cdxj")
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if os.stat(path).st_ino != old_ino:
                return True
        except FileNotFoundError:
            pass
        if p.poll() is not None:
            return False
        time.sleep(0.02)
    fail("a resume wrote no index.cdxj in %d s" % timeout)


def test_resume():
    kills = int(os.environ.get("ARCHIVE_KILLS", "6"))
    work = tempfile.mkdtemp(prefix="archive-resume-")
    tw = e2e.TestWeb(work, e2e.gen_args(), ["--model", "* latency fixed 20ms"])
    seed = int(os.environ.get("ARCHIVE_SEED", str(os.getpid())))
    rng = random.Random(seed)
    journal = os.path.join(work, "synced")
    env = dict(os.environ, LD_PRELOAD=resume_e2e.SYNCTRACK, SYNCTRACK_JOURNAL=journal)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
    out = os.path.join(work, "out")
    errors = []
    checked = remade = cuts = 0
    try:
        c = resume_e2e.Crawl(tw, out, ["--set", "output.warc_max_mb=1"])
        for i in range(kills):
            files = warcs_of(out) if i > 0 else []
            try:
                old = os.stat(os.path.join(out, "index.cdxj")).st_ino
            except FileNotFoundError:
                old = None
            p = c.start(resume=i > 0, env=env)
            if i > 0 and not wait_new_index(out, old, p):
                o, e = p.communicate()
                fail("resume %d exited %d before writing its index: %s" % (i, p.returncode, e))
            time.sleep(rng.uniform(0.3, 1.5))
            if p.poll() is not None:
                o, e = p.communicate()
                if p.returncode != 0:
                    fail("run %d exited %d: %s" % (i, p.returncode, e[-2000:]))
                break
            o, e = resume_e2e.kill_now(p)
            remade += sum(int(m) for m in re.findall(r"(\d+) lines made again", e))
            cuts += sum(int(m) for m in re.findall(r"(\d+) torn or wrong lines cut", e))
            if i > 0:
                # the index this resume wrote: the lines of the files it found
                check_index(out, files, errors, "index.cdxj of resume %d" % i)
                checked += 1
            if i % 2 == 1:
                resume_e2e.power_cut(out, journal)
        rc, o, e = c.run(resume=True, env=env)
        if rc != 0:
            fail("final resume exited %d: %s" % (rc, e[-3000:]))
        remade += sum(int(m) for m in re.findall(r"(\d+) lines made again", e))
    finally:
        tw.stop()
    files = warcs_of(out)
    n = check_index(out, files, errors, "final index.cdxj")
    for w in files:
        side = os.path.join(out, w[:-len(".warc.gz")] + ".cdxj")
        check_same(side, index_lines(side), warcio_lines(os.path.join(out, w)), errors)
    if checked == 0:
        errors.append("no resume's index was checked: the crawl ended before the kills")
    if remade == 0:
        errors.append("no resume completed an index from its records: the kills missed")
    if errors:
        fail("ARCHIVE_SEED=%d: %s" % (seed, "; ".join(errors)))
    shutil.rmtree(work, ignore_errors=True)
    print("resume: %d resumes' indexes and the final one (%d lines, %d files) equal warcio.js's; "
          "%d lines made again from records, %d torn lines cut" % (checked, n, len(files), remade,
                                                                   cuts))


HTML_PATH = re.compile(r"^/(\?q=[12])?$|\.html(\?q=[12])?$")


def expected_title(url):
    m = re.match(r"http://h(\d+)\.[^/]+(/.*)$", url)
    host, path = m.group(1), m.group(2)
    if path == "/":
        return "h%s page 0" % host
    v = re.search(r"(?:p(\d+)\.html|^/)\?q=(\d)$", path)
    if v:
        return "h%s page %s variant %s" % (host, v.group(1) or "0", v.group(2))
    return "h%s page %s" % (host, re.search(r"p(\d+)\.html$", path).group(1))


def check_package(path, out, errors, zipnum=False):
    z = zipfile.ZipFile(path)
    names = z.namelist()
    for i in z.infolist():
        if i.compress_type != zipfile.ZIP_STORED:
            errors.append("%s is not STORED" % i.filename)
    dp = json.loads(z.read("datapackage.json"))
    digest = json.loads(z.read("datapackage-digest.json"))
    if dp.get("profile") != "data-package" or dp.get("wacz_version") != "1.1.1":
        errors.append("datapackage.json: profile %r, wacz_version %r" %
                      (dp.get("profile"), dp.get("wacz_version")))
    if digest != {"path": "datapackage.json",
                  "hash": "sha256:" + hashlib.sha256(z.read("datapackage.json")).hexdigest()}:
        errors.append("datapackage-digest.json %r does not hash datapackage.json" % digest)
    listed = set()
    for r in dp["resources"]:
        data = z.read(r["path"])
        listed.add(r["path"])
        if r["hash"] != "sha256:" + hashlib.sha256(data).hexdigest() or r["bytes"] != len(data):
            errors.append("%s: hash or size differs from datapackage.json" % r["path"])
    if listed | {"datapackage.json", "datapackage-digest.json"} != set(names):
        errors.append("entries %s, resources %s" % (sorted(names), sorted(listed)))
    # the WARC files, as the crawl wrote them, and their index
    files = warcs_of(out)
    if sorted(n for n in names if n.startswith("archive/")) != ["archive/" + w for w in files]:
        errors.append("archive/ holds %s" % [n for n in names if n.startswith("archive/")])
    tmp = tempfile.mkdtemp(prefix="wacz-read-")
    ref = []
    for w in files:
        data = z.read("archive/" + w)
        if data != open(os.path.join(out, w), "rb").read():
            errors.append("archive/%s differs from the crawl's file" % w)
        with open(os.path.join(tmp, w), "wb") as f:
            f.write(data)
        ref += warcio_lines(os.path.join(tmp, w))
    shutil.rmtree(tmp, ignore_errors=True)
    ref.sort()
    if zipnum:
        idx = z.read("indexes/index.idx").decode().splitlines()
        gz = z.read("indexes/index.cdx.gz")
        meta = idx[0].split(" ", 2)
        if meta[:2] != ["!meta", "0"] or json.loads(meta[2]).get("filename") != "index.cdx.gz":
            errors.append("index.idx first line %r" % idx[0])
        lines = []
        for entry in idx[1:]:
            prefix, js = entry.split(" {", 1)
            loc = json.loads("{" + js)
            block = gzip.decompress(gz[loc["offset"]:loc["offset"] + loc["length"]])
            blines = block.splitlines(keepends=True)
            if not blines[0].startswith(prefix.encode() + b" {"):
                errors.append("index.idx prefix %r is not its block's first line" % prefix)
            lines += blines
        if len(idx) - 1 != (len(ref) + 2999) // 3000:
            errors.append("a ZipNum index of %d blocks for %d lines" % (len(idx) - 1, len(ref)))
    else:
        lines = z.read("indexes/index.cdx").splitlines(keepends=True)
    check_same("the package's index", lines, ref, errors)
    pages = [json.loads(line) for line in z.read("pages/pages.jsonl").decode().splitlines()]
    return pages


def test_wacz():
    work = tempfile.mkdtemp(prefix="archive-wacz-")
    tw = e2e.TestWeb(work, e2e.gen_args(["--requisites"]))
    out = os.path.join(work, "out")
    try:
        run_crawl(tw, out, ["--page-requisites", "--wacz"])
        seeds = tw.run_mode("--seeds")
        expected = [line.split("\t") for line in tw.run_mode("--expected", "--agent", e2e.AGENT)]
    finally:
        tw.stop()
    errors = []
    pkg = os.path.join(out, "crawl.wacz")
    if not os.path.exists(pkg) or os.path.exists(pkg + ".tmp"):
        fail("no crawl.wacz (or its temporary left) after a crawl with --wacz")
    pages = check_package(pkg, out, errors)
    if pages[0] != {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}:
        errors.append("pages.jsonl header %r" % pages[0])
    pages = pages[1:]
    want = set(u for u, st in expected
               if st == "200" and HTML_PATH.search(re.sub(r"^http://[^/]+", "", u)))
    got = set(p["url"] for p in pages)
    if got != want:
        errors.append("pages: only listed %s; only expected %s" %
                      (sorted(got - want)[:5], sorted(want - got)[:5]))
    for p in pages:
        if p.get("title") != expected_title(p["url"]):
            errors.append("%s: title %r" % (p["url"], p.get("title")))
            break
        if not re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", p["ts"]):
            errors.append("%s: ts %r" % (p["url"], p["ts"]))
            break
    depths = [p.get("depth") for p in pages]
    if depths != sorted(depths):
        errors.append("pages are not in order of depth")
    seeded = set(p["url"] for p in pages if p.get("seed") and p.get("depth") == 0)
    if seeded != set(seeds) & want:
        errors.append("seeds at depth 0: %s, want %s" % (sorted(seeded)[:5], sorted(seeds)[:5]))
    # a ZipNum index, through the tool
    z2 = os.path.join(out, "zipnum.wacz")
    p = subprocess.run([e2e.CRAWLER, "wacz", out, "-o", z2, "--zipnum-lines", "50"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("crawler wacz --zipnum-lines exited %d: %s" % (p.returncode, p.stderr))
    check_package(z2, out, errors, zipnum=True)
    if errors:
        fail("; ".join(errors))
    size = os.path.getsize(pkg)
    shutil.rmtree(work, ignore_errors=True)
    print("wacz: %d pages with their titles, %d bytes; hashes, STORED entries, the index "
          "(plain and ZipNum) checked by independent readers" % (len(pages), size))


def run_index(out, want_rc=0):
    p = subprocess.run([e2e.CRAWLER, "index", out], capture_output=True, text=True, timeout=120)
    if p.returncode != want_rc:
        fail("crawler index %s exited %d (want %d): %s" % (out, p.returncode, want_rc, p.stderr))
    return p.stderr


def test_bad():
    work = tempfile.mkdtemp(prefix="archive-bad-")
    tw = e2e.TestWeb(work, ["--hosts", "6", "--pages", "20", "--ips", "2"])
    base = os.path.join(work, "base")
    try:
        run_crawl(tw, base, ["--set", "output.warc_max_mb=1"])
    finally:
        tw.stop()
    errors = []
    files = warcs_of(base)
    full = sorted(line for w in files for line in warcio_lines(os.path.join(base, w)))
    last = files[-1]

    # (1) the last WARC file cut inside its last record
    out = os.path.join(work, "cut")
    shutil.copytree(base, out)
    size = os.path.getsize(os.path.join(out, last))
    os.truncate(os.path.join(out, last), size - 40)
    err = run_index(out)
    m = re.search(re.escape(last) + r": offset (\d+): the file ends inside this record", err)
    if not m or "1 torn or wrong lines cut" not in err:
        errors.append("cut WARC: messages %r" % err)
    else:
        os.truncate(os.path.join(out, last), int(m.group(1)))
        check_index(out, files, errors, "index of a cut WARC")
        if len(index_lines(os.path.join(out, "index.cdxj"))) != len(full) - 1:
            errors.append("cut WARC: %d lines, want %d" %
                          (len(index_lines(os.path.join(out, "index.cdxj"))), len(full) - 1))

    # (2) a file's own index with a wrong line in the middle and a torn end
    out = os.path.join(work, "side")
    shutil.copytree(base, out)
    side = os.path.join(out, files[0][:-len(".warc.gz")] + ".cdxj")
    lines = index_lines(side)
    mid = len(lines) // 2
    lines[mid] = b"com,example)/ 20200101000000 {\"url\":\"garbage\"}\n"
    with open(side, "wb") as f:
        f.write(b"".join(lines) + lines[-1][:30])
    err = run_index(out)
    want_cut = len(lines) - mid + 1
    if ("%d torn or wrong lines cut" % want_cut) not in err or \
            ("%d lines made again" % (len(lines) - mid)) not in err:
        errors.append("wrong index lines: messages %r (want %d cut)" % (err, want_cut))
    check_same("a repaired own index", index_lines(side),
               warcio_lines(os.path.join(out, files[0])), errors)
    check_same("the index after repairs", index_lines(os.path.join(out, "index.cdxj")), full,
               errors)

    # (3) bytes that are no WARC, beside good files
    out = os.path.join(work, "junk")
    shutil.copytree(base, out)
    with open(os.path.join(out, "junk.warc.gz"), "wb") as f:
        f.write(b"this is not a WARC file\n" * 10)
    err = run_index(out)
    if "junk.warc.gz: offset 0: not a gzip member" not in err:
        errors.append("junk file: messages %r" % err)
    check_same("the index beside junk", index_lines(os.path.join(out, "index.cdxj")), full,
               errors)

    # (4) a folder a crawl holds: refused, nothing touched
    out = os.path.join(work, "held")
    shutil.copytree(base, out)
    os.remove(os.path.join(out, "index.cdxj"))
    fd = os.open(os.path.join(out, "crawl.lock"), os.O_RDWR | os.O_CREAT)
    os.write(fd, b"%d\n" % os.getpid())
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    err = run_index(out, want_rc=1)
    os.close(fd)
    if "is writing" not in err or os.path.exists(os.path.join(out, "index.cdxj")):
        errors.append("a held folder: %r" % err)
    if errors:
        fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("bad: a cut WARC, wrong and torn index lines, junk and a held folder handled")


def main():
    modes = {"cdxj": test_cdxj, "resume": test_resume, "wacz": test_wacz, "bad": test_bad}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        print("usage: archive_e2e.py %s" % "|".join(modes), file=sys.stderr)
        sys.exit(2)
    modes[sys.argv[1]]()


if __name__ == "__main__":
    main()
