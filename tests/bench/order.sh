#!/usr/bin/env bash
# Benchmark: what a crawl order costs. The whole test web is crawled
# (politeness delays at zero) under each order:
#   bfs         --order bfs, no rule (the baseline)
#   depth       --order depth
#   rules0      --order bfs with a rule over 12% of the pages, priority=0:
#               the rule's own cost, the baseline of the next two
#   rules       --order bfs with that rule at priority=3
#   depth+rules --order depth with that rule at priority=3
#   scored      --order bfs --focus (topic 0's words): every HTML page
#               scored, no tiers (the score's own cost)
#   focused     --order focused with that --focus: the links tiered by
#               their page's score
# The web is topical (testweb --topics 8) for every order alike.
# Each crawl gets a fresh test web with the same generation options and
# fetches the same URLs; its CPU time (user + system, /usr/bin/time) over
# the requests the test web logged gives CPU s per 1,000 requests. Rounds
# alternate the orders (bfs, depth, rules0, rules, depth+rules, bfs, ...)
# so load from elsewhere on the machine falls on all of them; the median
# of the rounds is printed, with its ratio to bfs's and to rules0's (goal:
# an order costs <= 1.05x).
# Then the harvest under a page budget (tests/e2e/order_e2e.py priority):
# the share of the rule's pages fetched with --max-pages at 10% and at 20%
# of the web, with the rule and breadth-first; and the harvest rate of a
# focused crawl and of breadth-first (tests/e2e/order_e2e.py focus, 20% of
# the HTML pages).
#
#   tests/bench/order.sh          200 hosts x 50 pages, 5 rounds
#                                 (BENCH_HOSTS, BENCH_PAGES, BENCH_ROUNDS)
#   tests/bench/order.sh --smoke  10 hosts x 10 pages, 1 round, no
#                                 harvest; fails if a crawl fetched nothing
# Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb), python3,
# /usr/bin/time.
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
[[ -x "$tw" && -x "$crawler" ]] || { echo "crawler or testweb not built in $build" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "order bench: needs /usr/bin/time" >&2; exit 1; }

if (( smoke )); then
  hosts=10 pages=10 rounds=1
else
  hosts=${BENCH_HOSTS:-200} pages=${BENCH_PAGES:-50} rounds=${BENCH_ROUNDS:-5}
fi
gen=(--hosts "$hosts" --pages "$pages" --ips 50 --topics 8)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_order.XXXXXX")
tw_pid=""
cleanup() {
  [[ -n "$tw_pid" ]] && kill "$tw_pid" 2>/dev/null && wait "$tw_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
printf 'accept regex /s[0-9]+/p[0-9]*4\\.html$ priority=3\n' >"$tmp/rules.txt"
printf 'accept regex /s[0-9]+/p[0-9]*4\\.html$ priority=0\n' >"$tmp/rules0.txt"
"$tw" --topics 8 --topic-words 0 >"$tmp/focus.txt"

# One crawl of a fresh web under the given flags: prints "CPU_S PAGES".
crawl_once() {
  local run=$tmp/run
  rm -rf "$run" && mkdir -p "$run"
  "$tw" "${gen[@]}" --ready-file "$run/ready" --log "$run/tw.log" >/dev/null 2>&1 &
  tw_pid=$!
  for _ in $(seq 200); do [[ -f $run/ready ]] && break; sleep 0.05; done
  [[ -f $run/ready ]] || { echo "testweb did not start" >&2; exit 1; }
  local http dns
  http=$(sed -n 's/^http_port=//p' "$run/ready")
  dns=$(sed -n 's/^dns_port=//p' "$run/ready")
  "$tw" "${gen[@]}" --http-port "$http" --seeds >"$run/seeds.txt"
  /usr/bin/time -f '%U %S' -o "$run/time" "$crawler" crawl --seeds "$run/seeds.txt" \
    -c "$src/configs/testweb.conf" --dns-server "127.0.0.1:$dns" --allow-private-networks \
    -o "$run/out" --quiet --host-delay 0 --ip-delay 0 --max-connections 64 \
    --set politeness.crawl_delay_cap_ms=0 "$@"
  kill "$tw_pid" && wait "$tw_pid" 2>/dev/null || true
  tw_pid=""
  local n
  n=$(grep -c . "$run/tw.log" || true)
  awk -v n="$n" '{ printf "%.3f %d\n", $1 + $2, n }' "$run/time"
}

names=(bfs depth rules0 rules depth+rules scored focused)
flags=("--order bfs" "--order depth" "--order bfs --rules $tmp/rules0.txt"
       "--order bfs --rules $tmp/rules.txt" "--order depth --rules $tmp/rules.txt"
       "--order bfs --focus $tmp/focus.txt" "--order focused --focus $tmp/focus.txt")
declare -A per_k
for ((r = 0; r < rounds; r++)); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    read -r cpu n < <(crawl_once ${flags[$i]})
    (( n > 0 )) || { echo "order bench: ${names[$i]} fetched nothing" >&2; exit 1; }
    per_k[${names[$i]}]+="$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.4f", 1000 * c / n }') "
    echo "round $((r + 1)) ${names[$i]}: $n requests, ${cpu} s CPU"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(echo "${per_k[bfs]}" | median)
base0=$(echo "${per_k[rules0]}" | median)
echo "web: $hosts hosts x $pages pages, $rounds round(s); CPU seconds per 1,000 requests (median):"
for name in "${names[@]}"; do
  m=$(echo "${per_k[$name]}" | median)
  awk -v n="$name" -v m="$m" -v b="$base" -v b0="$base0" \
    'BEGIN { printf "  %-12s %7.3f  x%.3f of bfs  x%.3f of rules0\n", n, m, m / b, m / b0 }'
done
if (( ! smoke )); then
  echo "harvest (tests/e2e/order_e2e.py priority):"
  for pct in 10 20; do
    ORDER_BUDGET_PCT=$pct CRAWLER_BUILD=$build CRAWLER_SOURCE=$src \
      python3 "$src/tests/e2e/order_e2e.py" priority 2>&1 | grep -E 'budget|FAIL' | sed 's/^/  /' || true
  done
  echo "harvest rate (tests/e2e/order_e2e.py focus):"
  CRAWLER_BUILD=$build CRAWLER_SOURCE=$src python3 "$src/tests/e2e/order_e2e.py" focus 2>&1 |
    grep -E 'harvest|FAIL' | sed 's/^/  /' || true
fi
