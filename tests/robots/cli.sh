#!/usr/bin/env bash
# `crawler robots` end to end: arguments and stdin, agent token, exit codes.
set -euo pipefail
crawler=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'User-agent: *\nDisallow: /\n\nUser-agent: FooBot\nDisallow: /private\nAllow: /private/ok\nCrawl-delay: 2\nSitemap: http://h.example/s.xml\n' > "$work/robots.txt"
fail=0
check() { # expected actual label
  if [[ "$1" != "$2" ]]; then echo "FAIL $3: expected [$1], got [$2]"; fail=1; else echo "ok $3"; fi
}
out=$("$crawler" robots --agent "FooBot/1.2 (+http://bot.example)" "$work/robots.txt" \
  http://h.example/private/x http://h.example/private/ok/y http://h.example/public 'http://h.example/robots.txt' | tr '\n' ' ')
check "disallow allow allow allow " "$out" "arguments"
out=$(printf 'http://h.example/private\nhttp://h.example/x#frag\n' | "$crawler" robots --agent OtherBot "$work/robots.txt" | tr '\n' ' ')
check "disallow disallow " "$out" "stdin, '*' group"
err=$("$crawler" robots --agent FooBot --verbose "$work/robots.txt" http://h.example/ 2>&1 >/dev/null | tr '\n' ' ')
check "crawl-delay: 2 sitemap: http://h.example/s.xml rules: 2 " "$err" "verbose"
set +e
"$crawler" robots "$work/robots.txt" http://h.example/ >/dev/null 2>&1; rc=$?
check 2 "$rc" "missing --agent is a usage error"
"$crawler" robots --agent X "$work/missing.txt" http://h.example/ >/dev/null 2>&1; rc=$?
check 1 "$rc" "unreadable file"
"$crawler" robots --help >/dev/null; rc=$?
check 0 "$rc" "--help"
exit $fail
