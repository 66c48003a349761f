#!/usr/bin/env bash
# Frontier + politeness benchmark.
#   full:    ops with 1,000,000 hosts (2 URLs each), then peak RSS with a
#            256 MiB budget while 100,000,000 URLs over 100,000 hosts are
#            queued (several GB go to the spill dir).
#   --smoke: 100,000 hosts; 3,000,000 URLs with a 16 MiB budget; a few s.
# Fails if the driver fails: every popped URL is checked against its per-host
# order, and the peak RSS must stay under budget + 64 MiB.
# Env: CRAWLER_BUILD (build dir), FRONTIER_SPILL_DIR (default /tmp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${CRAWLER_BUILD:-$here/../../build}
bin=$build/tests/bench/frontier/bench_frontier
spill=${FRONTIER_SPILL_DIR:-/tmp}
if [[ ! -x $bin ]]; then
  echo "bench_frontier not built: $bin" >&2
  exit 1
fi
if [[ ${1:-} == --smoke ]]; then
  hosts=100000 per_host=2 budget=16 urls=3000000 rss_hosts=10000
else
  hosts=1000000 per_host=2 budget=256 urls=100000000 rss_hosts=100000
fi
echo "== ops: $hosts hosts, $per_host URLs each =="
"$bin" ops "$hosts" "$per_host"
echo "== rss: budget $budget MiB, $urls URLs over $rss_hosts hosts, spill in $spill =="
"$bin" rss "$budget" "$urls" "$rss_hosts" "$spill"
