#!/usr/bin/env python3
"""Recrawls against an earlier crawl (crawler crawl --previous DIR), end to
end on the local test web, judged from ITS request logs (the `cond` column:
the conditional headers a request carried; the status it was answered) and
from the WARC files read back by an independent reader (Python's zlib).

  recrawl_e2e.py recrawl    crawl 1 of the web at epoch 0; crawl 2 at epoch
                            1 (--change-pct 10) against crawl 1, named by its
                            index.cdxj (its history beside it is read); crawl
                            3 at epoch 2 against crawls 1 and 2 (--previous
                            twice: crawl 2's capture of a URL wins, so a page
                            changed at epoch 1 only is answered 304). Crawl 4
                            at epoch 1 against a copy of crawl 1 holding its
                            index.cdxj and WARC files but no history: no
                            conditional request, the same URLs, the changed
                            pages stored whole, every other one as an
                            identical-payload-digest revisit naming crawl 1's
                            record (read back in the copy). Crawls 2 and 3 ask for
                            the same URLs as crawl 1; every page crawl 1 got
                            a 200 for is asked for with If-None-Match and
                            If-Modified-Since; the pages the test web changed
                            (testweb --changed) are answered 200 and stored
                            whole, every other one 304 and stored as a
                            server-not-modified revisit naming the record
                            that holds its payload (its id, URI, date and
                            digest, read back where WARC-Refers-To-Container
                            says): crawl 3's revisits of pages unchanged
                            since epoch 0 name crawl 1's records (history
                            carried on)
  recrawl_e2e.py discovery  crawl 1 with --max-depth 1 (part of the web);
                            crawl 2 of the unchanged web against it: every
                            page it knew is answered 304, and still the
                            whole web is reached (the links of a 304 page
                            come from its earlier record)
  recrawl_e2e.py bad        an earlier folder with torn and garbage history
                            lines (skipped, counted, the crawl goes on with
                            the good ones), a folder without history, an
                            index without a usable line, a missing one, the
                            crawl's own: clear errors

Environment: CRAWLER_BUILD, CRAWLER_SOURCE (as crawl_e2e.py), E2E_HOSTS,
E2E_PAGES (defaults 6 x 20).
"""
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import crawl_e2e as e2e  # noqa: E402

NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def fail(msg):
    e2e.fail(msg)


def gen():
    return ["--hosts", os.environ.get("E2E_HOSTS", "6"), "--pages", os.environ.get("E2E_PAGES", "20"),
            "--ips", "2"]


class Web:
    """The test web at successive epochs, on one port (URLs embed it)."""

    def __init__(self, work):
        self.work = work
        self.port = None
        self.n = 0

    def crawl(self, epoch, extra, change_pct=10, name=None):
        """Serves the web at epoch, crawls it into work/NAME; returns
        (out, log rows with their cond column, crawler stats)."""
        self.n += 1
        name = name or "c%d" % self.n
        d = os.path.join(self.work, name + "-web")
        os.makedirs(d)
        serve = ["--epoch", str(epoch), "--change-pct", str(change_pct)]
        if self.port:
            serve += ["--http-port", str(self.port)]
        tw = e2e.TestWeb(d, gen(), serve)
        self.port = tw.http_port
        self.tw = tw
        out = os.path.join(self.work, name)
        try:
            stats, _, _ = e2e.crawl(tw, out, extra, timeout=200,
                                    seed_urls=tw.run_mode("--seeds"))
        finally:
            tw.stop()
        rows = []
        for f in tw.log_fields():
            rows.append({"url": "http://%s%s" % (f[2], f[5]), "status": int(f[6]), "cond": f[-1]})
        return out, rows, stats

    def mode(self, *args):
        return self.tw.run_mode(*args)


def pages_200(rows):
    return {r["url"] for r in rows if r["status"] == 200 and not r["url"].endswith("/robots.txt")}


def records(out):
    """Every record of a crawl's WARC files: (path, offset, headers)."""
    for path in sorted(glob.glob(os.path.join(out, "*.warc.gz"))):
        raw = open(path, "rb").read()
        pos = 0
        while pos < len(raw):
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = d.decompress(raw[pos:]) + d.flush()
            head = data.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace").split("\r\n")[1:]
            h = {}
            for line in head:
                k, _, v = line.partition(":")
                h[k.strip().lower()] = v.strip()
            blk = data.split(b"\r\n\r\n", 1)[1]
            m = re.match(rb"HTTP/\S+ (\d{3})", blk)
            h["_status"] = int(m.group(1)) if m else 0
            yield path, pos, h
            pos = len(raw) - len(d.unused_data)


def record_at(path, offset):
    raw = open(path, "rb").read()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = d.decompress(raw[offset:]) + d.flush()
    head = data.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head)}


def check_requests(tag, rows, before, changed):
    """The recrawl's requests against the earlier crawl's 200 pages."""
    errors = []
    asked = collections.Counter(r["url"] for r in rows)
    for r in rows:
        if r["url"] in before and r["cond"] != "inm,ims":
            errors.append("%s: %s asked without both validators (cond %s)" % (tag, r["url"], r["cond"]))
        if r["url"] in before and r["status"] != (200 if r["url"] in changed else 304):
            errors.append("%s: %s answered %d (changed: %s)" % (tag, r["url"], r["status"],
                                                                r["url"] in changed))
    missing = sorted(before - set(asked))
    if missing:
        errors.append("%s: %d pages of the earlier crawl not asked for, e.g. %s" %
                      (tag, len(missing), missing[:3]))
    dups = [u for u, n in asked.items() if n > 1]
    if dups:
        errors.append("%s: asked more than once: %s" % (tag, dups[:3]))
    return errors[:10]


def check_warc(tag, out, rows, changed, own_origin, before=None):
    """304s as server-not-modified revisits naming their payload's record;
    changed pages as responses. own_origin(url) -> the crawl folder whose
    record a revisit of url must name. With before (the earlier crawl's
    pages, asked for without validators): its unchanged pages answered 200
    as identical-payload-digest revisits instead."""
    errors = []
    status, profile = (304, NOT_MODIFIED) if before is None else (200, IDENTICAL)
    want = {r["url"] for r in rows if r["status"] == status}
    if before is not None:
        want = (want & before) - changed
    revisits, responses = {}, set()
    for path, off, h in records(out):
        uri = h.get("warc-target-uri")
        if h.get("warc-type") == "revisit" and h["_status"] == status and \
                (before is None or uri in before):
            revisits[uri] = h
        elif h.get("warc-type") == "response" and h["_status"] == 200:
            responses.add(uri)
    if set(revisits) != want:
        errors.append("%s: %d revisits wanted, %d written (e.g. %s)" %
                      (tag, len(want), len(revisits), sorted(want ^ set(revisits))[:3]))
    for url in changed:
        if url not in responses:
            errors.append("%s: changed page %s not stored as a response" % (tag, url))
    for uri, h in sorted(revisits.items()):
        if h.get("warc-profile") != profile:
            errors.append("%s: %s: profile %s" % (tag, uri, h.get("warc-profile")))
            continue
        m = re.match(r"warcfile:(.+)#(\d+)$", h.get("warc-refers-to-container", ""))
        if not m:
            errors.append("%s: %s: container %r" % (tag, uri, h.get("warc-refers-to-container")))
            continue
        path = m.group(1)
        if not os.path.isabs(path):
            path = os.path.join(out, path)
        if os.path.dirname(os.path.realpath(path)) != os.path.realpath(own_origin(uri)):
            errors.append("%s: %s names a record in %s, not in %s" % (tag, uri, path, own_origin(uri)))
        orig = record_at(path, int(m.group(2)))
        want = {"warc-type": "response", "warc-record-id": h.get("warc-refers-to"),
                "warc-target-uri": h.get("warc-refers-to-target-uri"),
                "warc-date": h.get("warc-refers-to-date"),
                "warc-payload-digest": h.get("warc-payload-digest")}
        bad = {k: (orig.get(k), v) for k, v in want.items() if orig.get(k) != v}
        if bad or orig.get("warc-target-uri") != uri:
            errors.append("%s: %s: the record it names differs: %s" % (tag, uri, bad))
    return errors[:10]


def test_recrawl():
    work = tempfile.mkdtemp(prefix="recrawl-")
    web = Web(work)
    out1, rows1, _ = web.crawl(0, [])
    base = pages_200(rows1)
    out2, rows2, st2 = web.crawl(1, ["--previous", os.path.join(out1, "index.cdxj")])
    ch1 = set(web.mode("--changed", "--epoch", "1", "--change-pct", "10"))
    out3, rows3, st3 = web.crawl(2, ["--previous", out1, "--previous", out2])
    ch2 = set(web.mode("--changed", "--epoch", "2", "--since", "1", "--change-pct", "10"))
    ch02 = set(web.mode("--changed", "--epoch", "2", "--since", "0", "--change-pct", "10"))
    if not ch1 or not ch2 or len(ch1) == len(base):
        fail("the test web changed %d then %d of %d pages: no test" % (len(ch1), len(ch2), len(base)))
    errors = []
    urls1 = {r["url"] for r in rows1}
    for tag, rows in (("crawl 2", rows2), ("crawl 3", rows3)):
        got = {r["url"] for r in rows}
        if got != urls1:
            errors.append("%s asked for other URLs than crawl 1: %s" % (tag, sorted(got ^ urls1)[:5]))
    errors += check_requests("crawl 2", rows2, base, ch1)
    errors += check_requests("crawl 3", rows3, base, ch2)
    errors += check_warc("crawl 2", out2, rows2, ch1, lambda u: out1)
    # unchanged since epoch 0: crawl 1's record; changed at epoch 1 only: crawl 2's
    errors += check_warc("crawl 3", out3, rows3, ch2, lambda u: out1 if u not in ch02 else out2)
    if st2.get("recrawl", {}).get("indexes_read_as_history") != 1:
        errors.append("crawl 2: index.cdxj not read as the history beside it: %s" % st2.get("recrawl"))
    errors += check_index_only(web, out1, rows1, base, ch1)
    print("pages %d; crawl 2: %d changed, %d not modified, stats recrawl %s; crawl 3: %d changed, "
          "%d not modified; WARC bytes %d / %d / %d" %
          (len(base), len(ch1), len(base) - len(ch1), st2.get("recrawl"), len(ch2),
           len(base) - len(ch2), *(sum(os.path.getsize(p) for p in glob.glob(o + "/*.warc.gz"))
                                    for o in (out1, out2, out3))))
    if errors:
        fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def check_index_only(web, out1, rows1, base, changed):
    """Crawl 4: against a copy of crawl 1 holding only its index.cdxj and
    WARC files (hard links): no validators to send, the same URLs asked
    for, unchanged pages stored as identical-payload-digest revisits of
    the records the index names."""
    copy = os.path.join(web.work, "c1-index")
    os.makedirs(copy)
    for f in glob.glob(os.path.join(out1, "*.warc.gz")) + [os.path.join(out1, "index.cdxj")]:
        os.link(f, os.path.join(copy, os.path.basename(f)))
    out4, rows4, st4 = web.crawl(1, ["--previous", os.path.join(copy, "index.cdxj")], name="c4")
    errors = []
    got = {r["url"] for r in rows4}
    urls1 = {r["url"] for r in rows1}
    if got != urls1:
        errors.append("crawl 4 asked for other URLs than crawl 1: %s" % sorted(got ^ urls1)[:5])
    for r in rows4:
        if r["cond"] != "-" or (r["url"] in base and r["status"] != 200):
            errors.append("crawl 4: %s asked with %s, answered %d" % (r["url"], r["cond"], r["status"]))
    rec = st4.get("recrawl", {})
    if rec.get("indexes") != 1 or rec.get("history_pages") != len(base) or rec.get("conditional") \
            or rec.get("index_records_unreadable") != 0:
        errors.append("crawl 4: recrawl stats %s, want 1 index of %d pages" % (rec, len(base)))
    errors += check_warc("crawl 4", out4, rows4, changed, lambda u: copy, before=base)
    print("crawl 4 (index only): %d URLs, recrawl %s" % (len(got), rec))
    return errors[:10]


def test_discovery():
    work = tempfile.mkdtemp(prefix="recrawl-disc-")
    web = Web(work)
    out1, rows1, _ = web.crawl(0, ["--max-depth", "1"])
    expected = {line.split("\t")[0] for line in web.mode("--expected", "--agent", e2e.AGENT)}
    part = pages_200(rows1)
    out2, rows2, st2 = web.crawl(0, ["--previous", out1])
    got = {r["url"] for r in rows2}
    errors = []
    if len({u for u in expected if not u.endswith("/robots.txt")} - part) < len(expected) // 3:
        errors.append("crawl 1 reached %d of %d URLs: too many for a test" % (len(part), len(expected)))
    front = {u for u in part if re.match(r"http://[^/]+/$", u)}
    for r in rows2:
        if r["url"] in part and r["status"] != 304:
            errors.append("%s answered %d, not 304" % (r["url"], r["status"]))
    if not front:
        errors.append("no front page in crawl 1")
    missing = sorted(expected - got)
    if missing:
        errors.append("%d URLs of the web not reached past the 304s, e.g. %s" %
                      (len(missing), missing[:5]))
    print("web %d URLs; crawl 1 (depth 1) %d pages; crawl 2: %d URLs, %d answered 304, "
          "recrawl %s" % (len(expected), len(part), len(got),
                          sum(1 for r in rows2 if r["status"] == 304), st2.get("recrawl")))
    if errors:
        fail("; ".join(errors[:10]))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def run_crawler(args):
    return subprocess.run([e2e.CRAWLER, "crawl"] + args + ["--quiet"], capture_output=True,
                          text=True, timeout=120)


def test_bad():
    work = tempfile.mkdtemp(prefix="recrawl-bad-")
    web = Web(work)
    out1, rows1, _ = web.crawl(0, [])
    base = pages_200(rows1)
    hist = sorted(glob.glob(os.path.join(out1, "*.history")))
    lines = open(hist[0], "rb").read().splitlines(keepends=True)
    # three lines broken: a garbage one, one whose URL does not match its
    # signature, and a torn last line (a crash while it was written)
    broken = {lines[0].split(b"\t")[-1].strip().decode(), lines[1].split(b"\t")[-1].strip().decode()}
    lines[0] = b"no history line\n"
    f = lines[1].split(b"\t")
    f[-1] = f[-1].rstrip(b"\n") + b"x\n"
    lines[1] = b"\t".join(f)
    torn = lines[-1].split(b"\t")[-1].strip().decode()
    lines[-1] = lines[-1][:len(lines[-1]) // 2]
    open(hist[0], "wb").write(b"".join(lines))
    broken.add(torn)
    out2, rows2, st2 = web.crawl(0, ["--previous", out1])
    errors = []
    rec = st2.get("recrawl", {})
    for r in rows2:
        url = r["url"]
        if url in base and url not in broken and r["cond"] != "inm,ims":
            errors.append("%s asked unconditionally" % url)
        if url in broken and r["cond"] != "-":
            errors.append("%s (a broken history line) asked conditionally" % url)
    if rec.get("conditional") != len(base) - len(broken):
        errors.append("conditional %s, want %d" % (rec.get("conditional"), len(base) - len(broken)))
    if rec.get("history_lines_skipped") != len(broken):
        errors.append("history_lines_skipped %s, want %d" % (rec.get("history_lines_skipped"),
                                                             len(broken)))
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    seed = "http://h0.web.test:%d/" % web.port
    fresh = os.path.join(work, "o")
    junk = os.path.join(work, "junk")
    os.makedirs(junk)
    with open(os.path.join(junk, "index.cdxj"), "w") as f:
        f.write("garbage\ncom,x)/ 2026 {\"url\":\n")
    for args, want in (([seed, "-o", fresh, "--previous", empty], "no history"),
                       ([seed, "-o", fresh, "--previous", out1, "--previous", junk], "no capture"),
                       ([seed, "-o", fresh, "--previous", out1 + "," + empty], "without ','"),
                       ([seed, "-o", fresh, "--previous", os.path.join(work, "missing")],
                        "No such file"),
                       (["-o", out2, "--resume", "--previous", out2], "own folder")):
        p = run_crawler(args)
        if p.returncode == 0 or want not in p.stderr:
            errors.append("%s: exit %d, stderr %r (want %r)" % (args, p.returncode, p.stderr[-300:], want))
    print("broken lines %d; crawl 2: recrawl %s" % (len(broken), rec))
    if errors:
        fail("; ".join(errors[:10]))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "recrawl"
    {"recrawl": test_recrawl, "discovery": test_discovery, "bad": test_bad}[mode]()


if __name__ == "__main__":
    main()
