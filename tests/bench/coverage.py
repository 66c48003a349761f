#!/usr/bin/env python3
"""Coverage of a test web's expected set, judged from the test web's log.

The expected set (`testweb --expected`) lists every URL a polite crawler
starting at the seeds must request, once. A URL is covered by its first
request in the log (columns: time in us, id, host, ip, method, path,
status, bytes). The time to 90% runs from the client's start to the
request that covers ceil(0.9 x expected); the rate to 90% is that count
over that time. Wasted requests: a URL asked again (but a robots.txt
answered 5xx, which RFC 9309 has asked again later, as crawl_e2e.py
allows) and URLs outside the expected set.

  coverage.py judge LOG EXPECTED START_NS   prints the coverage line, then
      on the last line "rate90 wasted reached" (reached: 1 if 90% was)
  coverage.py watch LOG EXPECTED PID        returns 0 once the log covers
      90% of EXPECTED (1 if process PID ended first), reading the log as
      the test web appends to it
"""
import math
import os
import re
import sys
import time


def expected_set(path):
    # The log names hosts without the port the expected URLs carry.
    strip = re.compile(r"^(http://[^/:]+):\d+")
    with open(path) as f:
        return set(strip.sub(r"\1", l.split("\t")[0]) for l in f if l.strip())


def row_of(line):
    f = line.rstrip("\n").split("\t")
    if len(f) < 8 or not f[0].isdigit():
        return None
    return int(f[0]), "http://" + f[2].lower() + f[5], f[5], int(f[6])


def judge(log, expf, start_ns):
    expected = expected_set(expf)
    with open(log) as f:
        rows = sorted(r for r in map(row_of, f) if r is not None)
    t0 = start_ns // 1000
    seen, covered, wasted = set(), [], 0
    for t, url, path, status in rows:
        retry = path == "/robots.txt" and 500 <= status < 600
        if (url in seen and not retry) or url not in expected:
            wasted += 1
        elif url not in seen:
            covered.append(t)
        seen.add(url)
    target = math.ceil(0.9 * len(expected))
    reached = len(covered) >= target > 0
    end = covered[target - 1] if reached else (rows[-1][0] if rows else t0)
    t90 = (end - t0) / 1e6
    rate90 = target / t90 if t90 > 0 else 0
    print("%-8s coverage %d of %d expected (%.1f%%); 90%% (%d) %s %.2f s: %.1f URLs/s;"
          " wasted requests %d" % ("", len(covered), len(expected),
                                   100.0 * len(covered) / max(1, len(expected)), target,
                                   "after" if reached else "NOT REACHED in", t90, rate90, wasted))
    print("%f %d %d" % (rate90, wasted, reached))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def watch(log, expf, pid):
    expected = expected_set(expf)
    target = math.ceil(0.9 * len(expected))
    covered, pending = set(), ""
    f = None
    while alive(pid):
        if f is None and os.path.exists(log):
            f = open(log)
        if f is not None:
            pending += f.read()
            *lines, pending = pending.split("\n")
            for line in lines:
                r = row_of(line)
                if r is not None and r[1] in expected:
                    covered.add(r[1])
            if len(covered) >= target:
                return 0
        time.sleep(0.1)
    return 1


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "judge":
        judge(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "watch":
        return watch(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
