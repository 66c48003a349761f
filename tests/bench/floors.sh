#!/usr/bin/env bash
# Benchmark: the crawler's CPU per page beside the floors of the work it
# cannot avoid, each measured alone on the same requests in the same run
# (tests/bench/floors/bench_floors): a minimal libcurl multi client fetching
# them with keep-alive, libxml2's HTML parse with no callbacks, zlib's
# inflate of the gzipped HTML, libdeflate at the WARC level, SHA-1 digests.
# The crawler runs with every feature on (WARC compressed with digests,
# SimHash and near-duplicates, robots.txt and politeness with delays at
# zero, as crawl.sh); its CPU is /usr/bin/time's user + sys (all threads),
# its pages the distinct 200 responses in the test web's log. bench_floors
# then fetches, on the same test web, every distinct request the crawler
# made (from that log). Printed: each floor, their sum, the crawler's CPU
# per page and the ratio crawler / sum.
#
#   tests/bench/floors.sh           full: 1,000 hosts x 100 pages (as
#                                   crawl.sh's full run)
#   tests/bench/floors.sh --web40   40 hosts x 100 pages (4,000 HTML pages
#                                   of 5-60 KB, the test web's page mix)
#   tests/bench/floors.sh --smoke   10 hosts x 20 pages, < 60 s; fails only
#                                   if a figure is missing or not positive
# BENCH_HOSTS / BENCH_PAGES override the size; BENCH_WARC_LEVEL (default 1,
# configs/default.conf's warc_level); BENCH_ROUNDS (compute floors, best of;
# default 3, 1 in the full run); BENCH_MAX_CONNECTIONS (default 1024).
# BENCH_PERF=1: the crawler runs under `perf record` (cpu-clock samples, all
# its threads) and its profile is printed by shared object, each share also
# in ms per page, to set against the floors (the samples cost a little CPU:
# judge the ratio without it). BENCH_KEEP=1 keeps the temporary folder.
# Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb,
# tests/bench/floors/bench_floors), python3, /usr/bin/time.
set -euo pipefail

mode=full
case "${1:-}" in
--smoke) mode=smoke ;;
--web40) mode=web40 ;;
"") ;;
*) echo "usage: $0 [--smoke | --web40]" >&2; exit 2 ;;
esac
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
tw=$build/tests/testweb/testweb
crawler=$build/crawler/crawler
floors=$build/tests/bench/floors/bench_floors
for exe in "$tw" "$crawler" "$floors"; do
  [[ -x $exe ]] || { echo "floors bench: $exe not built" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "floors bench: needs /usr/bin/time" >&2; exit 1; }

case $mode in
smoke) hosts=10 pages=20 rounds=1 ;;
web40) hosts=40 pages=100 rounds=3 ;;
full) hosts=1000 pages=100 rounds=1 ;;
esac
hosts=${BENCH_HOSTS:-$hosts}
pages=${BENCH_PAGES:-$pages}
rounds=${BENCH_ROUNDS:-$rounds}
level=${BENCH_WARC_LEVEL:-1}
maxconn=${BENCH_MAX_CONNECTIONS:-1024}
gen=(--hosts "$hosts" --pages "$pages" --ips 250)

tmp=$(mktemp -d /tmp/bench_floors.XXXXXX)
tw_pid=""
cleanup() {
  if [[ -n "$tw_pid" ]]; then
    kill "$tw_pid" 2>/dev/null || true
    wait "$tw_pid" 2>/dev/null || true
  fi
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

echo "floors bench: test web $hosts hosts x $pages pages, delays 0, WARC level $level," \
  "max connections $maxconn; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# One test web serves both clients: the same bytes at the same port.
"$tw" "${gen[@]}" --ready-file "$tmp/ready" --log "$tmp/web.log" 2>"$tmp/tw.err" &
tw_pid=$!
for _ in $(seq 200); do [[ -f "$tmp/ready" ]] && break; sleep 0.05; done
[[ -f "$tmp/ready" ]] || { echo "floors bench: testweb did not start" >&2; exit 1; }
port=$(sed -n 's/^http_port=//p' "$tmp/ready")
dns=$(sed -n 's/^dns_port=//p' "$tmp/ready")
"$tw" "${gen[@]}" --http-port "$port" --seeds >"$tmp/seeds.txt"
"$tw" "${gen[@]}" --http-port "$port" --hosts-info >"$tmp/hosts.tsv"

# 1. The crawler, every feature on (configs/testweb.conf, crawl.sh's flags).
prof=()
[[ -n "${BENCH_PERF:-}" ]] && prof=(perf record -q -e cpu-clock -F 499 -o "$tmp/perf.data" --)
/usr/bin/time -f "%e %U %S %M" -o "$tmp/crawler.time" \
  "${prof[@]}" "$crawler" crawl --seeds "$tmp/seeds.txt" -c "$src/configs/testweb.conf" \
  --dns-server "127.0.0.1:$dns" --allow-private-networks -o "$tmp/out" --quiet \
  --host-delay 0 --ip-delay 0 --set politeness.ip_politeness=false \
  --set politeness.crawl_delay_cap_ms=0 --max-connections "$maxconn" \
  --set output.warc=true --set output.warc_level="$level" --set parse.near_dup=true \
  >"$tmp/crawler.out" 2>"$tmp/crawler.err" ||
  { cat "$tmp/crawler.err" >&2; echo "floors bench: crawler failed" >&2; exit 1; }
# The test web flushes its log every 100 ms: wait for the crawler's last
# lines, then keep them apart from the floors client's.
sleep 0.5
cp "$tmp/web.log" "$tmp/crawler.log"

# The crawler's figures, and its distinct requests (host TAB path, in the
# order it made them) for the floors client.
read -r c_pages c_requests c_cpu c_sys c_elapsed < <(python3 - "$tmp/crawler.log" "$tmp/crawler.time" \
  "$tmp/requests.tsv" <<'EOF'
import sys
log, timef, out = sys.argv[1:4]
rows = []
for line in open(log):
    f = line.rstrip("\n").split("\t")
    if len(f) >= 8 and f[0].isdigit():
        rows.append((int(f[0]), f[2].lower(), f[5], int(f[6])))
rows.sort(key=lambda r: r[0])
pages = set((r[1], r[2]) for r in rows if r[3] == 200)
seen = set()
with open(out, "w") as o:
    for r in rows:
        if (r[1], r[2]) not in seen:
            seen.add((r[1], r[2]))
            o.write("%s\t%s\n" % (r[1], r[2]))
t = [l for l in open(timef).read().splitlines() if l and l[0].isdigit()][-1].split()
print(len(pages), len(rows), float(t[1]) + float(t[2]), float(t[2]), float(t[0]))
EOF
)
echo "crawler: $c_pages pages (200), $c_requests requests, $c_elapsed s, $c_cpu s CPU" \
  "(user + sys, all threads; sys $c_sys s)"

# 2. The floors, on the same web and the same requests.
"$floors" --port "$port" --hosts-info "$tmp/hosts.tsv" --requests "$tmp/requests.tsv" \
  --max-connections "$maxconn" --warc-level "$level" --rounds "$rounds" >"$tmp/floors.out" ||
  { cat "$tmp/floors.out" >&2; echo "floors bench: bench_floors failed" >&2; exit 1; }
cat "$tmp/floors.out"
kill "$tw_pid" 2>/dev/null || true
wait "$tw_pid" 2>/dev/null || true
tw_pid=""

python3 - "$tmp/floors.out" "$c_pages" "$c_cpu" <<'EOF'
import sys
out, pages, cpu = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
floors, total = {}, None
for line in open(out):
    f = line.split()
    if len(f) >= 3 and f[0] == "floor":
        floors[f[1]] = float(f[2])
    elif len(f) >= 2 and f[0] == "floors_sum":
        total = float(f[1])
crawler = cpu * 1e3 / pages if pages else 0.0
print("%-22s %8.4f ms/page" % ("sum of the floors", total or 0.0))
print("%-22s %8.4f ms/page" % ("crawler (all threads)", crawler))
print("%-22s %8.2f" % ("crawler / floors", crawler / total if total else 0.0))
bad = [n for n in ("fetch", "parse", "deflate", "sha1") if floors.get(n, 0) <= 0]
if bad or not total or total <= 0 or crawler <= 0:
    sys.exit("floors bench: FAIL: missing or non-positive figure(s): %s"
             % (", ".join(bad) or "sum or crawler"))
EOF
if [[ -n "${BENCH_PERF:-}" ]]; then
  echo "crawler profile (BENCH_PERF), share of its cpu-clock samples and ms/page, by shared object:"
  perf report -i "$tmp/perf.data" --no-children --stdio --sort dso 2>/dev/null |
    awk -v cpu="$c_cpu" -v pages="$c_pages" '/^ +[0-9.]+%/ && n++ < 14 {
      p = $1; sub("%", "", p); printf "  %6.2f%%  %7.4f ms/page  %s\n", p, p / 100 * cpu * 1e3 / pages, $2 }'
  echo "by thread (tid:comm) and shared object (top 16):"
  perf report -i "$tmp/perf.data" --no-children --stdio --sort pid,dso 2>/dev/null |
    grep -E '^ +[0-9]' | head -16 | sed 's/^/  /' || true
  echo "by shared object and symbol (top 25):"
  perf report -i "$tmp/perf.data" --no-children --stdio --sort dso,sym 2>/dev/null |
    grep -E '^ +[0-9]' | head -25 | sed 's/^/  /' || true
fi
echo ok
