#!/usr/bin/env bash
# Benchmark: the Redis side of a distributed crawl as it grows. Simulated
# agents (tests/bench/cluster_scale/cluster_sim: real agents of the Redis
# layer in one process, no HTTP; its header describes the simulated web)
# crawl at a set page rate per agent, with per-IP leases, against:
#   - one Redis (no cluster mode), appendfsync always, then everysec;
#   - a Redis Cluster of 1, 3 and 6 masters (appendfsync everysec, no
#     replicas unless BENCH_REPLICAS=1), started by tests/cluster/redis_cluster.py.
# Each row: pages/s, Redis CPU per page (user + system of every master,
# from /proc, over the measured window) and the busiest master's; the
# capacity (pages/s the busiest master would carry on a whole core: the
# 2-core machine cannot run 6 masters side by side, so throughput is
# judged by CPU per page, not by wall time) and its ratio to 1 master.
# Then: the idle cost of an agent (membership, view, polls), the Redis
# memory per URL seen (the seen set) and per URL queued (an inbox of
# 256-URL entries), and the arithmetic for 10, 100 and 1,000 agents.
#
#   tests/bench/cluster_scale.sh           full: 16 agents at 300 pages/s,
#                                          20 s measured per row
#   tests/bench/cluster_scale.sh --smoke   4 agents at 100 pages/s, one
#                                          Redis and 1 and 3 masters, 3 s:
#                                          fails if a figure is missing or
#                                          no page was crawled
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
import math, os, subprocess, sys, time
sim, src, tmp, smoke = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
sys.path.insert(0, os.path.join(src, "tests", "cluster"))
import redis_cluster as rc

env = os.environ.get
agents = int(env("BENCH_AGENTS", "4" if smoke else "16"))
rate = int(env("BENCH_RATE", "100" if smoke else "300"))
seconds = int(env("BENCH_SECONDS", "3" if smoke else "20"))
replicas = int(env("BENCH_REPLICAS", "0"))
masters = [1, 3] if smoke else [int(m) for m in env("BENCH_MASTERS", "1 3 6").split()]
failed = []


class Single:
    """One Redis without cluster mode."""
    def __init__(self, fsync):
        self.dir = os.path.join(tmp, "single-" + fsync)
        os.makedirs(self.dir)
        self.port = rc.free_port_pair()
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

    def pids(self):
        return [self.proc.pid]

    def url(self, prefix):
        return "redis://127.0.0.1:%d/%s" % (self.port, prefix)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def cluster_pids(c):
    return [c.node(p).proc.pid for p in c.master_ports()]


def run_sim(store, prefix, n_agents, r, secs, extra=()):
    pids = store.pids() if isinstance(store, Single) else cluster_pids(store)
    cmd = [sim, "--redis", store.url(prefix), "--agents", str(n_agents), "--rate", str(r),
           "--seconds", str(secs), "--warmup", "2" if smoke else "4",
           "--flush-ms", "100", "--pids", ",".join(str(p) for p in pids)] + list(extra)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    fig = {"cpu": []}
    for line in out.splitlines():
        kv = dict(w.split("=", 1) for w in line.split())
        if "pid" in kv:
            fig["cpu"].append(kv)
        else:
            fig.update(kv)
    if "pages" not in fig or len(fig["cpu"]) != len(pids):
        failed.append("no figures from %s" % " ".join(cmd))
        print(out)
    return fig


def memory_used(ports):
    used = 0
    for p in ports:
        info = rc.command(p, "INFO", "memory")
        used += int(info.split("used_memory:")[1].split()[0])
    return used


def seen_urls(store, prefix):
    n = 0
    ranges = store.slot_ranges() if not isinstance(store, Single) else None
    for b in range(1024):
        key = "{%s:s:%d}" % (prefix, b)
        port = store.port if ranges is None else next(
            p for lo, hi, p in ranges if lo <= rc.key_slot(key) <= hi)
        n += rc.command(port, "SCARD", key)
    return n


rows = []


def row(label, store, prefix):
    ports = store.master_ports()
    mem0 = memory_used(ports)
    f = run_sim(store, prefix, agents, rate, seconds)
    if not f["cpu"] or "pages" not in f:
        return None
    pages = int(f["pages"])
    cpus = [float(c["cpu_s"]) for c in f["cpu"]]
    per_page = [c * 1000 / pages if pages else 0 for c in cpus]
    seen = seen_urls(store, prefix)
    mem = memory_used(ports) - mem0
    r = {"label": label, "masters": len(ports), "pages": pages,
         "pps": float(f["pages_per_s"]), "cpu_page": sum(per_page),
         "max_page": max(per_page), "refused": int(f["refused"]),
         "leases": int(f["leases"]), "seen": seen, "mem": mem}
    r["capacity"] = 1000 / r["max_page"] if r["max_page"] > 0 else 0
    rows.append(r)
    if pages == 0:
        failed.append("%s: no page crawled" % label)
    return r


print("%d agents at %d pages/s each, %d s measured per row, per-IP leases on "
      "(IP delay 10 ms, fetch 20 ms), URL batches flushed every 100 ms" %
      (agents, rate, seconds))
for fsync in ["always", "everysec"]:
    s = Single(fsync)
    try:
        row("one Redis, appendfsync %s" % fsync, s, "bench")
    finally:
        s.stop()
for m in masters:
    c = rc.RedisCluster(os.path.join(tmp, "cluster-%d" % m), masters=m, replicas=replicas)
    try:
        c.start()
        row("Redis Cluster, %d master%s%s" % (m, "s" if m > 1 else "",
                                                ", 1 replica each" if replicas else ""), c, "bench")
        if m == max(masters) and not smoke:
            idle = run_sim(c, "idle", 64, 0, 10)
            idle_ms = sum(float(x["cpu_ms_per_agent_s"]) for x in idle["cpu"])
    finally:
        c.stop()

base = next((r for r in rows if r["masters"] == 1 and r["label"].startswith("Redis Cluster")), None)
print("%-44s %9s %13s %13s %10s %9s %8s" % ("", "pages/s", "Redis ms/page", "busiest ms/p",
                                             "capacity", "vs 1", "refused"))
for r in rows:
    ratio = r["capacity"] / base["capacity"] if base and base["capacity"] else 0
    print("%-44s %9.0f %13.4f %13.4f %10.0f %8.2fx %8d" %
          (r["label"], r["pps"], r["cpu_page"], r["max_page"], r["capacity"],
           ratio if r["label"].startswith("Redis Cluster") else 0, r["refused"]))

# Memory per queued URL: an inbox of 256-URL entries (80-byte lines).
s = Single("everysec")
try:
    key = "{bench:a:x}:inbox"
    line = "http://www.example-host-%06d.com/a/path/to/page-%06d.html\thttp://v.example/\t3\n"
    for e in range(40):
        text = "".join(line % (e, i) for i in range(256))
        rc.command(s.port, "XADD", key, "*", "u", text)
    stream_bytes = rc.command(s.port, "MEMORY", "USAGE", key) / (40 * 256)
    line_len = len(line % (0, 0))
finally:
    s.stop()

seen_rows = [r for r in rows if r["seen"] > 0]
seen_bytes = max(r["mem"] / r["seen"] for r in seen_rows) if seen_rows else 0
print("Redis memory: %.0f bytes per URL seen (the seen set, its largest row), "
      "%.0f bytes per URL queued (%d-byte lines in 256-URL entries)" %
      (seen_bytes, stream_bytes, line_len))

if not smoke and base:
    cl3 = next((r for r in rows if r["masters"] == 3), base)
    per_page = cl3["cpu_page"]
    print("idle agent: %.3f ms of Redis CPU per agent-second (membership, view, polls)" % idle_ms)
    print("Arithmetic (Redis CPU per page %.4f ms from the 3-master row, masters kept under "
          "half a core each; one URL seen per page crawled):" % per_page)
    print("%8s %10s %12s %12s %14s %16s" % ("agents", "pages/s", "Redis cores", "masters",
                                           "seen, per day", "memory per day"))
    for n in (10, 100, 1000):
        for pps in (rate, 500):
            total = n * pps
            cores = (total * per_page + n * idle_ms) / 1000
            nodes = max(1, math.ceil(cores / 0.5))
            urls_day = total * 86400
            gb = urls_day * seen_bytes / 1e9
            print("%8d %10d %12.2f %12d %14s %13.0f GB" % (n, total, cores, nodes,
                  "%.1f G URLs" % (urls_day / 1e9), gb))

if smoke:
    for r in rows:
        if r["pages"] == 0 or r["cpu_page"] <= 0:
            failed.append("%s: pages %d, CPU per page %.4f" % (r["label"], r["pages"], r["cpu_page"]))
    if stream_bytes <= 0 or seen_bytes <= 0:
        failed.append("memory figures missing")
if failed:
    print("FAILED: " + "; ".join(failed))
    sys.exit(1)
EOF
