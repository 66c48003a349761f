#!/usr/bin/env bash
# `crawler links` end to end on the test pages: the printed set equals the
# .expected set; --charset is honoured; usage errors exit 2.
set -euo pipefail
crawler=$1
pages=$2
fail=0
for name in meta base hidden header-charset; do
  url=$(sed -n 's/^@url //p' "$pages/$name.expected")
  cs=$(sed -n 's/^@charset //p' "$pages/$name.expected")
  args=()
  [[ -n $cs ]] && args=(--charset "$cs")
  got=$("$crawler" links "${args[@]}" "$url" < "$pages/$name.html" | LC_ALL=C sort -u)
  want=$(grep -v '^[@#]' "$pages/$name.expected" | grep . | LC_ALL=C sort -u)
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $name"; diff <(echo "$want") <(echo "$got") || true; fail=1
  else
    echo "ok $name"
  fi
done
set +e
"$crawler" links < /dev/null > /dev/null 2>&1; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: no URL should exit 2, got $rc"; fail=1; }
echo '<a href=x>' | "$crawler" links "not a url" > /dev/null 2>&1; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: bad URL should exit 2, got $rc"; fail=1; }
"$crawler" links --help > /dev/null; rc=$?
[[ $rc == 0 ]] || { echo "FAIL: --help should exit 0"; fail=1; }
exit $fail
