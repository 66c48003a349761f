#!/usr/bin/env bash
# Benchmark: what the CDXJ index and the WACZ package cost.
#   1. The crawl's CPU per page with its per-file CDXJ indexes and the
#      sorted index.cdxj at its end (output.cdxj=true, the default) against
#      the same crawl without (false), same test web, delays 0, alternated
#      over BENCH_ROUNDS rounds (best of each); CPU is /usr/bin/time's user
#      + sys, pages the 200s in the test web's log.
#   2. On that crawl's output: `crawler index` with every file's own index
#      whole (a merge), then with them removed (every record read back),
#      and `crawler wacz`: seconds, lines or MB per second, sizes.
#
#   tests/bench/archive.sh           100 hosts x 100 pages, 2 rounds
#   tests/bench/archive.sh --smoke   10 hosts x 20 pages, 1 round; fails only
#                                    if a figure is missing or not positive
# BENCH_HOSTS / BENCH_PAGES / BENCH_ROUNDS override; BENCH_KEEP=1 keeps the
# temporary folder. Needs CRAWLER_BUILD (crawler/crawler,
# tests/testweb/testweb), python3, /usr/bin/time.
set -euo pipefail

mode=full
case "${1:-}" in
--smoke) mode=smoke ;;
"") ;;
*) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
esac
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
tw=$build/tests/testweb/testweb
crawler=$build/crawler/crawler
for exe in "$tw" "$crawler"; do
  [[ -x $exe ]] || { echo "archive bench: $exe not built" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "archive bench: needs /usr/bin/time" >&2; exit 1; }
case $mode in
smoke) hosts=10 pages=20 rounds=1 ;;
full) hosts=100 pages=100 rounds=2 ;;
esac
hosts=${BENCH_HOSTS:-$hosts}
pages=${BENCH_PAGES:-$pages}
rounds=${BENCH_ROUNDS:-$rounds}
gen=(--hosts "$hosts" --pages "$pages" --ips 250)

tmp=$(mktemp -d /tmp/bench_archive.XXXXXX)
tw_pid=""
cleanup() {
  if [[ -n "$tw_pid" ]]; then
    kill "$tw_pid" 2>/dev/null || true
    wait "$tw_pid" 2>/dev/null || true
  fi
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

echo "archive bench: test web $hosts hosts x $pages pages, delays 0, $rounds rounds;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$tw" "${gen[@]}" --ready-file "$tmp/ready" --log "$tmp/web.log" 2>"$tmp/tw.err" &
tw_pid=$!
for _ in $(seq 200); do [[ -f "$tmp/ready" ]] && break; sleep 0.05; done
[[ -f "$tmp/ready" ]] || { echo "archive bench: testweb did not start" >&2; exit 1; }
port=$(sed -n 's/^http_port=//p' "$tmp/ready")
dns=$(sed -n 's/^dns_port=//p' "$tmp/ready")
"$tw" "${gen[@]}" --http-port "$port" --seeds >"$tmp/seeds.txt"

# One crawl into $tmp/$1 with output.cdxj=$2; prints its CPU seconds.
crawl() {
  rm -rf "${tmp:?}/$1"
  /usr/bin/time -f "%U %S" -o "$tmp/$1.time" "$crawler" crawl --seeds "$tmp/seeds.txt" \
    -c "$src/configs/testweb.conf" --dns-server "127.0.0.1:$dns" --allow-private-networks \
    -o "$tmp/$1" --quiet --host-delay 0 --ip-delay 0 --set politeness.ip_politeness=false \
    --set politeness.crawl_delay_cap_ms=0 --set output.cdxj="$2" \
    >"$tmp/$1.out" 2>"$tmp/$1.err" ||
    { cat "$tmp/$1.err" >&2; echo "archive bench: crawler failed" >&2; exit 1; }
  awk '{ print $1 + $2 }' "$tmp/$1.time"
}

best_on="" best_off=""
for r in $(seq "$rounds"); do
  on=$(crawl on true)
  off=$(crawl off false)
  echo "round $r: CPU with the index $on s, without $off s"
  best_on=$(python3 -c "print(min(x for x in [$on, ${best_on:-$on}]))")
  best_off=$(python3 -c "print(min(x for x in [$off, ${best_off:-$off}]))")
done
sleep 0.3
kill "$tw_pid" 2>/dev/null || true
wait "$tw_pid" 2>/dev/null || true
tw_pid=""
pages200=$(python3 - "$tmp/web.log" "$rounds" <<'EOF'
import sys
n = sum(1 for l in open(sys.argv[1]) if l.split("\t")[6:7] == ["200"])
print(n // (2 * int(sys.argv[2])))
EOF
)
[[ -s "$tmp/on/index.cdxj" && ! -e "$tmp/off/index.cdxj" ]] ||
  { echo "archive bench: index.cdxj with output.cdxj=true only: not so" >&2; exit 1; }

# Seconds of one command (wall clock).
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$tmp/cmd.out" 2>"$tmp/cmd.err" || { cat "$tmp/cmd.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print('%.3f' % ($t1 - $t0))"
}
lines=$(wc -l <"$tmp/on/index.cdxj")
warc_mb=$(du -cm "$tmp"/on/*.warc.gz | tail -1 | cut -f1)
t_merge=$(timed "$crawler" index "$tmp/on" --quiet)
rm -f "$tmp"/on/*.cdxj
t_scan=$(timed "$crawler" index "$tmp/on" --quiet)
t_wacz=$(timed "$crawler" wacz "$tmp/on" --quiet)
wacz_mb=$(du -m "$tmp/on/crawl.wacz" | cut -f1)

python3 - "$pages200" "$best_on" "$best_off" "$lines" "$warc_mb" "$t_merge" "$t_scan" \
  "$t_wacz" "$wacz_mb" <<'EOF'
import sys
pages, on, off, lines, warc_mb, merge, scan, wacz, wacz_mb = sys.argv[1:]
pages, lines = int(pages), int(lines)
on, off, merge, scan, wacz = map(float, (on, off, merge, scan, wacz))
warc_mb, wacz_mb = int(warc_mb), int(wacz_mb)
figs = [pages, on, off, lines, merge, scan, wacz]
if any(x <= 0 for x in figs):
    print("archive bench: a figure is missing or not positive: %s" % figs)
    sys.exit(1)
print("crawl: %d pages; CPU per page with the index %.3f ms, without %.3f ms: %.3fx" %
      (pages, 1000 * on / pages, 1000 * off / pages, on / off))
print("crawler index, own indexes whole: %d lines in %.2f s, %.0f lines/s" %
      (lines, merge, lines / merge))
print("crawler index, from the records (%d MB of WARC): %.2f s, %.0f records/s, %.1f MB/s" %
      (warc_mb, scan, lines / scan, warc_mb / scan))
print("crawler wacz: %.2f s for %d MB, %.1f MB/s" % (wacz, wacz_mb, wacz_mb / wacz))
EOF
