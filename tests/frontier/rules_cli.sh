#!/bin/bash
# `crawler rules` end to end: the issue's example file (each decision and
# the rule that made it, depth limits), wget's flags before the file's
# rules, the depth column, a URL with no crawl key, malformed files (exit 2
# naming the file and line), an unreadable file, usage errors.
set -u
crawler="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # name expected actual
    if [ "$2" != "$3" ]; then
        echo "FAIL $1"; echo "  expected: $(printf %q "$2")"; echo "  actual:   $(printf %q "$3")"
        fail=$((fail + 1))
    else
        echo "ok $1"
    fi
}
cat > "$tmp/r" <<'RULES'
# ACTION MATCHER PATTERN [depth=N] [priority=N]     first match wins
reject ext    jpg,png,gif,zip
reject regex  [?&](sessionid|sid)=
accept prefix http://example.org/docs/  priority=2
reject host   .ads.example.org          # a leading dot: the host and its subdomains
accept domain example.org               depth=5
RULES
T=$'\t'
out=$(printf '%s\n' 'http://Example.org/a.JPG' 'http://example.org/x?a=1&sid=2' \
    'http://example.org/docs/x 9' 'http://x.ads.example.org/' 'http://www.example.org/a 5' \
    'http://www.example.org/a 6' 'http://other.org/' 'nope' | "$crawler" rules "$tmp/r")
check example "reject${T}http://example.org/a.JPG${T}$tmp/r:2: reject ext    jpg,png,gif,zip
reject${T}http://example.org/x?a=1&sid=2${T}$tmp/r:3: reject regex  [?&](sessionid|sid)=
accept${T}http://example.org/docs/x${T}$tmp/r:4: accept prefix http://example.org/docs/  priority=2
reject${T}http://x.ads.example.org/${T}$tmp/r:5: reject host   .ads.example.org
accept${T}http://www.example.org/a${T}$tmp/r:6: accept domain example.org               depth=5
reject${T}http://www.example.org/a${T}$tmp/r:6: accept domain example.org               depth=5 (depth 6 > 5)
no-match${T}http://other.org/
error${T}nope${T}relative reference without a usable base" "$out"

out=$(printf 'http://example.org/docs/a.pdf\nhttp://example.org/docs/\nhttp://example.org/b.pdf 7\n' |
    "$crawler" rules "$tmp/r" -A pdf --depth 6 -X /docs)
check wget_first "reject${T}http://example.org/docs/a.pdf${T}--exclude-directories: reject dir /docs
reject${T}http://example.org/docs/${T}--exclude-directories: reject dir /docs
reject${T}http://example.org/b.pdf${T}$tmp/r:6: accept domain example.org               depth=5 (depth 7 > 5)" "$out"

out=$(printf 'http://h/a.gif\nhttp://h/a.jpg\nhttp://h/a.png\n' | "$crawler" rules -A gif -A jpg)
check wget_join "no-match${T}http://h/a.gif
no-match${T}http://h/a.jpg
reject${T}http://h/a.png${T}--accept: reject !file gif,jpg" "$out"

printf 'accept host a\n\naccept bogus x\n' > "$tmp/bad"
err=$(echo http://a/ | "$crawler" rules "$tmp/bad" 2>&1 >/dev/null); rc=$?
check bad_rc 2 "$rc"
check bad_msg "crawler rules: $tmp/bad:3: 'bogus': expected a matcher: host, domain, prefix, surt, path, regex, ext, file or dir (a '!' before it negates it)" "$err"
echo http://a/ | "$crawler" rules "$tmp/missing" >/dev/null 2>&1; rc=$?
check missing_rc 1 "$rc"
echo http://a/ | "$crawler" rules --accept-regex '(' >/dev/null 2>&1; rc=$?
check bad_regex_rc 2 "$rc"
"$crawler" rules --depth x < /dev/null >/dev/null 2>&1; rc=$?
check depth_rc 2 "$rc"
"$crawler" rules --bogus < /dev/null >/dev/null 2>&1; rc=$?
check usage_rc 2 "$rc"
"$crawler" rules --help | grep -q 'usage: crawler rules' || { echo "FAIL help"; fail=$((fail + 1)); }
"$crawler" --help | grep -q '^  rules ' || { echo "FAIL listed"; fail=$((fail + 1)); }
if [ $fail -ne 0 ]; then echo "$fail check(s) failed"; exit 1; fi
echo "all rules cli checks passed"
