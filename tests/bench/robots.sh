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
#   bash tests/bench/robots.sh           full run (7 rounds); fails if the
#       hostile file's worst check passes 20x the small file's (before the
#       cap: 3,279x), the plain rules' 10x (before the index: 39x), or the
#       costliest check the cap allows 1,000x (by design 25-100x: 500
#       searches of the path); loose bounds, the machine is shared.
#   bash tests/bench/robots.sh --smoke   < 30 s: 2 rounds, the same bounds.
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
out=$("$bench" --rounds "$rounds")
echo "$out"
fail=0
for bound in wild:20 plain:10 wild-cap:1000; do
  file=${bound%%:*} max=${bound##*:}
  ratio=$(awk -v f="$file" '$1 == f { print $NF }' <<< "$out")
  if [[ -z $ratio ]] || awk -v r="$ratio" -v m="$max" 'BEGIN { exit !(r > m) }'; then
    echo "robots bench: FAIL: $file: worst check ${ratio:-?}x the small file's (max ${max}x)" >&2
    fail=1
  fi
done
(( fail )) && exit 1
echo "robots bench: OK: hostile file, plain rules and the cap's costliest check within bounds"
