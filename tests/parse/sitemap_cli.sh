#!/usr/bin/env bash
# `crawler sitemaps` end to end: a gzip sitemap read from stdin prints its
# entries (crawl key, kind, lastmod) in order; --scope host drops another
# host's loc; a sitemap index prints sitemaps; a malformed one keeps the
# entries before the error and names it on stderr; usage errors exit 2.
set -euo pipefail
crawler=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # name want got
  if [[ "$2" != "$3" ]]; then
    echo "FAIL $1"; diff <(echo "$2") <(echo "$3") || true; fail=1
  else
    echo "ok $1"
  fi
}
ns='http://www.sitemaps.org/schemas/sitemap/0.9'
printf '<?xml version="1.0"?><urlset xmlns="%s"><url><loc>http://example.com/a/../b</loc><lastmod>2024-01-02</lastmod></url><url><loc> http://other.example/c </loc></url></urlset>' "$ns" | gzip > "$tmp/s.xml.gz"
got=$("$crawler" sitemaps http://example.com/sitemap.xml.gz < "$tmp/s.xml.gz")
check gzip "$(printf 'http://example.com/b\turlset\t2024-01-02\nhttp://other.example/c\turlset')" "$got"
got=$("$crawler" sitemaps --scope host http://example.com/sitemap.xml.gz < "$tmp/s.xml.gz")
check scope-host "$(printf 'http://example.com/b\turlset\t2024-01-02')" "$got"
got=$(printf '<sitemapindex xmlns="%s"><sitemap><loc>http://example.com/s1.xml</loc></sitemap></sitemapindex>' "$ns" |
      "$crawler" sitemaps http://example.com/index.xml)
check index "$(printf 'http://example.com/s1.xml\tsitemapindex')" "$got"
got=$(printf '<urlset>\n<url><loc>http://example.com/1</loc></url>\n<url><loc>http://e' |
      "$crawler" sitemaps http://example.com/s.xml 2> "$tmp/err")
check malformed-kept "$(printf 'http://example.com/1\turlset')" "$got"
grep -q '^crawler sitemaps: malformed: line 3: ' "$tmp/err" || { echo "FAIL malformed message: $(cat "$tmp/err")"; fail=1; }
set +e
"$crawler" sitemaps < /dev/null > /dev/null 2>&1; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: no URL should exit 2, got $rc"; fail=1; }
"$crawler" sitemaps /relative.xml < /dev/null > /dev/null 2>&1; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: bad URL should exit 2, got $rc"; fail=1; }
"$crawler" sitemaps --scope nowhere http://example.com/s.xml < /dev/null > /dev/null 2>&1; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: bad --scope should exit 2, got $rc"; fail=1; }
"$crawler" sitemaps --help > /dev/null; rc=$?
[[ $rc == 0 ]] || { echo "FAIL: --help should exit 0"; fail=1; }
exit $fail
