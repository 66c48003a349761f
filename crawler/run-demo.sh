#!/usr/bin/env bash
# README command (1), the crawler's main job: install the Debian packages when
# missing, build, start the local test web (tests/testweb) on loopback, crawl
# it from its seed list and print what was crawled.
#
# Everything stays on this machine: the test web serves HTTP and DNS on
# 127.0.0.0/8 and the crawler asks only the test web's DNS responder.
#
# Environment: HOSTS, PAGES (size of the web, default 50 x 40), OUT (crawl
# output folder, default build/demo/out), CONFIG (default configs/testweb.conf).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}/normal
demo=${BUILD_DIR:-$root/build}/demo
hosts=${HOSTS:-50}
pages=${PAGES:-40}
out=${OUT:-$demo/out}
config=${CONFIG:-$root/configs/testweb.conf}

bash "$root/crawler/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target crawler testweb >/dev/null

crawler=$build/crawler/crawler
testweb=$build/tests/testweb/testweb
web=(--hosts "$hosts" --pages "$pages" --seed 1)

rm -rf "$demo" && mkdir -p "$demo"
"$testweb" "${web[@]}" --http-port 0 --dns-port 0 \
  --ready-file "$demo/ready" --log "$demo/testweb.log" 2>"$demo/testweb.err" &
web_pid=$!
trap 'kill "$web_pid" 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -s "$demo/ready" ] && break; sleep 0.05; done
[ -s "$demo/ready" ] || { echo "run-demo: the test web did not start" >&2; exit 1; }
http_port=$(sed -n 's/^http_port=//p' "$demo/ready")
dns_port=$(sed -n 's/^dns_port=//p' "$demo/ready")

"$testweb" "${web[@]}" --http-port "$http_port" --seeds >"$demo/seeds.txt"
"$testweb" "${web[@]}" --http-port "$http_port" --expected --agent crawler \
  >"$demo/expected.tsv"
echo "test web: $hosts hosts x $pages pages, HTTP 127.0.1.x:$http_port," \
  "DNS 127.0.0.1:$dns_port, $(wc -l <"$demo/seeds.txt") seeds"

"$crawler" crawl --seeds "$demo/seeds.txt" -c "$config" \
  --dns-server "127.0.0.1:$dns_port" --allow-private-networks -o "$out"

echo
echo "output in $out:"
ls -l "$out"
echo
echo "fetches by status (crawl.log):"
awk -F'\t' '!/^#/ { n[$2]++ } END { for (s in n) printf "  %s %d\n", s, n[s] }' \
  "$out/crawl.log" | sort
awk -F'\t' '!/^#/ { print $4 }' "$out/crawl.log" | sort -u >"$demo/fetched.txt"
cut -f1 "$demo/expected.tsv" | sort -u >"$demo/expected.txt"
echo "distinct URLs fetched: $(wc -l <"$demo/fetched.txt");" \
  "expected by the test web: $(wc -l <"$demo/expected.txt");" \
  "missing: $(comm -13 "$demo/fetched.txt" "$demo/expected.txt" | wc -l);" \
  "unexpected: $(comm -23 "$demo/fetched.txt" "$demo/expected.txt" | wc -l)"
echo "first lines of crawl.log:"
head -5 "$out/crawl.log"
