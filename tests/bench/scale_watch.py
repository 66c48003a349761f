#!/usr/bin/env python3
"""The watcher of tests/bench/scale.sh: samples a running crawl and times
its resume.

  scale_watch.py run PID METRICS_PORT TARGET OUT_DIR ROWS_FILE
      Polls the crawler's /status (its --metrics server) and /proc/PID
      twice a second until /status says `requests` >= TARGET (exit 0), or
      the crawler ended (exit 1). At each tenth of TARGET it prints a row:
      pages/s and CPU per request over that tenth (CPU of all the
      process's threads, /proc/PID/stat), RSS (/proc/PID/status VmRSS),
      then one column per entry of FIELDS (a dotted path in /status; "-"
      when /status has no such figure), then the checkpoints written, the
      longest checkpoint pause and the size of the newest checkpoint
      folder under OUT_DIR/checkpoint. The same rows go to ROWS_FILE (TSV
      with a header), and the last /status to ROWS_FILE.status.json.
  scale_watch.py resume PID LOG OFFSET SINCE_US SETTLE_S TIMEOUT_S
      Waits until the test web's LOG holds, past byte OFFSET, a request at
      or after SINCE_US (us since the epoch): prints the time from
      SINCE_US to it (the resumed crawl's first fetch), the crawler's RSS
      then and SETTLE_S seconds later (or when it ended, if sooner), and
      its peak RSS (VmHWM) until then. Exit 1 if no request came within
      TIMEOUT_S or the crawler ended first.
"""
import json
import os
import sys
import time
import urllib.request

# A figure of /status to print per tenth: (column title, dotted path),
# and a divisor for the memory account's bytes (MiB). Adding a figure is
# one line here.
MIB = 2**20
FIELDS = [
    ("hosts", "hosts.total"),
    ("hosts_idle", "hosts.idle"),
    ("queued", "frontier.left"),
    ("spill_B", "frontier.disk_bytes"),
    ("near_dups", "near_duplicates"),
    ("dns_lookups", "dns.lookups"),
    ("ck_fetch_pause_s", "checkpoints.fetch_pause_seconds_max"),
    ("ck_files_s", "checkpoints.files_seconds_max"),
    # the memory account (stats.json "memory"), MiB
    ("m_hosts", "memory.hosts_table", MIB),
    ("m_queues", "memory.frontier_queues", MIB),
    ("m_urls", "memory.frontier_urls", MIB),
    ("m_visit", "memory.visit", MIB),
    ("m_polite", "memory.politeness_hosts", MIB),
    ("m_heaps", "memory.politeness_heaps", MIB),
    ("m_ips", "memory.ip_groups", MIB),
    ("m_conns", "memory.ip_connections", MIB),
    ("m_robots", "memory.robots_cache", MIB),
    ("m_dns", "memory.dns_cache", MIB),
    ("m_side", "memory.sieve_side_table", MIB),
    ("m_neardup", "memory.near_dup", MIB),
    ("m_parseq", "memory.parse_queue", MIB),
    ("m_total", "memory.total", MIB),
]

TICK = os.sysconf("SC_CLK_TCK")


def status(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/status" % port, timeout=5) as r:
        return json.load(r)


def dig(obj, path, div=1):
    for k in path.split("."):
        if not isinstance(obj, dict) or k not in obj:
            return None
        obj = obj[k]
    return obj / div if div != 1 and isinstance(obj, (int, float)) else obj


def proc_cpu_s(pid):
    """utime + stime of every thread of pid, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / TICK


def proc_mem_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ckpt_bytes(out_dir):
    root = os.path.join(out_dir, "checkpoint")
    try:
        dirs = [os.path.join(root, d) for d in os.listdir(root) if d.startswith("ckpt-")]
    except OSError:
        return 0
    if not dirs:
        return 0
    newest = max(dirs, key=lambda d: os.stat(d).st_mtime)
    total = 0
    for base, _, files in os.walk(newest):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                pass
    return total


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.3f" % v
    return str(v)


def run(pid, port, target, out_dir, rows_file):
    head = (["tenth", "elapsed_s", "requests", "pages_per_s", "cpu_ms_per_req", "rss_MiB"] +
            [f[0] for f in FIELDS] + ["ckpts", "ckpt_pause_max_s", "ckpt_MiB"])
    print("  " + " ".join("%12s" % h for h in head), flush=True)
    rows = open(rows_file, "w")
    rows.write("\t".join(head) + "\n")
    t0 = time.monotonic()
    last = (t0, 0, 0, proc_cpu_s(pid))  # time, requests, pages, cpu
    tenth, s = 1, None
    while tenth <= 10:
        time.sleep(0.5)
        if not alive(pid):
            print("  the crawler ended before %d requests" % target, flush=True)
            return 1
        try:
            s = status(port)
            cpu = proc_cpu_s(pid)
            rss = proc_mem_kb(pid, "VmRSS")
        except (OSError, ValueError):
            continue
        now, req, pages = time.monotonic(), s["requests"], s["pages"]
        if req < target * tenth // 10:
            continue
        dt, dreq = now - last[0], req - last[1]
        row = [tenth / 10, now - t0, req, (pages - last[2]) / dt if dt > 0 else 0,
               (cpu - last[3]) * 1000 / dreq if dreq else 0, rss / 1024]
        row += [dig(s, *f[1:]) for f in FIELDS]
        ck = s.get("checkpoints", {})
        row += [ck.get("written"), ck.get("seconds_max"), ckpt_bytes(out_dir) / 2**20]
        print("  " + " ".join("%12s" % fmt(v) for v in row), flush=True)
        rows.write("\t".join(fmt(v) for v in row) + "\n")
        rows.flush()
        last = (now, req, pages, cpu)
        while tenth <= 10 and req >= target * tenth // 10:
            tenth += 1
    with open(rows_file + ".status.json", "w") as f:
        json.dump(s, f)
    return 0


def resume(pid, log, offset, since_us, settle_s, timeout_s):
    deadline = time.monotonic() + timeout_s
    first = None
    buf = b""
    while first is None:
        if time.monotonic() > deadline or not alive(pid):
            print("  resume: no request within %d s" % timeout_s)
            return 1
        time.sleep(0.05)
        with open(log, "rb") as f:
            f.seek(offset)
            chunk = f.read()
        offset += len(chunk)
        buf += chunk
        lines = buf.split(b"\n")
        buf = lines.pop()
        for line in lines:
            t = line.split(b"\t", 1)[0]
            if t.isdigit() and int(t) >= since_us and (first is None or int(t) < first):
                first = int(t)
    rss0 = hwm = proc_mem_kb(pid, "VmRSS")
    settle = time.monotonic() + settle_s
    while time.monotonic() < settle and alive(pid):
        rss1 = proc_mem_kb(pid, "VmRSS")
        hwm = max(hwm, proc_mem_kb(pid, "VmHWM"))
        time.sleep(0.1)
    print("  resume: first fetch %.2f s after the start; RSS %.1f MiB then, %.1f MiB %d s later;"
          " peak %.1f MiB" % ((first - since_us) / 1e6, rss0 / 1024, rss1 / 1024, settle_s,
                              hwm / 1024))
    print("resume_first_fetch_s %.3f" % ((first - since_us) / 1e6))
    print("resume_rss_kb %d" % rss1)
    print("resume_hwm_kb %d" % hwm)
    return 0


def main():
    a = sys.argv[1:]
    if len(a) == 6 and a[0] == "run":
        return run(int(a[1]), int(a[2]), int(a[3]), a[4], a[5])
    if len(a) == 7 and a[0] == "resume":
        return resume(int(a[1]), a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
