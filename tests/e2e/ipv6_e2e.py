#!/usr/bin/env python3
"""IPv6 end to end: the test web with --ipv6 serves HTTP and DNS on ::1 too,
and its hosts by h-number mod 4: IPv4 only (A), IPv6 only (AAAA ::1), both,
and both with a dead IPv4 address (A 127.0.2.x where nothing listens). The
crawler asks the test web's DNS over IPv6 ([::1]:PORT); the seeds add an
IPv6 literal URL, http://[::1]:PORT/ (no DNS at all).

Two crawls, judged from the test web's log (its server_ip column says which
listener, so which family, took each request):

  1. default preference (IPv4 first): every expected URL requested once,
     nothing else; IPv4-only and dual-stack hosts over IPv4, IPv6-only hosts
     over ::1, dead-IPv4 hosts over ::1 after one failed connect each
     (stats.json hosts.family_fallbacks = their number); no two requests to
     one host closer than the host delay, nor to one address (all of ::1 is
     one /64: one IP for politeness) closer than the IP delay; the literal
     URL's robots.txt and page requested over ::1; and `crawler audit`
     finds no delay broken in crawl.log, where the failed connects are
     lines too.
  2. --prefer-family ipv6: the same coverage and politeness; dual-stack and
     dead-IPv4 hosts over ::1 with no fallback, IPv4-only hosts over IPv4.

IPv6 loopback must work: if ::1 cannot be bound the test fails (it never
skips). Environment: as crawl_e2e.py (CRAWLER_BUILD, CRAWLER_SOURCE,
E2E_HOSTS, E2E_PAGES).
"""
import collections
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crawl_e2e as e2e  # noqa: E402  (TestWeb, crawl, checks, fail)

STACKS = ("v4", "v6", "dual", "dead-v4")  # testweb --ipv6: host I is STACKS[I % 4]


def require_ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
    except OSError as e:
        e2e.fail("IPv6 loopback (::1) is unavailable here (%s): this test cannot run" % e)


def stack_of(hostport):
    name = hostport.split(":")[0]
    if not name.startswith("h"):
        return None
    return STACKS[int(name[1:].split(".")[0]) % 4]


def check_families(rows, prefer):
    """Which listener served each host, by its stack and the preference."""
    want = {"v4": "4", "v6": "6", "dual": prefer, "dead-v4": "6"}
    errors = []
    seen = collections.Counter()
    for r in rows:
        fam = "6" if ":" in r[3] else "4"
        seen[fam] += 1
        st = stack_of(r[2])
        if st is None:
            continue
        if fam != want[st]:
            errors.append("%s (%s) %s over IPv%s (%s), want IPv%s" %
                          (r[2], st, r[5], fam, r[3], want[st]))
    for fam in "46":
        if not seen[fam]:
            errors.append("no request over IPv%s at all" % fam)
    return errors, seen


def run(tw, work, name, prefer):
    out = os.path.join(work, "out-" + name)
    seeds = tw.run_mode("--seeds") + ["http://[::1]:%d/" % tw.http_port]
    extra = ["--host-delay", str(e2e.HOST_DELAY_MS), "--ip-delay", str(e2e.IP_DELAY_MS),
             "--set", "politeness.crawl_delay_cap_ms=%d" % e2e.HOST_DELAY_MS,
             "--dns-server", "[::1]:%d" % tw.dns_port]
    if prefer == "6":
        extra += ["--prefer-family", "ipv6"]
    stats, el, _ = e2e.crawl(tw, out, extra, seed_urls=seeds)
    return stats, el, out


def judge(tw, rows, stats, prefer, expected, faults):
    literal = [r for r in rows if r[2].startswith("[")]
    web = [r for r in rows if not r[2].startswith("[")]
    got = e2e.observed_set(tw, web, faults)
    errors = e2e.coverage_errors(expected, got, rows, stats, "fixed")
    fam_errors, seen = check_families(rows, prefer)
    errors += fam_errors[:5]
    paths = sorted((r[5], r[3]) for r in literal)
    if paths != [("/", "::1"), ("/robots.txt", "::1")]:
        errors.append("the literal URL http://[::1]:%d/: requests %s" % (tw.http_port, paths))
    dead = set(r[2] for r in web if stack_of(r[2]) == "dead-v4")
    fallbacks = stats["hosts"].get("family_fallbacks")
    want = len(dead) if prefer == "4" else 0
    if fallbacks != want:
        errors.append("hosts.family_fallbacks = %s, want %d (dead-IPv4 hosts crawled)" %
                      (fallbacks, want))
    if prefer == "4" and not dead:
        errors.append("no dead-IPv4 host was crawled: the fallback went untested")
    return errors, seen, len(dead)


def audit_violations(out):
    """`crawler audit`'s count of delays broken in the crawl's own log, where
    a failed connect is a request too: the fallback must rest the host."""
    p = subprocess.run([e2e.CRAWLER, "audit", out, "--json", "-", "--quiet"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return ["crawler audit exited %d: %s" % (p.returncode, p.stderr.strip())]
    n = json.loads(p.stdout)["violations"]
    return ["crawler audit: %d violations in crawl.log" % n] if n else []


def main():
    require_ipv6_loopback()
    work = tempfile.mkdtemp(prefix="e2e-ipv6-")
    # All IPv6 hosts share ::1, one /64, so they take turns at the IP
    # delay: a web at most 16 x 20 keeps each crawl near ten seconds.
    hosts = min(int(os.environ.get("E2E_HOSTS", "16")), 16)
    pages = min(int(os.environ.get("E2E_PAGES", "20")), 20)
    tw = e2e.TestWeb(work, ["--hosts", str(hosts), "--pages", str(pages), "--ips", "4", "--ipv6"])
    errors = []
    try:
        expected = set(tw.run_mode("--expected", "--agent", e2e.AGENT))
        faults = e2e.fault_hosts(tw)
        for name, prefer in (("prefer-ipv4", "4"), ("prefer-ipv6", "6")):
            t0_us = int(time.time() * 1e6)
            stats, el, out = run(tw, work, name, prefer)
            time.sleep(0.3)  # the test web flushes its log every 100 ms
            rows = [r for r in tw.requests() if r[0] >= t0_us]  # this crawl's
            errs, seen, dead = judge(tw, rows, stats, prefer, expected, faults)
            errs += audit_violations(out)
            print("%s: %d expected, %d requests (IPv4 %d, IPv6 %d), %d dead-IPv4 hosts, "
                  "%d fallbacks, %.1f s" % (name, len(expected), len(rows), seen["4"], seen["6"],
                                            dead, stats["hosts"].get("family_fallbacks", -1), el))
            errors += ["%s: %s" % (name, e) for e in errs]
    finally:
        tw.stop()
    if errors:
        e2e.fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
