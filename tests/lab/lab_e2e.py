#!/usr/bin/env python3
"""End-to-end test of `crawler lab`: install the build into a scratch
prefix (cmake --install: crawler and testweb land in bin/), run the
installed `crawler lab` without --testweb (it must find testweb beside
itself) on a plan of two entries (fixed with a 100 ms host delay, ratio),
one repetition each, on a small test web with server models, then check:

  - every figure of DIR/lab.tsv equals the one this script recomputes from
    the run's own test web log (DIR/ENTRY/rep-1/testweb.log) and expected
    set: requests, pages, pages/s, time to 90%, coverage, duration, peak
    and mean load per host (in_flight, rate_1s), violations and overlaps;
  - the crawls were complete and polite by the witness (coverage 1, no
    violation, no overlap), and the judged delay is 100 ms for fixed, 0
    (overlaps only) for ratio;
  - lab.json holds the same rows; lab.html parses with html.parser, holds
    <svg> plots and nothing loaded from the network.
Fails (never skips) when anything is missing.

Violations as crawler/lab/lab.h defines them: two requests of a host whose
arrivals are closer than the judged delay minus LAB_TOLERANCE_MS (5 ms;
25 under sanitizers, where the test web's loop is 3-10x slower and its
arrival stamps jitter more), or overlapping in the server's service times.

Environment: CRAWLER_BUILD (build dir), CMAKE_COMMAND (cmake),
LAB_TOLERANCE_MS.
"""
import collections
import html.parser
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("CRAWLER_BUILD", ".")
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")
TOLERANCE_MS = int(os.environ.get("LAB_TOLERANCE_MS", "5"))

PLAN = """# lab e2e plan
[lab]
repetitions = 1
tolerance_ms = %d
timeout_s = 40
hosts = 4
pages = 6
ips = 2
model = * latency fixed 5ms
model = h1 latency fixed 30ms
politeness.ip_politeness = false
politeness.crawl_delay_cap_ms = 100
politeness.retry_after_cap_ms = 1000

[entry fixed]
politeness.policy = fixed
politeness.host_delay_ms = 100

[entry ratio]
crawl = --policy ratio
politeness.ratio = 0.5
politeness.visit_budget_ms = 100
politeness.min_delay_ms = 20
politeness.max_delay_ms = 200
"""


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def install(work):
    prefix = os.path.join(work, "prefix")
    p = subprocess.run([CMAKE, "--install", BUILD, "--prefix", prefix], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        print(p.stdout, p.stderr, file=sys.stderr)
        fail("cmake --install exited %d" % p.returncode)
    for name in ("crawler", "testweb"):
        if not os.access(os.path.join(prefix, "bin", name), os.X_OK):
            fail("cmake --install did not put %s into bin/" % name)
    return os.path.join(prefix, "bin", "crawler")


def witness(run_dir, delay_ms):
    """The run's figures recomputed from its test web log alone."""
    port = None
    for line in open(os.path.join(run_dir, "ready")):
        if line.startswith("http_port="):
            port = int(line.split("=")[1])
    expected = set(line.split("\t")[0] for line in open(os.path.join(run_dir, "expected.tsv"))
                   if line.strip())
    reqs = collections.defaultdict(list)
    first = {}
    rates = []
    peak_inf = peak_rate = 0
    for line in open(os.path.join(run_dir, "testweb.log")):
        f = line.rstrip("\n").split("\t")
        if len(f) < 8 or not f[0].isdigit():
            continue
        if len(f) < 11:
            fail("%s: a log line without model columns" % run_dir)
        if f[2] == "-" or f[8] == "-":
            continue
        start, svc = int(f[0]), int(f[10])
        reqs[f[2]].append((start, start + svc, f[5]))
        rates.append(int(f[9]))
        peak_inf = max(peak_inf, int(f[8]) + 1)
        peak_rate = max(peak_rate, int(f[9]))
        url = "http://%s:%d%s" % (f[2], port, f[5])
        if url in expected:
            first[url] = min(first.get(url, start), start)
    allreq = [r for rs in reqs.values() for r in rs]
    if not allreq:
        fail("%s: the test web saw no request" % run_dir)
    t0 = min(r[0] for r in allreq)
    t1 = max(r[1] for r in allreq)
    pages = sum(1 for r in allreq if r[2] != "/robots.txt")
    viol = overl = 0
    for rs in reqs.values():
        rs.sort()
        max_end, prev = rs[0][1], rs[0][0]
        for s, e, _ in rs[1:]:
            overl += s < max_end
            viol += s < max_end or s - prev < (delay_ms - TOLERANCE_MS) * 1000
            max_end, prev = max(max_end, e), s
    times = sorted(t - t0 for t in first.values())
    target = math.ceil(0.9 * len(expected))
    dur = (t1 - t0) / 1e6
    return {
        "requests": len(allreq), "pages": pages, "duration_s": dur,
        "pages_per_s": pages / dur if dur > 0 else 0,
        "t90_s": times[target - 1] / 1e6 if target and len(times) >= target else None,
        "coverage": len(first) / len(expected) if expected else 0,
        "peak_in_flight": peak_inf, "peak_rate_1s": peak_rate,
        "mean_rate_1s": sum(rates) / len(rates), "violations": viol, "overlaps": overl,
    }


# column: allowed difference (the TSV's printed precision)
PRECISION = {"requests": 0, "pages": 0, "pages_per_s": 0.006, "t90_s": 0.0006,
             "coverage": 0.0006, "duration_s": 0.0006, "peak_in_flight": 0,
             "peak_rate_1s": 0, "mean_rate_1s": 0.006, "violations": 0, "overlaps": 0}


class PageCheck(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs = 0
        self.bad = []

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.svgs += 1
        if tag in ("script", "iframe", "object", "embed", "link", "img"):
            self.bad.append("<%s>" % tag)
        for k, v in attrs:
            v = (v or "").strip().lower()
            if k in ("src", "href", "xlink:href", "action", "srcset", "data") and \
                    (v.startswith("http:") or v.startswith("https:") or v.startswith("//")):
                self.bad.append("%s=%s" % (k, v))


def check_rows(out, rows):
    errors = []
    runs = [r for r in rows if r["rep"] != "mean"]
    if sorted(r["entry"] for r in runs) != ["fixed", "ratio"]:
        fail("lab.tsv runs: %s" % [r["entry"] for r in runs])
    for r in runs:
        delay = float(r["delay_ms"])
        want_delay = 100 if r["entry"] == "fixed" else 0
        if delay != want_delay:
            errors.append("%s: judged delay %s ms, want %d" % (r["entry"], delay, want_delay))
        if r["exit"] != "0":
            errors.append("%s: crawler exit %s" % (r["entry"], r["exit"]))
        w = witness(os.path.join(out, r["entry"], "rep-1"), delay)
        for col, tol in PRECISION.items():
            got = None if r[col] == "-" else float(r[col])
            want = w[col]
            if (got is None) != (want is None) or \
                    (got is not None and abs(got - want) > tol + 1e-9):
                errors.append("%s: %s is %s in lab.tsv, %s from the test web log" %
                              (r["entry"], col, r[col], want))
        if w["coverage"] != 1:
            errors.append("%s: the crawl requested %.3f of the expected set" %
                          (r["entry"], w["coverage"]))
        if w["violations"] or w["overlaps"]:
            errors.append("%s: %d violations, %d overlaps by the test web's log" %
                          (r["entry"], w["violations"], w["overlaps"]))
        mean = [m for m in rows if m["entry"] == r["entry"] and m["rep"] == "mean"]
        if len(mean) != 1 or mean[0]["pages_per_s"] != r["pages_per_s"]:
            errors.append("%s: the mean row of one repetition differs from it" % r["entry"])
    return errors


def main():
    work = tempfile.mkdtemp(prefix="lab-e2e-")
    crawler = install(work)
    plan = os.path.join(work, "tiny.plan")
    open(plan, "w").write(PLAN % TOLERANCE_MS)
    out = os.path.join(work, "out")
    p = subprocess.run([crawler, "lab", plan, "-o", out], capture_output=True, text=True,
                       timeout=100)
    print(p.stdout)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        fail("crawler lab exited %d" % p.returncode)
    for name in ("lab.tsv", "lab.json", "lab.html"):
        if not os.path.exists(os.path.join(out, name)):
            fail("no %s" % name)
    lines = open(os.path.join(out, "lab.tsv")).read().splitlines()
    head = lines[0].split("\t")
    rows = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    if len(rows) != 4:
        fail("lab.tsv has %d rows, want 4 (2 runs, 2 means)" % len(rows))
    errors = check_rows(out, rows)
    rep = json.load(open(os.path.join(out, "lab.json")))
    if len(rep.get("rows", [])) != len(rows):
        errors.append("lab.json has %d rows, lab.tsv %d" % (len(rep.get("rows", [])), len(rows)))
    for j, t in zip(rep.get("rows", []), rows):
        if j["entry"] != t["entry"] or j["violations"] != float(t["violations"]) or \
                j["pages"] != float(t["pages"]):
            errors.append("lab.json row %s differs from lab.tsv %s" % (j, t))
    pc = PageCheck()
    pc.feed(open(os.path.join(out, "lab.html"), encoding="utf-8").read())
    pc.close()
    if pc.svgs < 1:
        errors.append("lab.html has no <svg>")
    if pc.bad:
        errors.append("lab.html references the network or runs code: %s" % pc.bad[:5])
    if errors:
        for e in errors:
            print("FAIL: " + e, file=sys.stderr)
        sys.exit(1)
    print("lab e2e: OK (%d <svg> in lab.html)" % pc.svgs)
    shutil.rmtree(work)  # kept when a check fails, for a look


if __name__ == "__main__":
    main()
