#!/usr/bin/env bash
# Benchmark: a recrawl against an earlier crawl (crawler crawl --previous)
# against that earlier crawl, on the same test web, delays 0.
#   A first crawl of the web at epoch 0; then, for each share of changed
#   pages (0% and 10%: testweb --epoch 1 --change-pct P), a second crawl
#   against the first. Printed, second crawl / first crawl, as ratios:
#   WARC bytes on disk, body bytes sent by the test web, requests and
#   wall-clock seconds (from the test web's log: the first request to the
#   last), CPU seconds and peak RSS (/usr/bin/time), with the
#   conditional requests and 304s the test web saw.
#
#   tests/bench/recrawl.sh           100 hosts x 100 pages
#   tests/bench/recrawl.sh --smoke   8 hosts x 20 pages; fails only if a
#                                    figure is missing, or the unchanged
#                                    web's recrawl got no 304 or fetched
#                                    other URLs than the first crawl
# BENCH_HOSTS / BENCH_PAGES override; BENCH_KEEP=1 keeps the temporary
# folder. Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb),
# python3, /usr/bin/time.
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
  [[ -x $exe ]] || { echo "recrawl bench: $exe not built" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "recrawl bench: needs /usr/bin/time" >&2; exit 1; }
case $mode in
smoke) hosts=8 pages=20 ;;
full) hosts=100 pages=100 ;;
esac
hosts=${BENCH_HOSTS:-$hosts}
pages=${BENCH_PAGES:-$pages}
gen=(--hosts "$hosts" --pages "$pages" --ips 250)

tmp=$(mktemp -d /tmp/bench_recrawl.XXXXXX)
tw_pid=""
stop_web() {
  if [[ -n "$tw_pid" ]]; then
    kill "$tw_pid" 2>/dev/null || true
    wait "$tw_pid" 2>/dev/null || true
    tw_pid=""
  fi
}
cleanup() {
  stop_web
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

port=0
# Serves the web at epoch $2 with $3 % changed per step, logging to $tmp/$1.log.
serve() {
  rm -f "$tmp/ready"
  "$tw" "${gen[@]}" --http-port "$port" --epoch "$2" --change-pct "$3" \
    --ready-file "$tmp/ready" --log "$tmp/$1.log" 2>"$tmp/$1.tw.err" &
  tw_pid=$!
  for _ in $(seq 200); do [[ -f "$tmp/ready" ]] && break; sleep 0.05; done
  [[ -f "$tmp/ready" ]] || { echo "recrawl bench: testweb did not start" >&2; exit 1; }
  port=$(sed -n 's/^http_port=//p' "$tmp/ready")
  dns=$(sed -n 's/^dns_port=//p' "$tmp/ready")
}

# One crawl into $tmp/$1 (more crawler arguments after it).
crawl() {
  local name=$1
  shift
  /usr/bin/time -f "%M %U %S" -o "$tmp/$name.rss" "$crawler" crawl --seeds "$tmp/seeds.txt" \
    -c "$src/configs/testweb.conf" --dns-server "127.0.0.1:$dns" --allow-private-networks \
    -o "$tmp/$name" --quiet --host-delay 0 --ip-delay 0 --set politeness.ip_politeness=false \
    --set politeness.crawl_delay_cap_ms=0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { cat "$tmp/$name.err" >&2; echo "recrawl bench: crawler failed" >&2; exit 1; }
  sleep 0.3 # the test web flushes its log every 100 ms
  stop_web
}

echo "recrawl bench: test web $hosts hosts x $pages pages, delays 0;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
serve first 0 0
"$tw" "${gen[@]}" --http-port "$port" --seeds >"$tmp/seeds.txt"
crawl first
for pct in 0 10; do
  serve "re$pct" 1 "$pct"
  crawl "re$pct" --previous "$tmp/first"
done

python3 - "$tmp" "$mode" <<'EOF'
import glob, os, sys
tmp, mode = sys.argv[1:]

def figures(name):
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(tmp, name + ".log"))]
    rows = [r for r in rows if len(r) >= 8 and r[0].isdigit()]
    t = [int(r[0]) for r in rows]
    return {
        "warc": sum(os.path.getsize(p) for p in glob.glob(os.path.join(tmp, name, "*.warc.gz"))),
        "body": sum(int(r[7]) for r in rows),
        "requests": len(rows),
        "seconds": (max(t) - min(t)) / 1e6 if t else 0.0,
        "n304": sum(1 for r in rows if r[6] == "304"),
        "n200": sum(1 for r in rows if r[6] == "200"),
        "cond": sum(1 for r in rows if r[-1] not in ("-", "")),
        "urls": {(r[2], r[5]) for r in rows},
        "rss": int(open(os.path.join(tmp, name + ".rss")).read().split()[-3]),
        "cpu": sum(map(float, open(os.path.join(tmp, name + ".rss")).read().split()[-2:])),
    }

first = figures("first")
print("first crawl: %d requests (%d answered 200), WARC %.2f MB, body %.2f MB, %.2f s, "
      "CPU %.2f s, peak RSS %d KiB" % (first["requests"], first["n200"], first["warc"] / 1e6,
                                       first["body"] / 1e6, first["seconds"], first["cpu"],
                                       first["rss"]))
bad = []
for pct in (0, 10):
    f = figures("re%d" % pct)
    ratio = lambda k: f[k] / first[k] if first[k] else float("nan")
    print("recrawl, %d%% of pages changed: WARC bytes x%.3f, body bytes x%.3f, requests x%.3f, "
          "seconds x%.2f, CPU x%.2f, peak RSS x%.2f; %d conditional requests, %d answered 304, %d 200" %
          (pct, ratio("warc"), ratio("body"), ratio("requests"), ratio("seconds"), ratio("cpu"), ratio("rss"),
           f["cond"], f["n304"], f["n200"]))
    for k in ("warc", "body", "requests", "seconds"):
        if not f[k] > 0:
            bad.append("recrawl %d%%: %s missing" % (pct, k))
    if pct == 0 and (f["n304"] == 0 or f["urls"] != first["urls"]):
        bad.append("the unchanged web's recrawl: %d 304s, %d URLs not in the first crawl, "
                   "%d missing" % (f["n304"], len(f["urls"] - first["urls"]),
                                   len(first["urls"] - f["urls"])))
if bad:
    print("recrawl bench: " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
EOF
