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
  hostile_e2e.py ip-connections
      150 hosts on one address: the most TCP connections the test web saw
      open to it at once (idle keep-alive ones included) stays within
      [fetch] max_ip_connections (4 here) plus the one transfer in flight;
      with the cap off, the same crawl keeps one per host (the test's
      control), and stats.json counts the idle connections shut.
  hostile_e2e.py keepalive-close
      A host that reads a kept-alive connection's second request and
      closes it unanswered (testweb kaclose): libcurl's immediate re-send
      on a new connection is refused, the page is re-queued and fetched at
      the next visit; in the test web's log no two requests to the host
      are closer than the host delay, every page is answered, and
      stats.json counts errors.keepalive-closed.
  hostile_e2e.py traps
      A calendar trap (testweb trap) and a session-ID trap (testweb
      session: every page links a new ?sid= and the same with eleven more
      parameters), with no max_depth: the crawl ends by itself, each trap
      host gets at most [frontier] max_urls_per_host requests (60 here;
      default.conf must ship both trap rules on), stats.json counts
      frontier.rejected_budget and scope_rejected.too-many-params, no URL
      with more than max_query_params parameters is requested, and no two
      requests to a host are closer than the 20 ms host delay.
  hostile_e2e.py robots-undecodable
      Hosts whose robots.txt answers 200 with a body that cannot be
      decoded (Content-Encoding zstd, a corrupt gzip stream, utf-8; testweb
      robotszstd, robotsbadgzip, robotsutf8): robots.txt is unreachable
      (RFC 9309 2.3.1.4: disallow all, and ask again), so the test web sees
      no request of theirs but robots.txt, asked [politeness]
      robots_max_attempts times (3 here) before each host is retired;
      stats.json counts errors.robots-undecodable and hosts.robots_retired.
  hostile_e2e.py never-ends
      A host whose robots.txt answers 429 forever (testweb robots429), one
      whose robots.txt redirects to a name that does not resolve (robotsnx)
      and a seed whose host name has a 300-byte label: the crawl ends by
      itself well before --max-time; each robots.txt is asked
      robots_max_attempts times, nothing else of those hosts is requested,
      and the invalid name is refused once (errors.dns-invalid = 1), not
      retried.
  hostile_e2e.py userinfo
      One server under many names (testweb userinfo: the front page links
      /u0../u19 as http://uK@h1.../uK and a page through the name h1...
      with a final dot; robots.txt has a Crawl-delay): in the test web's
      log the host's robots.txt is fetched once, no two of its requests are
      closer than the Crawl-delay, no request carried an Authorization
      header (the test web answers those 401), and [frontier]
      max_urls_per_host counts the one host (stats.json
      frontier.rejected_budget).
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
ROBOTS_ATTEMPTS = 3  # [politeness] robots_max_attempts in the robots.txt fault crawls
MAX_TIME_S = 60
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


def robots_fault_crawl(prefix, faults, extra_seeds, extra):
    """A crawl of a 6-host test web whose hosts h1.. have the given
    robots.txt faults (MODE, ...), seeded with the front pages of h0 (a
    normal host) and of the fault hosts and with extra_seeds (formats of
    the port): (rows of the test web's log, stats, seconds, the fault
    hosts' names with their port)."""
    work = tempfile.mkdtemp(prefix=prefix)
    args = ["--hosts", "6", "--pages", "6", "--ips", "4"]
    for i, f in enumerate(faults):
        args += ["--fault", "h%d=%s" % (i + 1, f)]
    tw = TestWeb(work, args)
    try:
        base = "http://h%d.web.test:" + str(tw.http_port) + "/"
        seeds = [base % i for i in range(len(faults) + 1)]
        seeds += [s % tw.http_port for s in extra_seeds]
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--host-delay", "10", "--ip-delay", "0", "--max-time",
                                         str(MAX_TIME_S), "--domains", "web.test",
                                         "--set", "politeness.robots_max_attempts=%d" %
                                         ROBOTS_ATTEMPTS] + extra,
                               timeout=MAX_TIME_S + 40, seed_urls=seeds)
    finally:
        tw.stop()
    rows = tw.requests()
    shutil.rmtree(work, ignore_errors=True)
    hosts = ["h%d.web.test:%d" % (i + 1, tw.http_port) for i in range(len(faults))]
    return rows, stats, el, hosts


def robots_only(rows, hosts):
    """Problems: a fault host with a request but for /robots.txt, or not
    ROBOTS_ATTEMPTS robots.txt requests."""
    problems = []
    for h in hosts:
        paths = [r[5] for r in rows if r[2] == h]
        if set(paths) - {"/robots.txt"}:
            problems.append("%s: requested %s past its robots.txt" %
                            (h, sorted(set(paths) - {"/robots.txt"})))
        if paths.count("/robots.txt") != ROBOTS_ATTEMPTS:
            problems.append("%s: robots.txt requested %d times, want %d" %
                            (h, paths.count("/robots.txt"), ROBOTS_ATTEMPTS))
    return problems


def test_robots_undecodable():
    faults = ["robotszstd", "robotsbadgzip", "robotsutf8"]
    rows, stats, el, hosts = robots_fault_crawl("e2e-robots-dec-", faults, [], [])
    errors = stats.get("errors", {})
    print("undecodable robots.txt crawl: %.1f s, %d requests; errors %s; hosts %s" %
          (el, len(rows), errors, stats["hosts"]))
    problems = robots_only(rows, hosts)
    if errors.get("robots-undecodable") != ROBOTS_ATTEMPTS * len(faults):
        problems.append("errors.robots-undecodable = %s, want %d" %
                        (errors.get("robots-undecodable"), ROBOTS_ATTEMPTS * len(faults)))
    if errors.get("robots-unreachable"):
        problems.append("undecodable counted as robots-unreachable too (%s)" %
                        errors.get("robots-unreachable"))
    if stats["hosts"].get("robots_retired") != len(faults):
        problems.append("hosts.robots_retired = %s, want %d" %
                        (stats["hosts"].get("robots_retired"), len(faults)))
    h0 = [r for r in rows if r[2].startswith("h0.") and r[5] != "/robots.txt"]
    if not h0:
        problems.append("the normal host h0 was not crawled")
    if problems:
        fail("; ".join(problems))
    print("ok")


def test_never_ends():
    # h1's robots.txt answers 429 forever, h2's redirects to a name that
    # does not resolve; a seed's host has a 300-byte label
    label = "http://" + "a" * 300 + ".web.test:%d/"
    rows, stats, el, hosts = robots_fault_crawl("e2e-never-ends-", ["robots429", "robotsnx"],
                                                [label], [])
    errors = stats.get("errors", {})
    print("never-ending crawl: %.1f s (max-time %d s), %d requests; errors %s; hosts %s" %
          (el, MAX_TIME_S, len(rows), errors, stats["hosts"]))
    problems = robots_only(rows, hosts)
    if el > MAX_TIME_S / 3:
        problems.append("the crawl took %.1f s: it did not end by itself" % el)
    if stats["hosts"].get("robots_retired") != 2:
        problems.append("hosts.robots_retired = %s, want 2" % stats["hosts"].get("robots_retired"))
    if errors.get("robots-unreachable") != 2 * ROBOTS_ATTEMPTS:
        problems.append("errors.robots-unreachable = %s, want %d" %
                        (errors.get("robots-unreachable"), 2 * ROBOTS_ATTEMPTS))
    if errors.get("dns-invalid") != 1:
        problems.append("errors.dns-invalid = %s, want 1 (refused once, never retried)" %
                        errors.get("dns-invalid"))
    if not stats["hosts"].get("dns_failed"):
        problems.append("hosts.dns_failed = 0: the invalid name was not given up")
    if any(r[2].startswith("nx.") for r in rows):
        problems.append("a request reached the name that does not resolve")
    if problems:
        fail("; ".join(problems))
    print("ok")


def fault_pair_crawl(prefix, pages, faults, extra, max_time):
    """A crawl of hosts h1 and h2 of a 4-host test web with the given
    faults (h1=MODE, h2=MODE), seeded with their front pages:
    (work folder, output folder, stopped test web, stats, seconds)."""
    work = tempfile.mkdtemp(prefix=prefix)
    args = ["--hosts", "4", "--pages", str(pages), "--ips", "2"]
    for f in faults:
        args += ["--fault", f]
    tw = TestWeb(work, args)
    try:
        base = "http://h%d.web.test:" + str(tw.http_port) + "/"
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--ip-delay", "0", "--max-time", str(max_time),
                                         "--domains", "h1.web.test,h2.web.test"] + extra,
                               timeout=max_time + 30, seed_urls=[base % 1, base % 2])
    finally:
        tw.stop()
    return work, out, tw, stats, el


def test_warc_encodings():
    work, out, tw, stats, el = fault_pair_crawl("e2e-warc-enc-", 12, ["h1=chunked", "h2=br"],
                                                ["--host-delay", "0"], 60)
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


def short_gaps(rows, delay_ms):
    """Gaps (ms) between consecutive requests to one host, from the test
    web's log, shorter than delay_ms: {host: [gap, ...]}."""
    by_host = {}
    for r in rows:
        by_host.setdefault(r[2], []).append(r[0])
    out = {}
    for host, ts in by_host.items():
        gaps = [(b - a) / 1000.0 for a, b in zip(ts, ts[1:]) if (b - a) / 1000.0 < delay_ms - 1]
        if gaps:
            out[host] = gaps
    return out


def max_open(conns_file):
    """{address: most connections open at once} from the test web's
    --conns-file."""
    return dict((a, int(n)) for a, n in (line.split() for line in open(conns_file)))


def ip_crawl(cap):
    work = tempfile.mkdtemp(prefix="e2e-ipconn-")
    conns = os.path.join(work, "conns")
    tw = TestWeb(work, ["--hosts", "150", "--pages", "2", "--ips", "1"], ["--conns-file", conns])
    try:
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--host-delay", "200", "--ip-delay", "0", "--max-time", "60",
                                         "--set", "fetch.max_ip_connections=%d" % cap], timeout=100)
    finally:
        tw.stop()
    rows = tw.requests()
    peak = max_open(conns).get("127.0.1.1")
    print("cap %d: %.1f s, %d requests, %d hosts, at most %s connections open to 127.0.1.1, "
          "idle_connections_shut %s, errors %s" %
          (cap, el, len(rows), len(set(r[2] for r in rows)), peak,
           stats.get("idle_connections_shut"), stats.get("errors")))
    shutil.rmtree(work, ignore_errors=True)
    return peak, stats, rows


def test_ip_connections():
    cap = 4
    peak, stats, rows = ip_crawl(cap)
    free_peak, free_stats, free_rows = ip_crawl(0)
    problems = []
    if peak is None or peak > cap + 1:
        problems.append("%s connections open at once to one address, cap %d" % (peak, cap))
    if free_peak is None or free_peak <= 4 * cap:
        problems.append("control without a cap had only %s connections open: the test shows "
                        "nothing" % free_peak)
    if not stats.get("idle_connections_shut"):
        problems.append("stats.json idle_connections_shut = %s" % stats.get("idle_connections_shut"))
    if stats.get("errors") != free_stats.get("errors") or len(rows) != len(free_rows):
        problems.append("the cap changed the crawl: errors %s, %d requests; without it %s, %d" %
                        (stats.get("errors"), len(rows), free_stats.get("errors"), len(free_rows)))
    if len(set(r[2] for r in rows)) < 150:
        problems.append("only %d of 150 hosts crawled" % len(set(r[2] for r in rows)))
    if problems:
        fail("; ".join(problems))
    print("ok")


def test_keepalive_close():
    work = tempfile.mkdtemp(prefix="e2e-kaclose-")
    delay_ms = 200
    tw = TestWeb(work, ["--hosts", "3", "--pages", "4", "--ips", "2", "--fault", "h1=kaclose"])
    try:
        host = "h1.web.test:%d" % tw.http_port
        out = os.path.join(work, "out")
        stats, el, rss = crawl(tw, out, ["--host-delay", str(delay_ms), "--ip-delay", "0",
                                         "--max-time", "60", "--domains", "h1.web.test",
                                         "--set", "politeness.visit_budget_ms=5000"],
                               timeout=100, seed_urls=["http://%s/" % host])
    finally:
        tw.stop()
    rows = [r for r in tw.requests() if r[2] == host]
    gaps = [(b[0] - a[0]) / 1000.0 for a, b in zip(rows, rows[1:])]
    dropped = [r for r in rows if r[6] == 0]
    answered = set(r[5] for r in rows if r[6] != 0)
    errors = stats.get("errors", {})
    print("keep-alive close crawl: %.1f s, %d requests (%d closed unanswered), smallest gap %.1f ms; "
          "errors %s" % (el, len(rows), len(dropped), min(gaps) if gaps else -1, errors))
    problems = []
    if not dropped:
        problems.append("no request was closed unanswered: the fault did not happen")
    short = short_gaps(rows, delay_ms).get(host, [])
    if short:
        problems.append("%d gaps under the %d ms delay: %s" % (len(short), delay_ms, short[:5]))
    lost = set(r[5] for r in dropped) - answered
    if lost:
        problems.append("pages never answered: %s" % sorted(lost))
    if errors.get("keepalive-closed", 0) < len(dropped):
        problems.append("errors.keepalive-closed = %s for %d dropped" %
                        (errors.get("keepalive-closed"), len(dropped)))
    if problems:
        fail("; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def default_conf():
    """{key: value} of configs/default.conf (section names dropped)."""
    out = {}
    for line in open(os.path.join(SOURCE, "configs", "default.conf")):
        k, eq, v = line.partition("=")
        if eq and not line.startswith("#"):
            out[k.strip()] = v.strip()
    return out


def test_traps():
    budget = 60
    conf = default_conf()
    problems = []
    for k in ("max_urls_per_host", "max_query_params"):
        if int(conf.get(k, "0")) == 0:
            problems.append("default.conf: %s = %s, the trap rule is off by default" % (k, conf.get(k)))
    work, out, tw, stats, el = fault_pair_crawl(
        "e2e-traps-", 5, ["h1=trap", "h2=session"],
        ["--host-delay", "20", "--set", "frontier.max_urls_per_host=%d" % budget], 90)
    rows = tw.requests()
    per_host = {}
    for r in rows:
        if r[5] != "/robots.txt":
            per_host[r[2].split(".")[0]] = per_host.get(r[2].split(".")[0], 0) + 1
    cal = [r for r in rows if r[5].startswith("/cal/")]
    sess = [r for r in rows if r[5].startswith("/sess?")]
    many = [r[5] for r in rows if r[5].count("&") >= 10]
    rejected = stats["frontier"].get("rejected_budget")
    params = stats.get("scope_rejected", {}).get("too-many-params")
    print("traps crawl: %.1f s; requests per host %s; %d calendar, %d session pages; "
          "rejected_budget %s, too-many-params %s" % (el, per_host, len(cal), len(sess), rejected, params))
    if el > 60:
        problems.append("the crawl ran %.1f s: the traps did not end" % el)
    if not cal or not sess:
        problems.append("the traps were not entered (%d calendar, %d session pages)" % (len(cal), len(sess)))
    over = dict((h, n) for h, n in per_host.items() if n > budget)
    if over:
        problems.append("hosts past the %d-URL budget: %s" % (budget, over))
    if not rejected:
        problems.append("stats.json frontier.rejected_budget = %s" % rejected)
    if not params:
        problems.append("stats.json scope_rejected.too-many-params = %s" % params)
    if many:
        problems.append("URLs with over 10 parameters requested: %s" % many[:3])
    short = short_gaps(rows, 20)
    if short:
        problems.append("requests closer than the 20 ms host delay: %s" % short)
    if problems:
        fail("; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def test_userinfo():
    crawl_delay_ms = 400
    budget = 12
    work = tempfile.mkdtemp(prefix="e2e-userinfo-")
    tw = TestWeb(work, ["--hosts", "3", "--pages", "4", "--ips", "2", "--fault", "h1=userinfo",
                        "--crawl-delay", "%g" % (crawl_delay_ms / 1000.0)])
    try:
        host = "h1.web.test:%d" % tw.http_port
        out = os.path.join(work, "out")
        # any domain: h1.web.test. must not be off the domains for the
        # crawl to show whether it is a host of its own
        stats, el, rss = crawl(tw, out, ["--host-delay", "10", "--ip-delay", "0", "--max-time", "60",
                                         "--set", "crawl.any_domain=true",
                                         "--set", "politeness.crawl_delay_cap_ms=5000",
                                         "--set", "frontier.max_urls_per_host=%d" % budget],
                               timeout=100, seed_urls=["http://%s/" % host])
    finally:
        tw.stop()
    # every name of the one server: h1.web.test and h1.web.test. (final dot)
    rows = [r for r in tw.requests() if r[2].replace(".:", ":") == host]
    robots = [r for r in rows if r[5] == "/robots.txt"]
    pages = [r for r in rows if r[5] != "/robots.txt"]
    ui = [r[5] for r in pages if r[5].startswith("/u")]
    auth = [r[5] for r in rows if r[6] == 401]
    gaps = [(b[0] - a[0]) / 1000.0 for a, b in zip(rows, rows[1:])]
    rejected = stats["frontier"].get("rejected_budget")
    print("userinfo crawl: %.1f s; %d requests to the server (names %s), %d of robots.txt, "
          "%d pages (/uK: %s), %d answered 401; smallest gap %.1f ms; rejected_budget %s" %
          (el, len(rows), sorted(set(r[2] for r in rows)), len(robots), len(pages), ui, len(auth),
           min(gaps) if gaps else -1, rejected))
    problems = []
    if len(robots) != 1:
        problems.append("robots.txt fetched %d times, want once for the one server" % len(robots))
    if not ui:
        problems.append("no /uK page requested: the hostile links were not followed")
    if len(ui) != len(set(ui)):
        problems.append("a /uK page requested twice: %s" % ui)
    if auth:
        problems.append("%d requests carried an Authorization header: %s" % (len(auth), auth[:5]))
    short = [g for g in gaps if g < crawl_delay_ms - 1]
    if short:
        problems.append("%d gaps under the %d ms Crawl-delay: %s" % (len(short), crawl_delay_ms,
                                                                      short[:5]))
    if len(pages) > budget:
        problems.append("%d pages fetched, past the host's %d-URL budget" % (len(pages), budget))
    if not rejected:
        problems.append("stats.json frontier.rejected_budget = %s" % rejected)
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
    elif what == "ip-connections":
        test_ip_connections()
    elif what == "keepalive-close":
        test_keepalive_close()
    elif what == "traps":
        test_traps()
    elif what == "userinfo":
        test_userinfo()
    elif what == "robots-undecodable":
        test_robots_undecodable()
    elif what == "never-ends":
        test_never_ends()
    else:
        fail("usage: hostile_e2e.py redirects|robots-retry|warc-encodings|ip-connections|"
             "keepalive-close|traps|userinfo|robots-undecodable|never-ends")


if __name__ == "__main__":
    main()
