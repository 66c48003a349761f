#!/usr/bin/env bash
# Benchmark: the Redis side of a distributed crawl as it grows. Simulated
# agents (tests/bench/cluster_scale/cluster_sim: real agents of the Redis
# layer in one process, no HTTP; its header describes the simulated web)
# crawl at a set page rate per agent, with per-IP leases, against:
#   - one Redis (no cluster mode), appendfsync always, then everysec;
#   - a Redis Cluster of 1, 3 and 6 masters (appendfsync everysec, no
#     replicas unless BENCH_REPLICAS=1), started by tests/cluster/redis_cluster.py.
# Each configuration runs twice, at half the page rate and at the full
# rate, with the masters pinned to the second core and the agents to the
# first (taskset). Printed per row, at the full rate: pages/s, Redis CPU
# per page (user + system of every master, from /proc, over the measured
# window) and the busiest master's; then the busiest master's CPU per
# extra page (the slope between the two rates, so that what a master
# spends whatever the load, cron, cluster bus, polls of idle inboxes, is
# not charged to pages) and the capacity: the pages per second that master
# would carry on a whole core, and its ratio to 1 master. The 2-core
# machine cannot run 3 or 6 masters side by side at full speed, so
# throughput is judged by CPU per page, not by wall time; the slope is
# taken between two light loads, where batches are smaller than a
# saturated master would read, so the capacity errs low.
# Then: the idle cost of an agent (membership, view, polls), the Redis
# memory per URL seen (the seen set) and per URL queued (an inbox of
# 256-URL entries), and the arithmetic for 10, 100 and 1,000 agents.
#
#   tests/bench/cluster_scale.sh           full: 10 agents at 500 pages/s
#                                          (and 250), 20 s measured per run
#   tests/bench/cluster_scale.sh --smoke   4 agents at 100 pages/s (and
#                                          50), one Redis and 1 and 3
#                                          masters, 2 s a run: fails if a
#                                          figure is missing or no page
#                                          was crawled
# BENCH_AGENTS, BENCH_RATE, BENCH_SECONDS, BENCH_REPLICAS (0 or 1),
# BENCH_MASTERS (default "1 3 6") change the full run.
# Needs CRAWLER_BUILD (tests/bench/cluster_scale/cluster_sim), python3,
# redis-server.
set -euo pipefail

smoke=0
[[ "${1:-}" == "--smoke" ]] && smoke=1
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
sim=$build/tests/bench/cluster_scale/cluster_sim
[[ -x "$sim" ]] || { echo "cluster_sim not built in $build" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server missing: crawler/install-deps.sh" >&2; exit 1; }

tmp=$(mktemp -d /tmp/bench_cluster_scale.XXXXXX)
trap '[[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"' EXIT

python3 - "$sim" "$src" "$tmp" "$smoke" <<'EOF'
import math, os, shutil, subprocess, sys, time
sim, src, tmp, smoke = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
sys.path.insert(0, os.path.join(src, "tests", "cluster"))
import redis_cluster as rc

env = os.environ.get
agents = int(env("BENCH_AGENTS", "4" if smoke else "10"))
rate = int(env("BENCH_RATE", "100" if smoke else "500"))
seconds = int(env("BENCH_SECONDS", "2" if smoke else "20"))
replicas = int(env("BENCH_REPLICAS", "0"))
masters = [1, 3] if smoke else [int(m) for m in env("BENCH_MASTERS", "1 3 6").split()]
pin = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
failed = []


class Single:
    """One Redis without cluster mode."""
    def __init__(self, fsync):
        self.port = rc.free_port_pair()
        self.dir = os.path.join(tmp, "single-%d" % self.port)
        os.makedirs(self.dir)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", fsync, "--dir", self.dir,
             "--logfile", os.path.join(self.dir, "log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=rc._die_with_parent)
        for _ in range(200):
            try:
                if rc.command(self.port, "PING") == "PONG":
                    break
            except OSError:
                time.sleep(0.05)

    def master_ports(self):
        return [self.port]

    def url(self, prefix):
        return "redis://127.0.0.1:%d/%s" % (self.port, prefix)

    def slot_ranges(self):
        return [(0, rc.SLOTS - 1, self.port)]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def pids_of(store):
    if isinstance(store, Single):
        return [store.proc.pid]
    return [store.node(p).proc.pid for p in store.master_ports()]


def run_sim(store, prefix, n_agents, r, secs):
    pids = pids_of(store)
    if pin:
        for p in pids:
            subprocess.run(["taskset", "-pc", "1", str(p)], stdout=subprocess.DEVNULL)
    cmd = (["taskset", "-c", "0"] if pin else []) + [
        sim, "--redis", store.url(prefix), "--agents", str(n_agents), "--rate", str(r),
        "--seconds", str(secs), "--warmup", "2" if smoke else "4", "--hosts", "5000",
        "--flush-ms", "100", "--pids", ",".join(str(p) for p in pids)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    fig = {"cpu": []}
    for line in out.splitlines():
        kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "pid" in kv:
            fig["cpu"].append(kv)
        else:
            fig.update(kv)
    if "pages" not in fig or len(fig["cpu"]) != len(pids):
        failed.append("no figures from %s" % " ".join(cmd))
        print(out)
        return None
    fig["pages"] = int(fig["pages"])
    fig["secs"] = float(fig["seconds"])
    fig["node_cpu"] = [float(c["cpu_s"]) for c in fig["cpu"]]
    return fig


def memory_used(ports):
    return sum(int(rc.command(p, "INFO", "memory").split("used_memory:")[1].split()[0])
               for p in ports)


def seen_urls(store, prefix):
    ranges = store.slot_ranges()
    n = 0
    for b in range(1024):
        key = "{%s:s:%d}" % (prefix, b)
        slot = rc.key_slot(key)
        n += rc.command(next(p for lo, hi, p in ranges if lo <= slot <= hi), "SCARD", key)
    return n


rows = []


def row(label, store):
    ports = store.master_ports()
    lo = run_sim(store, "lo", agents, rate // 2, seconds)
    mem0 = memory_used(ports)
    hi = run_sim(store, "hi", agents, rate, seconds)
    if lo is None or hi is None:
        return
    mem = memory_used(ports) - mem0
    seen = seen_urls(store, "hi")
    pages = hi["pages"]
    per_page = [c * 1000 / pages if pages else 0 for c in hi["node_cpu"]]
    slopes, fixed = [], []
    d = hi["pages"] - lo["pages"]
    for c_lo, c_hi in zip(lo["node_cpu"], hi["node_cpu"]):
        sl = (c_hi - c_lo) * 1000 / d if d > 0 else 0
        slopes.append(sl)
        fixed.append(max(0.0, (c_lo * 1000 - sl * lo["pages"]) / lo["secs"]))  # ms a second
    busiest = max(range(len(slopes)), key=lambda i: slopes[i])
    cap = (1000 - fixed[busiest]) / slopes[busiest] if slopes[busiest] > 0 else 0
    rows.append({"label": label, "masters": len(ports), "pages": pages,
                 "pps": pages / hi["secs"], "cpu_page": sum(per_page),
                 "max_page": max(per_page), "slope": slopes[busiest], "capacity": cap,
                 "refused": int(hi["refused"]), "seen": seen, "mem": mem})
    if pages == 0:
        failed.append("%s: no page crawled" % label)


print("%d agents at %d pages/s each (and %d), %d s measured per run, per-IP leases on "
      "(IP delay 10 ms, fetch 20 ms), URL batches flushed every 100 ms%s" %
      (agents, rate, rate // 2, seconds,
       ", masters pinned to core 1, agents to core 0" if pin else ""))
for fsync in ["always", "everysec"]:
    s = Single(fsync)
    try:
        row("one Redis, appendfsync %s" % fsync, s)
    finally:
        s.stop()
idle_ms = 0.0
for m in masters:
    c = rc.RedisCluster(os.path.join(tmp, "cluster-%d" % m), masters=m, replicas=replicas)
    try:
        c.start()
        row("Redis Cluster, %d master%s%s" % (m, "s" if m > 1 else "",
                                                ", 1 replica each" if replicas else ""), c)
        if m == max(masters) and not smoke:
            idle = run_sim(c, "idle", 64, 0, 10)
            if idle:
                idle_ms = sum(float(x["cpu_ms_per_agent_s"]) for x in idle["cpu"])
    finally:
        c.stop()

base = next((r for r in rows if r["label"].startswith("Redis Cluster, 1 ")), None)
print("%-40s %8s %9s %9s %10s %9s %7s %7s" % ("", "pages/s", "Redis", "busiest", "busiest",
                                             "capacity", "vs 1", "leases"))
print("%-40s %8s %9s %9s %10s %9s %7s %7s" % ("", "", "ms/page", "ms/page", "ms/extra p",
                                             "pages/s", "master", "refused"))
for r in rows:
    cl = r["label"].startswith("Redis Cluster")
    ratio = r["capacity"] / base["capacity"] if cl and base and base["capacity"] else 0
    print("%-40s %8.0f %9.4f %9.4f %10.4f %9.0f %7s %7d" %
          (r["label"], r["pps"], r["cpu_page"], r["max_page"], r["slope"], r["capacity"],
           "%.2fx" % ratio if cl else "", r["refused"]))

# Memory per queued URL: an inbox of 256-URL entries (80-byte lines).
s = Single("everysec")
try:
    key = "{bench:a:x}:inbox"
    line = "http://www.example-host-%06d.com/a/path/to/page-%06d.html\thttp://v.example/\t3\n"
    for e in range(40):
        rc.command(s.port, "XADD", key, "*", "u", "".join(line % (e, i) for i in range(256)))
    stream_bytes = rc.command(s.port, "MEMORY", "USAGE", key) / (40 * 256)
    line_len = len(line % (0, 0))
finally:
    s.stop()
seen_rows = [r for r in rows if r["seen"] > 0]
seen_bytes = max(r["mem"] / r["seen"] for r in seen_rows) if seen_rows else 0
print("Redis memory: %.0f bytes per URL seen (the most of any row: the seen set, with the "
      "inboxes and leases of the run), %.0f bytes per URL queued (%d-byte lines in 256-URL "
      "entries)" % (seen_bytes, stream_bytes, line_len))

if not smoke and base:
    cl3 = next((r for r in rows if r["masters"] == 3), base)
    per_page = cl3["cpu_page"]
    print("idle agent: %.3f ms of Redis CPU per agent-second (membership, view, inbox polls, "
          "census, stats)" % idle_ms)
    print("Arithmetic: Redis CPU per page %.4f ms (3 masters, all of them), an idle agent's "
          "cost on top, masters kept under half a core each; a URL seen per page:" % per_page)
    print("%8s %12s %10s %12s %8s %16s %14s" % ("agents", "pages/s each", "pages/s",
          "Redis cores", "masters", "seen per day", "memory per day"))
    for n in (10, 100, 1000):
        for pps in (50, 500):
            total = n * pps
            cores = (total * per_page + n * idle_ms) / 1000
            nodes = max(1, math.ceil(cores / 0.5))
            urls_day = total * 86400
            print("%8d %12d %10d %12.2f %8d %13.2f G %11.0f GB" %
                  (n, pps, total, cores, nodes, urls_day / 1e9, urls_day * seen_bytes / 1e9))

if smoke:
    for r in rows:
        if r["pages"] == 0 or r["cpu_page"] <= 0:
            failed.append("%s: pages %d, CPU per page %.4f" %
                          (r["label"], r["pages"], r["cpu_page"]))
    if len(rows) != 4:
        failed.append("%d rows of 4" % len(rows))
    if stream_bytes <= 0 or seen_bytes <= 0:
        failed.append("memory figures missing")
if failed:
    print("FAILED: " + "; ".join(failed))
    sys.exit(1)
EOF
