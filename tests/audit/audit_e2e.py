#!/usr/bin/env python3
"""End-to-end test of `crawler audit`: crawl a small local test web
(tests/testweb) with a 200 ms host delay and IP politeness off, audit the
output folder, and judge the audit against the test web's own request log
(the neutral witness, as tests/e2e/crawl_e2e.py does).

Checks:
  - per host, the audit's request count and IP equal the test web's;
  - per host, the audit's minimum gap agrees with the test web's. The two
    logs see different instants: the test web stamps a request when it has
    parsed it (microseconds), the crawler logs the end of a transfer and its
    duration (milliseconds, truncated), so the client's gap (its end of one
    request to its start of the next) is the server's start-to-start
    interval minus the first response's time on the wire and in the
    crawler's loop, minus the next request's connect and send time. On
    loopback with small pages that is well under a millisecond unless the
    machine is loaded, so: audit_min <= server_min + 2 ms (truncation can
    add up to 2 ms to an estimated gap), and server_min - audit_min <=
    SLACK_MS (5 ms; 25 ms under sanitizers, where the loop is 3-10x slower);
  - no violation is reported (the crawler is polite; the crawl e2e tests
    prove it from the test web's side), and every server-side gap is >= the
    host delay minus 1 ms, so the crawl was polite by the witness too;
  - the JSON holds the documented fields; the HTML parses with
    html.parser, holds an <svg> per plot and no reference to the network
    (no src/href/xlink to http(s):// or //, no script, no external style).

Environment: CRAWLER_BUILD (build dir), CRAWLER_SOURCE (source dir),
AUDIT_SLACK_MS (tolerance override).
"""
import collections
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("CRAWLER_BUILD", ".")
SOURCE = os.environ.get("CRAWLER_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
CRAWLER = os.path.join(BUILD, "crawler", "crawler")
TESTWEB = os.path.join(BUILD, "tests", "testweb", "testweb")
HOSTS, PAGES = 6, 8
HOST_DELAY_MS = 200
SLACK_MS = int(os.environ.get("AUDIT_SLACK_MS", "5"))


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def start_testweb(work, gen):
    ready = os.path.join(work, "ready")
    log = os.path.join(work, "testweb.log")
    proc = subprocess.Popen([TESTWEB] + gen + ["--ready-file", ready, "--log", log],
                            stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "testweb.err"), "w"))
    deadline = time.time() + 20
    while not os.path.exists(ready):
        if time.time() > deadline or proc.poll() is not None:
            fail("testweb did not start")
        time.sleep(0.05)
    kv = dict(line.split("=", 1) for line in open(ready).read().split())
    return proc, log, int(kv["http_port"]), int(kv["dns_port"])


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_view(log, port):
    """Per host:port, the request count, the minimum start-to-start
    interval (ms, float) and the server IPs, from the test web's log."""
    times = collections.defaultdict(list)
    ips = collections.defaultdict(set)
    for line in open(log):
        f = line.rstrip("\n").split("\t")
        if len(f) < 8 or not f[0].isdigit():
            continue
        host = f[2].lower()
        if ":" not in host:
            host += ":%d" % port
        times[host].append(int(f[0]))
        ips[host].add(f[3])
    out = {}
    for host, ts in times.items():
        ts.sort()
        gaps = [(b - a) / 1000.0 for a, b in zip(ts, ts[1:])]
        out[host] = (len(ts), min(gaps) if gaps else None, ips[host])
    return out


class PageCheck(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs = 0
        self.bad = []
        self.stack = 0

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.svgs += 1
        if tag in ("script", "iframe", "object", "embed", "link", "img"):
            self.bad.append("<%s>" % tag)
        for k, v in attrs:
            v = (v or "").strip().lower()
            if k in ("src", "href", "xlink:href", "action", "srcset", "poster", "data") and \
                    (v.startswith("http:") or v.startswith("https:") or v.startswith("//")):
                self.bad.append("%s=%s" % (k, v))
            if k == "style" and "url(" in v:
                self.bad.append("style url()")

    def handle_data(self, data):
        pass


def check_html(path, n_hosts):
    text = open(path, encoding="utf-8").read()
    p = PageCheck()
    p.feed(text)
    p.close()
    # throughput, hosts busy/waiting/idle, load timeline, all-host histogram,
    # one histogram per worst host (up to 6)
    want = 4 + min(6, n_hosts)
    if p.svgs < want:
        fail("HTML has %d <svg>, want %d (one per plot)" % (p.svgs, want))
    if p.bad:
        fail("HTML references the network or runs code: %s" % p.bad[:5])
    for m in re.finditer(r"<style>(.*?)</style>", text, re.S):
        if "url(" in m.group(1) or "@import" in m.group(1):
            fail("HTML style loads something: %s" % m.group(1)[:200])
    return p.svgs


def main():
    slack = SLACK_MS
    work = tempfile.mkdtemp(prefix="audit-e2e-")
    gen = ["--hosts", str(HOSTS), "--pages", str(PAGES), "--ips", "2"]
    proc, tlog, port, dns = start_testweb(work, gen)
    out = os.path.join(work, "out")
    try:
        seeds = os.path.join(work, "seeds.txt")
        s = subprocess.run([TESTWEB] + gen + ["--http-port", str(port), "--seeds"], check=True,
                           capture_output=True, text=True).stdout
        open(seeds, "w").write(s)
        cmd = [CRAWLER, "crawl", "--seeds", seeds, "-c",
               os.path.join(SOURCE, "configs", "testweb.conf"), "--dns-server",
               "127.0.0.1:%d" % dns, "--allow-private-networks", "-o", out, "--quiet",
               "--policy", "fixed", "--host-delay", str(HOST_DELAY_MS), "--ip-delay", "0",
               "--set", "politeness.ip_politeness=false",
               "--set", "politeness.crawl_delay_cap_ms=%d" % HOST_DELAY_MS]
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        if p.returncode != 0:
            print(p.stdout, p.stderr, file=sys.stderr)
            fail("crawler exited %d" % p.returncode)
        crawl_s = time.time() - t0
    finally:
        stop(proc)
    server = server_view(tlog, port)
    j, h = os.path.join(work, "audit.json"), os.path.join(work, "audit.html")
    t0 = time.time()
    a = subprocess.run([CRAWLER, "audit", out, "--json", j, "--html", h], capture_output=True,
                       text=True, timeout=60)
    if a.returncode != 0:
        print(a.stdout, a.stderr, file=sys.stderr)
        fail("crawler audit exited %d" % a.returncode)
    print(a.stdout)
    rep = json.load(open(j))
    for k in ("pages", "duration_s", "violations", "hosts", "ips", "time_to_pages_s",
              "timeline"):
        if k not in rep:
            fail("JSON lacks %s" % k)
    errors = []
    audited = {}
    for e in rep["hosts"]:
        for k in ("host", "ip", "requests", "min_gap_ms", "median_gap_ms", "busy_share"):
            if k not in e:
                fail("JSON host entry lacks %s: %s" % (k, e))
        audited[e["host"]] = e
    if set(audited) != set(server):
        errors.append("hosts differ: audit only %s, test web only %s" %
                      (sorted(set(audited) - set(server)), sorted(set(server) - set(audited))))
    worst = 0.0
    for host, (n, smin, ips) in sorted(server.items()):
        e = audited.get(host)
        if e is None:
            continue
        if e["requests"] != n:
            errors.append("%s: audit counts %d requests, test web %d" % (host, e["requests"], n))
        if {e["ip"]} != ips:
            errors.append("%s: audit says IP %s, test web %s" % (host, e["ip"], sorted(ips)))
        if smin is None:
            continue
        amin = e["min_gap_ms"]
        if amin is None:
            errors.append("%s: no gap in the audit, test web min %.3f ms" % (host, smin))
            continue
        worst = max(worst, smin - amin)
        print("%-24s requests %3d  min gap: audit %4d ms, test web %8.3f ms (diff %+.3f)" %
              (host, n, amin, smin, smin - amin))
        if amin > smin + 2 or smin - amin > slack:
            errors.append("%s: min gap %d ms in the audit, %.3f ms by the test web (tolerance "
                          "+2/-%d ms)" % (host, amin, smin, slack))
        if smin < HOST_DELAY_MS - 1:
            errors.append("%s: the test web saw a gap of %.3f ms (< %d)" %
                          (host, smin, HOST_DELAY_MS))
    if sum(v[0] for v in server.values()) != rep["requests"]:
        errors.append("audit counts %d requests, test web %d" %
                      (rep["requests"], sum(v[0] for v in server.values())))
    if rep["violations"] != 0:
        errors.append("audit reports %d violations of a polite crawl: %s" %
                      (rep["violations"], rep["violations_listed"][:3]))
    if rep["malformed_lines"] != 0:
        errors.append("%d malformed lines in the crawler's own log" % rep["malformed_lines"])
    svgs = check_html(h, len(audited))
    print("crawl %.1f s, audit %.2f s; %d hosts, %d requests; largest server-client min-gap "
          "difference %.3f ms; HTML %d svg" % (crawl_s, time.time() - t0, len(audited),
                                               rep["requests"], worst, svgs))
    if errors:
        fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
