#!/usr/bin/env python3
"""The link mix and `testweb --expected` against an independent client.

A recursive GNU wget (robots on, spanning *.web.test, testweb as its HTTP
proxy so no resolver is touched) crawls a small test web; the set of
(URL, status) it requested, taken from testweb's request log, must equal
`testweb --expected --agent wget` up to differences explained here, each one
by a rule about wget that is checked, not assumed:

  fault     URL on a fault host (listed by --hosts-info); the expected set
            excludes fault hosts by definition.
  nxhost    URL on a host the test web does not have (nxJ.web.test): through
            a proxy wget never resolves names, a crawler gets NXDOMAIN.
  robots5xx URL on a host whose robots.txt answers 5xx: wget treats a failed
            robots.txt as allow-all, RFC 9309 (and --expected) as disallow-all.
  redirect  URL disallowed by robots.txt (checked with Python's
            urllib.robotparser on the served robots.txt) that is the Location
            of a 3xx response wget got: wget follows redirects without asking
            robots.txt.

Anything else, and any expected URL wget did not request, fails the test.
The seed is h0's front page; the generation seeds used (1, 4; override with
TESTWEB_WGET_SEEDS) give h0 a robots.txt that allows it: wget fetches
command-line URLs without asking robots.txt, so a seed whose h0 robots.txt is
5xx or disallows "/" for wget (seeds 7 and 9) makes the whole web an extra.
Usage: wget_check.py TESTWEB WGET
"""
import http.client
import os
import signal
import subprocess
import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.robotparser

AGENT = "wget"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def proxy_request(port, method, url):
    """One request through testweb as proxy (absolute-form target)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, url, headers={"User-Agent": "wget-check"})
    resp = conn.getresponse()
    body = resp.read()
    loc = resp.getheader("Location")
    conn.close()
    return resp.status, loc, body


def run_one(testweb, wget, seed, workdir):
    gen = ["--seed", str(seed), "--hosts", "11", "--pages", "20", "--ips", "3",
           "--fault", "h10=429", "--seed-hosts", "1", "--robots-agent", AGENT]
    ready = os.path.join(workdir, "ready")
    log = os.path.join(workdir, "log.tsv")
    srv = subprocess.Popen([testweb, "--http-port", "0", "--dns-port", "-1",
                            "--ready-file", ready, "--log", log] + gen)
    try:
        deadline = time.time() + 15
        while not os.path.exists(ready):
            if time.time() > deadline or srv.poll() is not None:
                fail("testweb did not become ready")
            time.sleep(0.02)
        info = dict(l.split("=", 1) for l in open(ready).read().split())
        port = int(info["http_port"])
        if int(info["dns_port"]) != -1:
            fail("dns_port should be -1 with --dns-port -1, got %s" % info["dns_port"])
        genp = gen + ["--http-port", str(port)]
        seeds = subprocess.run([testweb, "--seeds"] + genp, check=True,
                               capture_output=True, text=True).stdout.split()
        if seeds != ["http://h0.web.test:%d/" % port]:
            fail("unexpected seeds %r" % seeds)
        expected = set(subprocess.run([testweb, "--expected", "--agent", AGENT] + genp,
                                      check=True, capture_output=True,
                                      text=True).stdout.splitlines())
        hosts = {}
        for line in subprocess.run([testweb, "--hosts-info"] + genp, check=True,
                                   capture_output=True, text=True).stdout.splitlines():
            f = line.split("\t")
            hosts[f[0]] = {"ip": f[1], "robots": int(f[2]), "fault": f[6]}

        dl = os.path.join(workdir, "dl")
        cmd = [wget, "-r", "-l", "inf", "-H", "-D", "web.test", "-e", "robots=on",
               "--user-agent=" + AGENT, "-e", "use_proxy=on",
               "-e", "http_proxy=127.0.0.1:%d" % port, "--tries=1", "--timeout=10",
               "-P", dl, "-nv", "-o", os.path.join(workdir, "wget.log")] + seeds
        r = subprocess.run(cmd, timeout=150)
        if r.returncode not in (0, 8):  # 8 = some server error responses (404s)
            fail("wget exited %d" % r.returncode)

        # Lines wget requested (it only uses GET); the checks below use HEAD.
        got = set()
        statuses = {}
        srv.send_signal(signal.SIGTERM)
        if srv.wait(timeout=15) != 0:
            fail("testweb did not exit 0 on SIGTERM")
        srv = None
        for line in open(log):
            f = line.rstrip("\n").split("\t")
            if len(f) != 9 or f[8] != "-":  # 8 columns and cond: wget sends no validators
                fail("bad log line %r" % line)
            if not (f[0].isdigit() and f[1].isdigit() and f[6].isdigit() and f[7].isdigit()):
                fail("bad log numbers %r" % line)
            if f[3] != "127.0.0.1":
                fail("proxy requests should arrive on 127.0.0.1: %r" % line)
            if f[4] != "GET":
                fail("wget sent %s" % f[4])
            url = "http://%s:%d%s" % (f[2], port, f[5])
            got.add("%s\t%s" % (url, f[6]))
            statuses[url] = int(f[6])
    finally:
        if srv is not None:
            srv.kill()
            srv.wait()

    # Restart the same web on the same port to look up Locations and robots.txt
    # without polluting the log we judged.
    srv = subprocess.Popen([testweb, "--http-port", str(port), "--dns-port", "-1",
                            "--ready-file", ready + "2"] + gen)
    try:
        deadline = time.time() + 15
        while not os.path.exists(ready + "2"):
            if time.time() > deadline or srv.poll() is not None:
                fail("testweb restart failed")
            time.sleep(0.02)
        redirect_targets = set()
        for url, st in statuses.items():
            if st in (301, 302):
                s2, loc, _ = proxy_request(port, "HEAD", url)
                if s2 != st or loc is None:
                    fail("%s: status %d then %d, Location %r" % (url, st, s2, loc))
                target = urllib.parse.urljoin(url, loc)
                p = urllib.parse.urlsplit(target)
                redirect_targets.add(urllib.parse.urlunsplit(
                    (p.scheme, p.netloc.lower(), p.path, p.query, "")))
        robots = {}

        def allowed(url):
            host = urllib.parse.urlsplit(url).hostname
            if host not in robots:
                st, _, body = proxy_request(port, "GET", "http://%s:%d/robots.txt" % (host, port))
                rp = urllib.robotparser.RobotFileParser()
                if st == 200:
                    rp.parse(body.decode().splitlines())
                elif 400 <= st < 500:
                    rp.allow_all = True
                else:
                    rp.disallow_all = True
                robots[host] = rp
            return robots[host].can_fetch(AGENT, url)

        # Independent robots check of the expected set itself.
        for line in expected:
            url = line.split("\t")[0]
            if not url.endswith("/robots.txt") and not allowed(url):
                fail("--expected lists %s, which robots.txt disallows for %s" % (url, AGENT))

        unexplained = []
        why = {}
        for line in sorted(got - expected):
            url = line.split("\t")[0]
            host = urllib.parse.urlsplit(url).hostname
            h = hosts.get(host)
            if h is None:
                reason = "nxhost"
            elif h["fault"] != "-":
                reason = "fault"
            elif h["robots"] >= 500:
                reason = "robots5xx"
            elif url in redirect_targets and not allowed(url):
                reason = "redirect"
            else:
                reason = None
            if reason is None:
                unexplained.append(line)
            else:
                why[reason] = why.get(reason, 0) + 1
        missing = sorted(expected - got)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=15)

    print("seed %d: expected %d, wget requested %d, explained extras %r"
          % (seed, len(expected), len(got), why))
    if missing:
        fail("expected but not requested by wget:\n  " + "\n  ".join(missing[:50]))
    if unexplained:
        fail("requested by wget, not expected, unexplained:\n  " + "\n  ".join(unexplained[:50]))
    # The web must exercise what the test is about.
    stat_seen = {int(l.split("\t")[1]) for l in expected}
    for st in (200, 301, 302, 404):
        if st not in stat_seen:
            fail("expected set has no status %d" % st)
    kinds = [u for u in expected if "/img/" in u or "/doc/" in u or "?q=" in u]
    if len(expected) < 300 or not kinds:
        fail("expected set too small or lacks resources/queries (%d)" % len(expected))
    for reason in ("fault", "nxhost", "redirect"):
        if reason not in why:
            fail("no %s difference seen: the web no longer exercises it" % reason)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    testweb, wget = sys.argv[1], sys.argv[2]
    if shutil.which(wget) is None:
        print("FAIL: %s not found: run crawler/install-deps.sh as root" % wget, file=sys.stderr)
        sys.exit(1)
    seeds = [int(x) for x in os.environ.get("TESTWEB_WGET_SEEDS", "1 4").split()]
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="testweb_wget_") as d:
            run_one(testweb, wget, seed, d)
    print("PASS")


if __name__ == "__main__":
    main()
