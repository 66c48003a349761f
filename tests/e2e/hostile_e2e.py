#!/usr/bin/env python3
"""End-to-end crawls of hostile servers on the local test web, judged from
the test web's own request log (helpers from crawl_e2e.py).

  hostile_e2e.py redirects
      One crawl, three hostile behaviours (issue 21):
      - an endless redirect chain (/inf/N -> /inf/N+1) stops after
        [fetch] max_redirects redirects (set to 7 here): /inf/0../inf/7 are
        requested once each, nothing further, and stats.json counts the
        stop once as errors.redirect-limit;
      - a host whose /robots.txt redirects five times across hosts to a
        'Disallow: /' (testweb fault robotsredir): the whole chain is
        requested and no path of that host but /robots.txt is;
      - one whose chain has six (robotsredir6): five are followed, the
        sixth is not (errors.robots-redirect-limit), robots.txt is then
        unavailable (RFC 9309 2.3.1.2: allow all) and its pages are fetched;
      - a status outside every class (999) is counted as status.other.
  hostile_e2e.py robots-retry
      A host whose robots.txt answers 503 twice, then allows all (testweb
      fault robotsflaky): its queued URLs are kept, not dropped as
      disallowed; robots.txt is asked again at the next visits, and the
      pages are fetched after it answered, none before.
  hostile_e2e.py warc-encodings
      A crawl of a host answering every response chunked (gzip-encoded
      when the page is in the gzip share) and one answering in brotli (half
      of it chunked): every record reads back with the strict reader
      tests/crawler/warc_check.py (HTTP message framed as its headers say,
      de-chunked where it says chunked, Content-Length equal to the body,
      both digests), with chunked, gzip and br responses among them.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crawl_e2e import SOURCE, TestWeb, crawl, fail  # noqa: E402

WARC_CHECK = os.path.join(SOURCE, "tests", "crawler", "warc_check.py")

MAX_REDIRECTS = 7
ROBOTS_CHAIN = 5  # /rr/4 .. /rr/0 after the first 301


def test_redirects():
    work = tempfile.mkdtemp(prefix="e2e-hostile-")
    # h1 serves the robots.txt redirect chain: h1/robots.txt -> h2/rr/4 ->
    # h3/rr/3 -> h4/rr/2 -> h5/rr/1 -> h6/rr/0 ('Disallow: /'). h0 (robots
    # kind 1 with the default seed: only /private/ disallowed) serves the
    # endless chain and the odd status.
    # h8 serves the six-redirect chain h9/rr/5 .. h14/rr/0.
    tw = TestWeb(work, ["--hosts", "15", "--pages", "10", "--ips", "4", "--fault", "h1=robotsredir",
                        "--fault", "h8=robotsredir6"])
    try:
        base = "http://h%d.web.test:" + str(tw.http_port)
        seeds = [(base % 0) + "/inf/0", (base % 0) + "/status/999", (base % 1) + "/",
                 (base % 1) + "/s1/p1.html", (base % 8) + "/"]
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--host-delay", "10", "--ip-delay", "0", "--max-time", "60",
                                         "--max-depth", "0", "--domains", "h0.web.test,h1.web.test,h8.web.test",
                                         "--set", "fetch.max_redirects=%d" % MAX_REDIRECTS],
                               timeout=100, seed_urls=seeds)
    finally:
        tw.stop()
    rows = tw.requests()
    errors = stats.get("errors", {})
    port = ":%d" % tw.http_port
    inf = sorted(int(r[5].split("/")[2]) for r in rows
                 if r[2] == "h0.web.test" + port and r[5].startswith("/inf/"))
    h1 = [r[5] for r in rows if r[2] == "h1.web.test" + port]
    h8 = [r[5] for r in rows if r[2] == "h8.web.test" + port]
    chain = [(r[2].split(".")[0], r[5]) for r in rows if r[5].startswith("/rr/")]
    print("hostile crawl: %.1f s, %d requests; /inf/ requested %s; h1 paths %s; robots chain %s; "
          "errors %s; status %s" % (el, len(rows), inf, h1, chain, errors, stats.get("status")))
    problems = []
    if inf != list(range(MAX_REDIRECTS + 1)):
        problems.append("endless chain: /inf/N requested for N in %s, want 0..%d once each" %
                        (inf, MAX_REDIRECTS))
    if errors.get("redirect-limit") != 1:
        problems.append("errors.redirect-limit = %s, want 1" % errors.get("redirect-limit"))
    # h8's chain: the fifth redirect (h13/rr/1 -> h14/rr/0) is not followed
    want_chain = ([("h%d" % (2 + k), "/rr/%d" % (4 - k)) for k in range(ROBOTS_CHAIN)] +
                  [("h%d" % (9 + k), "/rr/%d" % (5 - k)) for k in range(ROBOTS_CHAIN)])
    if sorted(set(chain)) != sorted(want_chain):
        problems.append("robots.txt chain requested %s, want %s" % (chain, want_chain))
    if h1 and set(h1) != {"/robots.txt"}:
        problems.append("disallowed paths of h1 fetched: %s" % sorted(set(h1) - {"/robots.txt"}))
    if "/robots.txt" not in h1:
        problems.append("h1/robots.txt never requested")
    if errors.get("robots-redirect-limit") != 1:
        problems.append("errors.robots-redirect-limit = %s, want 1 (h8's chain of 6)" %
                        errors.get("robots-redirect-limit"))
    if not set(h8) - {"/robots.txt"}:
        problems.append("h8 (robots.txt unavailable after 5 redirects: allow all) not crawled: %s" % h8)
    if stats.get("status", {}).get("other") != 1:
        problems.append("status 999 not counted as status.other (status %s)" % stats.get("status"))
    if problems:
        fail("; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def test_robots_retry():
    work = tempfile.mkdtemp(prefix="e2e-robots-retry-")
    tw = TestWeb(work, ["--hosts", "4", "--pages", "10", "--ips", "4", "--fault", "h1=robotsflaky"])
    try:
        host = "h1.web.test:%d" % tw.http_port
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--host-delay", "10", "--ip-delay", "0", "--max-time", "60",
                                         "--domains", "h1.web.test"],
                               timeout=100, seed_urls=["http://%s/" % host])
    finally:
        tw.stop()
    rows = [r for r in tw.requests() if r[2] == host]
    robots = [(r[0], r[6]) for r in rows if r[5] == "/robots.txt"]
    pages = [r for r in rows if r[5] != "/robots.txt"]
    errors = stats.get("errors", {})
    print("robots retry crawl: %.1f s; robots.txt statuses %s; %d pages; errors %s; dropped %s" %
          (el, [st for _, st in robots], len(pages), errors, stats["hosts"]["dropped_urls"]))
    problems = []
    if [st for _, st in robots] != [503, 503, 200]:
        problems.append("robots.txt answered %s, want 503, 503, 200" % [st for _, st in robots])
    if len(pages) < 5:
        problems.append("only %d pages of the host fetched" % len(pages))
    ok_at = [t for t, st in robots if st == 200]
    early = [r[5] for r in pages if not ok_at or r[0] < ok_at[0]]
    if early:
        problems.append("pages fetched before robots.txt answered: %s" % early)
    if errors.get("robots-unreachable") != 2:
        problems.append("errors.robots-unreachable = %s, want 2" % errors.get("robots-unreachable"))
    if errors.get("robots-disallowed") or stats["hosts"]["dropped_urls"]:
        problems.append("URLs dropped: %s disallowed, %s with retired hosts" %
                        (errors.get("robots-disallowed"), stats["hosts"]["dropped_urls"]))
    if problems:
        fail("; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def test_warc_encodings():
    work = tempfile.mkdtemp(prefix="e2e-warc-enc-")
    tw = TestWeb(work, ["--hosts", "4", "--pages", "12", "--ips", "2", "--fault", "h1=chunked",
                        "--fault", "h2=br"])
    try:
        base = "http://h%d.web.test:" + str(tw.http_port) + "/"
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--host-delay", "0", "--ip-delay", "0", "--max-time", "60",
                                         "--domains", "h1.web.test,h2.web.test"],
                               timeout=100, seed_urls=[base % 1, base % 2])
    finally:
        tw.stop()
    rows = tw.requests()
    p = subprocess.run([sys.executable, WARC_CHECK, out], capture_output=True, text=True)
    print("warc encodings crawl: %.1f s, %d requests; reader: %s" %
          (el, len(rows), (p.stdout + p.stderr).strip()))
    if p.returncode != 0:
        fail("the strict reader rejects the WARC: %s" % (p.stdout + p.stderr).strip())
    counts = dict(kv.split("=") for kv in p.stdout.split())
    problems = []
    if int(counts["response"]) + int(counts["revisit"]) != len(rows):
        problems.append("%s responses + %s revisits for %d requests" %
                        (counts["response"], counts["revisit"], len(rows)))
    for k in ("x-transfer-encoding", "gzip", "br"):
        if int(counts[k]) == 0:
            problems.append("no %s response among the records" % k)
    if problems:
        fail("; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "redirects":
        test_redirects()
    elif what == "robots-retry":
        test_robots_retry()
    elif what == "warc-encodings":
        test_warc_encodings()
    else:
        fail("usage: hostile_e2e.py redirects|robots-retry|warc-encodings")


if __name__ == "__main__":
    main()
