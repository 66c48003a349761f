#!/bin/bash
# `crawler url` end to end: arguments with tabs and newlines inside, stdin
# mode, --href, --base, --option, errors, --help and usage errors.
set -u
crawler="$1"
fail=0
check() { # name expected actual
    if [ "$2" != "$3" ]; then
        echo "FAIL $1"; echo "  expected: $(printf %q "$2")"; echo "  actual:   $(printf %q "$3")"
        fail=$((fail + 1))
    else
        echo "ok $1"
    fi
}
out=$("$crawler" url --base 'http://a/b/c' $'d\te' $'http://ex\nample.COM/x#f' $'\n ../g?x=%7e ' 'ftp://x/' 'http://a:99999/')
check args "http://a/b/de
http://example.com/x
http://a/g?x=~
ERROR not an http(s) URL
ERROR invalid port" "$out"

out=$("$crawler" url --href --base 'http://a/b/c' $'#fr\tag' 'mailto:x@y')
check href "http://a/b/c#frag
mailto:x@y" "$out"

out=$(printf 'http://x/a/../b\nrel\nhttps://www.x/?utm_source=1&b=2&a=1\n' | "$crawler" url --option strip_tracking_params=true --option sort_query_params=true --option strip_www=1)
check stdin "http://x/b
ERROR relative reference without a usable base
https://x/?a=1&b=2" "$out"

long="http://x/$(head -c 3000 /dev/zero | tr '\0' a)"
out=$("$crawler" url "$long")
check too_long "ERROR URL too long" "$out"

"$crawler" url --help | grep -q 'usage: crawler url' || { echo "FAIL help"; fail=$((fail + 1)); }
"$crawler" url --bogus >/dev/null 2>&1; rc=$?
check usage_rc 2 "$rc"
"$crawler" url --option nope=1 x >/dev/null 2>&1; rc=$?
check option_rc 2 "$rc"
"$crawler" url --base 'not a url' x >/dev/null 2>&1; rc=$?
check base_rc 2 "$rc"
if [ $fail -ne 0 ]; then echo "$fail check(s) failed"; exit 1; fi
echo "all url cli checks passed"
