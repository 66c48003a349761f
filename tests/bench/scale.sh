#!/usr/bin/env bash
# Benchmark: a million hosts on one machine. The test web serves
# SCALE_HOSTS hosts (1,000,000) of SCALE_PAGES pages (4) on 250 IPs, every
# host a seed; `crawler crawl` (configs/testweb.conf: 50 ms host delay)
# runs until SCALE_REQUESTS requests (3,000,000), sampled through its
# --metrics server (tests/bench/scale_watch.py) at each tenth of them:
# pages/s, CPU per request (every thread), RSS, the figures of /status
# listed in scale_watch.py's FIELDS, the checkpoints (every SCALE_CKPT_S,
# 60 s: count, longest pause, size). Then the crawl is killed (SIGKILL)
# and resumed: the time from the resume's start to its first request (in
# the test web's log) and its RSS. Judged from the test web's log
# (`testweb --judge`): robots.txt and host-delay violations, robots.txt
# fetched again, near-duplicate pairs fetched against those flagged. In
# the same run a crawl of SCALE_SMALL_HOSTS hosts (1,000) with the same
# page mix, to the end, gives the ratios (CPU per request, pages/s).
#
# The peak RSS of the big crawl and of the resume is checked against a
# bound: the configured budgets (frontier, sieve and its side table,
# near-duplicate store, robots.txt and DNS caches) plus SCALE_BASE_MIB
# (128: the process without them: libraries, threads, queues of
# responses, connections) plus SCALE_HOST_BYTES (512) per host of the web,
# the per-host state outside the budgets (politeness 96-116 bytes, the
# visit's 56, the frontier's host 110 counted in its budget but allowed
# past it; README, "Memory"). Over it, the run fails.
#
#   tests/bench/scale.sh           full (about 30 min at 1,000,000 hosts)
#   tests/bench/scale.sh --smoke   5,000 hosts x 2 pages, 20,000 requests,
#                                  small budgets, < 60 s
# Either fails on a peak RSS over the bound, on a violation, on a resume
# without a request, or when the small crawl (which ends) leaves a
# near-duplicate pair unflagged.
# BENCH_TMPDIR: where the crawls write (default: /tmp for the full run,
# which writes about 20 GB of WARC; /dev/shm for the smoke).
# Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb), python3.
set -euo pipefail

smoke=0
case "${1:-}" in
--smoke) smoke=1 ;;
"") ;;
*) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
esac
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
tw=$build/tests/testweb/testweb
crawler=$build/crawler/crawler
watch=$src/tests/bench/scale_watch.py
[[ -x "$tw" && -x "$crawler" ]] || { echo "crawler or testweb not built in $build" >&2; exit 1; }

if (( smoke )); then
  hosts=5000 pages=2 requests=20000 small_hosts=200 ckpt_s=2 resume_wait=60 settle=2
  # small budgets, so that a structure growing with hosts shows over them
  budgets=(--set frontier.mem_mb=16 --set sieve.memory=8M --set sieve.meta_memory=2M
           --set parse.near_dup_memory=4M --set politeness.robots_cache_memory=1M
           --set dns.cache_entries=4096)
else
  hosts=${SCALE_HOSTS:-1000000} pages=${SCALE_PAGES:-4} requests=${SCALE_REQUESTS:-3000000}
  small_hosts=${SCALE_SMALL_HOSTS:-1000} ckpt_s=${SCALE_CKPT_S:-60} resume_wait=600 settle=10
  budgets=()
fi
base_mib=${SCALE_BASE_MIB:-128}
host_bytes=${SCALE_HOST_BYTES:-512}
host_delay=50 # configs/testweb.conf

# The full crawl writes about 20 GB (its WARC): to disk, not to memory.
tmp_root=${BENCH_TMPDIR:-$( ((smoke)) && echo /dev/shm || echo /tmp)}
[[ -d $tmp_root && -w $tmp_root ]] || tmp_root=/tmp
tmp=$(mktemp -d "$tmp_root/bench_scale.XXXXXX")
tw_pid="" crawl_pid=""
cleanup() {
  [[ -n "$crawl_pid" ]] && kill -9 "$crawl_pid" 2>/dev/null || true
  [[ -n "$tw_pid" ]] && kill "$tw_pid" 2>/dev/null && wait "$tw_pid" 2>/dev/null || true
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

# start_web NAME HOSTS: a fresh test web logging to $tmp/NAME.log; sets
# gen, port, dns, and writes $tmp/NAME.seeds.
start_web() {
  local name=$1 t0=$SECONDS
  gen=(--hosts "$2" --pages "$pages" --ips 250)
  rm -f "$tmp/ready"
  "$tw" "${gen[@]}" --ready-file "$tmp/ready" --log "$tmp/$name.log" 2>"$tmp/$name.tw.err" &
  tw_pid=$!
  for _ in $(seq 400); do [[ -f "$tmp/ready" ]] && break; sleep 0.05; done
  [[ -f "$tmp/ready" ]] || { echo "testweb did not start" >&2; exit 1; }
  port=$(sed -n 's/^http_port=//p' "$tmp/ready")
  dns=$(sed -n 's/^dns_port=//p' "$tmp/ready")
  "$tw" "${gen[@]}" --http-port "$port" --seeds > "$tmp/$name.seeds"
  echo "test web ($name): $2 hosts x $pages pages, 250 IPs: up and seeds written in" \
    "$((SECONDS - t0)) s, its RSS $(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$tw_pid/status") MiB"
}
stop_web() {
  echo "  (test web: CPU $(awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); split($0, f, " ");
    printf "%.1f s", (f[12] + f[13]) / t }' "/proc/$tw_pid/stat"), peak RSS" \
    "$(awk '/VmHWM/ { print int($2 / 1024) }' "/proc/$tw_pid/status") MiB)"
  kill "$tw_pid" 2>/dev/null || true
  wait "$tw_pid" 2>/dev/null || true
  tw_pid=""
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# crawl NAME ARGS...: the crawler in the background on the current web.
crawl() {
  local name=$1; shift
  "$crawler" crawl -c "$src/configs/testweb.conf" --dns-server "127.0.0.1:$dns" \
    -o "$tmp/out.$name" --quiet --set output.checkpoint_interval_s="$ckpt_s" \
    "${budgets[@]}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  crawl_pid=$!
}
judge() { "$tw" "${gen[@]}" --http-port "$port" --agent crawler --judge-delay-ms "$host_delay" "$@"; }
fig() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

# The RSS bound: budgets + base + hosts x a stated cost.
bound_mib=$(python3 - "$base_mib" "$host_bytes" "$hosts" "${budgets[@]}" <<'EOF'
import sys
base, per_host, hosts = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
size = lambda v: int(v[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[v[-1]] if v[-1] in "KMG" else int(v)
# the defaults (configs/default.conf), then what --set changed; a DNS
# cache entry is taken as 256 bytes (dns.h: about 200)
b = {"frontier.mem_mb": 256 << 20, "sieve.memory": 64 << 20, "sieve.meta_memory": 16 << 20,
     "parse.near_dup_memory": 64 << 20, "politeness.robots_cache_memory": 64 << 20,
     "dns.cache_entries": 65536 * 256}
for a in sys.argv[4:]:
    if "=" in a:
        k, v = a.split("=", 1)
        b[k] = (int(v) << 20 if k == "frontier.mem_mb" else int(v) * 256
                if k == "dns.cache_entries" else size(v))
print(int(base + sum(b.values()) / 2**20 + hosts * per_host / 2**20))
EOF
)
echo "RSS bound: $bound_mib MiB (budgets + base $base_mib MiB + $host_bytes B x $hosts hosts)"

# 1. the big web: crawl to the target, sampled
start_web big "$hosts"
mport=$(free_port)
t_start=$(date +%s%N)
crawl big --seeds "$tmp/big.seeds" --metrics "127.0.0.1:$mport"
echo "crawl of $hosts hosts until $requests requests (rows at each tenth):"
python3 "$watch" run "$crawl_pid" "$mport" "$requests" "$tmp/out.big" "$tmp/big.rows" ||
  { cat "$tmp/big.err" >&2; echo "scale: the crawl failed" >&2; exit 1; }
big_hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$crawl_pid/status")
big_cpu=$(python3 -c "import sys; sys.argv = ['', '$crawl_pid']
st = open('/proc/%s/stat' % sys.argv[1]).read().rsplit(')', 1)[1].split()
import os; print((int(st[11]) + int(st[12])) / os.sysconf('SC_CLK_TCK'))")
big_s=$(( ($(date +%s%N) - t_start) / 1000000 ))
kill -9 "$crawl_pid"; wait "$crawl_pid" 2>/dev/null || true; crawl_pid=""
sleep 0.3 # the test web flushes its log every 100 ms
cp "$tmp/out.big/crawl.log" "$tmp/big.crawl.log.run1"

# 2. resume after the SIGKILL
offset=$(stat -c %s "$tmp/big.log")
# the longest time the test web saw no request start, after the crawl's
# first 10 s (a checkpoint's pause shows as such a gap): its own account
python3 - "$tmp/big.log" "$offset" > "$tmp/big.gaps" <<'EOF'
import sys
import array
ts, left = array.array("q"), int(sys.argv[2])
with open(sys.argv[1], "rb") as f:
    for line in f:
        left -= len(line)
        if left < 0:
            break
        head = line.split(b"\t", 1)[0]
        if head.isdigit():
            ts.append(int(head))
ts = sorted(ts)
gaps = [(b - a, a) for a, b in zip(ts, ts[1:]) if a >= ts[0] + 10_000_000]
gap, at = max(gaps) if gaps else (0, ts[0] if ts else 0)
print("gap_max_s %.3f" % (gap / 1e6))
print("gap_at_s %.1f" % ((at - ts[0]) / 1e6 if ts else 0))
print("gaps_over_half_s %d" % sum(1 for g, _ in gaps if g > 500_000))
EOF
since_us=$(( $(date +%s%N) / 1000 ))
crawl big --resume
python3 "$watch" resume "$crawl_pid" "$tmp/big.log" "$offset" "$since_us" "$settle" "$resume_wait" \
  > "$tmp/resume.fig" || { cat "$tmp/resume.fig" "$tmp/big.err" >&2; echo "scale: no resume" >&2; exit 1; }
head -n 1 "$tmp/resume.fig"
resume_hwm=$(fig resume_hwm_kb "$tmp/resume.fig")
kill -9 "$crawl_pid"; wait "$crawl_pid" 2>/dev/null || true; crawl_pid=""
sleep 0.3
judge --judge "$tmp/big.log" > "$tmp/big.judge"
stop_web

# 3. the small web, same page mix, to the end
start_web small "$small_hosts"
crawl small --seeds "$tmp/small.seeds"
wait "$crawl_pid" || { cat "$tmp/small.err" >&2; echo "scale: the small crawl failed" >&2; exit 1; }
crawl_pid=""
sleep 0.3
judge --judge "$tmp/small.log" > "$tmp/small.judge"
stop_web

python3 - "$tmp" "$requests" "$big_cpu" "$big_s" "$big_hwm" "$resume_hwm" "$bound_mib" \
  "$hosts" "$small_hosts" <<'EOF' | tee "$tmp/summary"
import json, sys
tmp, requests, big_cpu, big_ms, big_hwm, resume_hwm, bound, hosts, small_hosts = sys.argv[1:10]
fig = lambda f: dict((l.split()[0], float(l.split()[1])) for l in open(tmp + "/" + f)
                     if len(l.split()) == 2)
last = json.load(open(tmp + "/big.rows.status.json"))
small = json.load(open(tmp + "/out.small/stats.json"))
j, js, res = fig("big.judge"), fig("small.judge"), fig("resume.fig")
gaps = fig("big.gaps")


def near_dups(crawl_log):
    """Pages flagged near-dup, and pages whose two variants (PAGE?q=1 and
    PAGE?q=2: testweb --help) were both fetched, as the crawl log says:
    the killed crawl's account stops where its log does."""
    seen, flagged = {}, 0
    for line in open(crawl_log, errors="replace"):
        f = line.split("\t")
        if len(f) < 12 or f[1] != "200":
            continue
        flagged += "near-dup" in f[11].split(",")
        url = f[3]
        if url[-4:-1] == "?q=" and url[-1] in "12":
            seen.setdefault(url[:-4], set()).add(url[-1])
    return flagged, sum(1 for v in seen.values() if len(v) == 2)


nd_big, nd_small = near_dups(tmp + "/big.crawl.log.run1"), near_dups(tmp + "/out.small/crawl.log")
big_req, big_pages = last["requests"], last["pages"]
big_cpr = float(big_cpu) * 1000 / big_req
big_pps = big_pages / (int(big_ms) / 1000)
small_cpr = small["cpu_s"] * 1000 / small["requests"]
print("big:   %s hosts, %d requests: %.0f pages/s, %.3f ms CPU/request, peak RSS %d MiB"
      % (hosts, big_req, big_pps, big_cpr, int(big_hwm) // 1024))
print("small: %s hosts, %d requests: %.0f pages/s, %.3f ms CPU/request, peak RSS %d MiB"
      % (small_hosts, small["requests"], small["pages_per_s"], small_cpr,
         small["peak_rss_kb"] // 1024))
print("ratios big/small: CPU per request %.2fx, pages/s %.2fx"
      % (big_cpr / small_cpr, big_pps / small["pages_per_s"]))
# The two crawls' requests differ: the big one stops early, where robots.txt
# and front pages weigh more; per parsed page and per byte are the work's.
per = lambda x, k: x["cpu_s"] / x[k] if x[k] else 0
print("  per parsed page %.3f / %.3f ms: %.2fx; per MB received %.1f / %.1f ms: %.2fx;"
      " parsed pages per request %.3f / %.3f"
      % (per(last, "parsed") * 1e3, per(small, "parsed") * 1e3,
         per(last, "parsed") / per(small, "parsed"), per(last, "bytes") * 1e9,
         per(small, "bytes") * 1e9, per(last, "bytes") / per(small, "bytes"),
         last["parsed"] / big_req, small["parsed"] / small["requests"]))
mem = last.get("memory", {})
nh = last["hosts"]["total"] or 1
if "total" in mem:
    print("memory account at the end, MiB: " + ", ".join(
        "%s %.1f" % (k, v / 2**20) for k, v in mem.items()))
    print("  a host: table %.0f B, visit %.0f B, politeness %.0f B (of %d hosts)"
          % (mem["hosts_table"] / nh, mem["visit"] / nh, mem["politeness_hosts"] / nh, nh))
ck = last["checkpoints"]
print("checkpoints: %d written, longest %.3f s, longest time no transfer could start %.3f s"
      % (ck["written"], ck["seconds_max"], ck.get("fetch_pause_seconds_max", ck["seconds_max"])))
print("  longest of each phase: drain %.3f, sieve flush %.3f, writer sync %.3f, the loop's files"
      " %.3f (CPU %.3f), the snapshot's copy of the process %.3f, commit (sieve copy, fsync)"
      " %.3f s" % tuple(ck.get(k + "_seconds_max", 0)
                        for k in ("drain", "flush", "writer", "files", "files_cpu", "snapshot",
                                  "commit")))
print("  the test web's log after the first 10 s: longest time no request started %.3f s (at"
      " %.1f s), gaps over 0.5 s: %d" % (gaps["gap_max_s"], gaps["gap_at_s"],
                                         gaps["gaps_over_half_s"]))
print("resume: first fetch %.2f s after its start, RSS %d MiB (peak %d MiB)"
      % (res["resume_first_fetch_s"], res["resume_rss_kb"] // 1024, int(resume_hwm) // 1024))
print("judged from the test web's log (both runs): robots.txt violations %d, politeness"
      " violations %d, hosts whose robots.txt was fetched again %d (of %d)"
      % (j["robots_violations"], j["politeness_violations"], j["hosts_robots_repeated"],
         j["hosts"]))
print("near-duplicates flagged (crawl.log) of pairs fetched: big %d of %d, small %d of %d"
      " (the test web saw %d pairs fetched in the small crawl)"
      % (nd_big + nd_small + (js["near_dup_pairs"],)))
print("peak RSS: big %d MiB, resume %d MiB; bound %s MiB"
      % (int(big_hwm) // 1024, int(resume_hwm) // 1024, bound))
bad = []
if max(int(big_hwm), int(resume_hwm)) // 1024 > int(bound):
    bad.append("peak RSS over the bound")
if j["robots_violations"] or j["politeness_violations"] or js["robots_violations"] or \
        js["politeness_violations"]:
    bad.append("violations")
if "total" not in mem:
    bad.append("no memory account in /status")
if nd_small[0] < nd_small[1]:
    bad.append("near-duplicates missed in the small crawl")
if bad:
    print("FAIL: " + ", ".join(bad))
    sys.exit(1)
EOF
