#!/usr/bin/env bash
# `crawler assign` end to end on a generated host list, per method: one
# output line per input host, `host<TAB>agent` with a listed agent; with
# --add, `host<TAB>before<TAB>after` where before is the plain run's agent
# and a host that moves goes to the added agent (about 1/5 of them, 4 -> 5
# agents); with --remove only the removed agent's hosts move; usage errors
# exit 2.
set -euo pipefail
crawler=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
seq 1 20000 | sed 's/.*/www.site&.example.com/' > "$tmp/hosts"
n=$(wc -l < "$tmp/hosts")
for m in perm minhash consistent; do
  "$crawler" assign --method "$m" --agents a,b,c,d < "$tmp/hosts" > "$tmp/plain"
  "$crawler" assign --method "$m" --agents a,b,c,d --add e < "$tmp/hosts" > "$tmp/add"
  "$crawler" assign --method "$m" --agents a,b,c,d --remove b < "$tmp/hosts" > "$tmp/remove"
  bad=$(awk -F'\t' 'NF != 2 || $2 !~ /^[abcd]$/' "$tmp/plain" | wc -l)
  [[ $(wc -l < "$tmp/plain") == "$n" && $bad == 0 ]] ||
    { echo "FAIL $m: plain output malformed ($bad bad lines)"; fail=1; }
  cmp -s <(cut -f1 "$tmp/plain") "$tmp/hosts" || { echo "FAIL $m: hosts not echoed in order"; fail=1; }
  cmp -s <(cut -f1,2 "$tmp/add") "$tmp/plain" || { echo "FAIL $m: --add before column differs from the plain run"; fail=1; }
  bad=$(awk -F'\t' 'NF != 3 || $3 !~ /^[abcde]$/ || ($2 != $3 && $3 != "e")' "$tmp/add" | wc -l)
  moved=$(awk -F'\t' '$2 != $3' "$tmp/add" | wc -l)
  [[ $bad == 0 ]] || { echo "FAIL $m: --add e: $bad lines malformed or moved to another agent"; fail=1; }
  (( moved > n * 15 / 100 && moved < n * 25 / 100 )) ||
    { echo "FAIL $m: --add e moved $moved of $n, want about 1/5"; fail=1; }
  bad=$(awk -F'\t' 'NF != 3 || $3 !~ /^[acd]$/ || ($2 != $3 && $2 != "b")' "$tmp/remove" | wc -l)
  [[ $bad == 0 ]] || { echo "FAIL $m: --remove b: $bad lines malformed or moved from another agent"; fail=1; }
  echo "ok $m: --add e moved $moved of $n"
done
set +e
expect() {
  local want=$1; shift
  "$@" < /dev/null > /dev/null 2>&1
  local rc=$?
  [[ $rc == "$want" ]] || { echo "FAIL: '${*:2}' exited $rc, want $want"; fail=1; }
}
expect 0 "$crawler" assign --help
expect 2 "$crawler" assign --agents a,b
expect 2 "$crawler" assign --method perm
expect 2 "$crawler" assign --method ring --agents a,b
expect 2 "$crawler" assign --method perm --agents a,,b
expect 2 "$crawler" assign --method perm --agents a,b,a
expect 2 "$crawler" assign --method perm --agents a,b --remove c
expect 2 "$crawler" assign --method perm --agents a,b --add b
expect 2 "$crawler" assign --method perm --agents a --remove a
expect 2 "$crawler" assign --method perm --agents a,b --bogus
exit $fail
