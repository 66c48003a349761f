#!/usr/bin/env bash
# Benchmark: a crawl shared by 1, 2 and 3 agents (crawler crawl --cluster)
# through one Redis, all on this machine (they share its cores with the
# test web and Redis). For each agent count, on a fresh test web and a fresh
# Redis (appendonly yes, appendfsync always as the README asks for one
# Redis, or BENCH_FSYNC):
#   - 0 agents is the same crawl without --cluster (one process, no
#     Redis): the reference the exchange's cost is judged against;
#   - pages/s: distinct pages with status 200 in the test web's log over the
#     crawl's wall time (first agent started to last agent ended);
#   - agents' CPU seconds per 1,000 pages (all agents together), and its
#     ratio to the one-agent run: what the exchange costs the agents;
#   - Redis CPU per page (its own user + system time, from /proc), in ms,
#     and its memory at the end per URL seen (INFO used_memory over the
#     size of the crawl's seen set).
# A page linked only from a page that failed (too-slow on a loaded
# machine) is missing from every run alike: the full run prints, the smoke
# run fails on, missing pages.
#
#   tests/bench/cluster.sh           full: 1,000 hosts x 100 pages, delays 0
#                                    (BENCH_HOSTS / BENCH_PAGES)
#   tests/bench/cluster.sh --smoke   20 hosts x 20 pages, 1 and 2 agents,
#                                    host delay 20 ms: fails if a page is
#                                    missing, fetched twice, or a host's
#                                    delay is broken
#   BENCH_IP_DELAY=MS (either mode): per-IP politeness on with that IP
#                                    delay, so the agents take IP leases in
#                                    Redis for every request (default 0:
#                                    per-IP politeness off, no leases)
#   BENCH_FSYNC=everysec             Redis's appendfsync (default always)
# Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb), python3,
# redis-server, /usr/bin/time.
set -euo pipefail

smoke=0
[[ "${1:-}" == "--smoke" ]] && smoke=1
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
tw=$build/tests/testweb/testweb
crawler=$build/crawler/crawler
[[ -x "$tw" && -x "$crawler" ]] || { echo "crawler or testweb not built in $build" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server missing: crawler/install-deps.sh" >&2; exit 1; }

if (( smoke )); then
  hosts=20 pages=20 host_delay=20 counts="1 2"
else
  hosts=${BENCH_HOSTS:-1000} pages=${BENCH_PAGES:-100} host_delay=0 counts=${BENCH_AGENTS:-0 1 2 3}
fi
gen=(--hosts "$hosts" --pages "$pages" --ips 250)
ip_delay=${BENCH_IP_DELAY:-0}
fsync=${BENCH_FSYNC:-always}
ip_flags=(--ip-delay "$ip_delay")
(( ip_delay )) || ip_flags+=(--set politeness.ip_politeness=false)

tmp=$(mktemp -d /tmp/bench_cluster.XXXXXX)
tw_pid="" redis_pid=""
cleanup() {
  [[ -n "$tw_pid" ]] && kill "$tw_pid" 2>/dev/null && wait "$tw_pid" 2>/dev/null || true
  [[ -n "$redis_pid" ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

cpu_of() { # CPU seconds (user + system) of a live process
  awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f\n", ($12 + $13) / t }' "/proc/$1/stat"
}

echo "test web: $hosts hosts x $pages pages, host delay ${host_delay} ms, IP delay ${ip_delay} ms"
base_cpu=""
for n in $counts; do
  run=$tmp/run$n
  mkdir -p "$run/redis"
  rm -f "$run/ready"
  "$tw" "${gen[@]}" --ready-file "$run/ready" --log "$run/web.log" 2>"$run/web.err" &
  tw_pid=$!
  for _ in $(seq 200); do [[ -f "$run/ready" ]] && break; sleep 0.05; done
  [[ -f "$run/ready" ]] || { echo "testweb did not start" >&2; exit 1; }
  port=$(sed -n 's/^http_port=//p' "$run/ready")
  dns=$(sed -n 's/^dns_port=//p' "$run/ready")
  "$tw" "${gen[@]}" --http-port "$port" --seeds > "$run/seeds.txt"
  "$tw" "${gen[@]}" --http-port "$port" --expected --agent crawler > "$run/expected.txt"
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly yes --appendfsync "$fsync" \
    --dir "$run/redis" --logfile "$run/redis/log" >/dev/null 2>&1 &
  redis_pid=$!
  for _ in $(seq 200); do
    python3 -c "import socket,sys; s=socket.create_connection(('127.0.0.1',$rport)); s.sendall(b'PING\r\n'); sys.exit(0 if s.recv(9).startswith(b'+PONG') else 1)" 2>/dev/null && break
    sleep 0.05
  done
  redis_cpu0=$(cpu_of "$redis_pid")
  t0=$(date +%s.%N)
  pids=()
  cluster=(--cluster "redis://127.0.0.1:$rport/bench")
  (( n )) || cluster=()
  for i in $(seq "$(( n ? n : 1 ))"); do
    /usr/bin/time -f "%U %S" -o "$run/a$i.time" "$crawler" crawl --seeds "$run/seeds.txt" \
      -c "$src/configs/testweb.conf" --dns-server "127.0.0.1:$dns" --allow-private-networks \
      -o "$run/out$i" --quiet --host-delay "$host_delay" "${ip_flags[@]}" \
      --set politeness.crawl_delay_cap_ms="$host_delay" \
      --max-connections 1024 "${cluster[@]}" --agent "a$i" \
      >"$run/a$i.out" 2>"$run/a$i.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p" || { cat "$run"/a*.err >&2; echo "an agent failed" >&2; exit 1; }
  done
  t1=$(date +%s.%N)
  redis_cpu=$(echo "$(cpu_of "$redis_pid") - $redis_cpu0" | bc)
  mem=$(redis-cli -p "$rport" INFO memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
  seen=0 # the crawl-wide seen set, in buckets (crawler/cluster/cluster.h)
  for b in $(seq 0 1023); do echo "SCARD {bench:s:$b}"; done | redis-cli -p "$rport" > "$run/scard"
  seen=$(awk '{ s += $1 } END { print s + 0 }' "$run/scard")

  kill "$tw_pid" "$redis_pid"; wait "$tw_pid" "$redis_pid" 2>/dev/null || true
  tw_pid="" redis_pid=""
  agents_cpu=$(cat "$run"/a*.time | awk '{ s += $1 + $2 } END { printf "%.2f", s }')
  python3 - "$run/web.log" "$run/expected.txt" "$n" "$(echo "$t1 - $t0" | bc)" "$agents_cpu" \
    "$redis_cpu" "$host_delay" "${base_cpu:-0}" "$smoke" "$port" > "$run/fig" <<'EOF' || { cat "$run/fig"; echo "smoke failed" >&2; exit 1; }
import collections, sys
log, expf, n, el, acpu, rcpu, delay, base, smoke, port = sys.argv[1:]
el, acpu, rcpu, delay, base = float(el), float(acpu), float(rcpu), int(delay), float(base)
rows = []
for line in open(log):
    f = line.rstrip("\n").split("\t")
    if len(f) >= 8 and f[0].isdigit():
        host = f[2].lower()
        rows.append((int(f[0]), host if ":" in host else host + ":" + port, f[5], int(f[6])))
rows.sort()
got = collections.Counter("http://%s%s\t%d" % (r[1], r[2], r[3]) for r in rows
                          if r[2] != "/robots.txt")
expected = set(l for l in open(expf).read().splitlines() if l and "/robots.txt" not in l)
pages = sum(1 for k in got if k.endswith("\t200"))
twice = sum(c - 1 for c in got.values() if c > 1)
missing = len(expected - set(got))
viol, last = 0, {}
for r in rows:
    if delay and r[1] in last and r[0] - last[r[1]] + 1000 < delay * 1000:
        viol += 1
    last[r[1]] = r[0]
per1000 = acpu * 1000 / pages if pages else 0
print("%-10s %7d pages %6.1f s %8.1f pages/s  agents %6.3f cpu-s/1000p%s  "
      "Redis %.4f ms cpu/page  missing %d  twice %d  delay violations %d"
      % ("no cluster" if n == "0" else n + " agents", pages, el, pages / el, per1000,
         " (x%.2f of the first row)" % (per1000 / base) if base else "",
         rcpu * 1000 / pages if pages else 0, missing, twice, viol))
if smoke == "1" and (missing or twice or viol or not pages):
    sys.exit(1)
EOF
  cat "$run/fig"
  (( n == 0 )) || echo "  Redis memory at the end: $mem bytes, $seen URLs seen: $(( seen ? mem / seen : 0 )) bytes per URL"
  [[ -n "$base_cpu" ]] || base_cpu=$(python3 -c "import sys; print(sys.argv[1])" \
    "$(awk '{ for (i = 1; i <= NF; i++) if ($i == "cpu-s/1000p") print $(i-1) }' "$run/fig")")
done
