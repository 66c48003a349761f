#!/usr/bin/env bash
# The cost of one robots.txt check (politeness/robots.h) on hostile files
# against a plain small robots.txt, timed in one run by
# tests/bench/robots/robots_bench: a file of wildcard rules up to the 500 KiB
# parse limit that every path meets, one of as many wildcard rules as the
# cap lets a check search (the costliest check the crawler makes), and one
# of plain rules up to the limit; paths "/", a short page and a 2,000-byte
# path. Prints ns per check (best of N rounds) and each file's worst path
# as a multiple of the small file's worst.
#
#   bash tests/bench/robots.sh           full run (7 rounds); fails if a
#       file's worst check passes 200x the small file's.
#   bash tests/bench/robots.sh --smoke   < 30 s: 2 rounds, the same bound.
# Needs CRAWLER_BUILD (the build dir; default ./build/normal).
set -euo pipefail
smoke=0
[[ "${1:-}" == "--smoke" ]] && smoke=1
build=${CRAWLER_BUILD:-build/normal}
bench=$build/tests/bench/robots/robots_bench
if [[ ! -x $bench ]]; then
  cmake --build "$build" --target robots_bench >/dev/null
fi
rounds=7
(( smoke )) && rounds=2
max_ratio=200
out=$("$bench" --rounds "$rounds")
echo "$out"
worst=$(awk 'NR > 1 && $1 != "verdicts" && $NF > m { m = $NF } END { print m + 0 }' <<< "$out")
if awk -v w="$worst" -v m="$max_ratio" 'BEGIN { exit !(w > m) }'; then
  echo "robots bench: FAIL: a check costs ${worst}x the small file's (max ${max_ratio}x)" >&2
  exit 1
fi
echo "robots bench: OK: the costliest check is ${worst}x the small file's (max ${max_ratio}x)"
