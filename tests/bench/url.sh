#!/usr/bin/env bash
# URL parser throughput: `crawler url` over a generated list of references
# (relative paths, absolute http(s) URLs, queries, dot segments, escapes,
# some IPv4/IPv6 and IDN hosts) against a base, compared with `cat` over the
# same file (the I/O floor), both measured in this run.
#   full:    2,000,000 references;  --smoke: 50,000.
# Fails if the tool fails, prints a line count different from the input's,
# or rejects any of the (all valid) generated references.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${CRAWLER_BUILD:-$here/../../build}
bin=$build/crawler/crawler
if [[ ! -x $bin ]]; then
  echo "crawler not built: $bin" >&2
  exit 1
fi
n=2000000
[[ ${1:-} == --smoke ]] && n=50000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$n" > "$tmp/refs" <<'PY'
import random, sys
random.seed(7)
n = int(sys.argv[1])
words = ["news", "a", "index.html", "img", "2024", "p%41ge", "caf\u00e9", "..", ".", "x y", "~u"]
hosts = ["example.com", "WWW.Example.ORG", "10.0.0.1", "[2001:db8::1]", "b\u00fccher.de", "host:8080"]
out = []
for i in range(n):
    r = random.random()
    path = "/".join(random.choice(words) for _ in range(random.randint(1, 5)))
    q = "?id=%d&utm_source=x" % i if random.random() < 0.3 else ""
    f = "#top" if random.random() < 0.1 else ""
    if r < 0.5:
        out.append(path + q + f)
    elif r < 0.7:
        out.append("/" + path + q + f)
    else:
        out.append("http%s://%s/%s%s%s" % ("s" if r < 0.85 else "", random.choice(hosts), path, q, f))
sys.stdout.write("\n".join(out) + "\n")
PY
lines=$(wc -l < "$tmp/refs")
bytes=$(wc -c < "$tmp/refs")
t0=$(date +%s.%N)
cat "$tmp/refs" > "$tmp/cat.out"
t1=$(date +%s.%N)
"$bin" url --base 'https://site.example/dir/sub/page.html?q=1' < "$tmp/refs" > "$tmp/url.out"
t2=$(date +%s.%N)
out_lines=$(wc -l < "$tmp/url.out")
errors=$(grep -c '^ERROR' "$tmp/url.out" || true)
if [[ $out_lines -ne $lines ]]; then
  echo "FAIL: $lines references in, $out_lines lines out" >&2
  exit 1
fi
if [[ $errors -ne 0 ]]; then
  echo "FAIL: $errors valid references rejected:" >&2
  paste -d' ' "$tmp/refs" "$tmp/url.out" | grep ' ERROR' | head -5 >&2
  exit 1
fi
python3 - "$lines" "$bytes" "$t0" "$t1" "$t2" <<'PY'
import sys
n, b, t0, t1, t2 = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:])
cat, url = max(t1 - t0, 1e-6), max(t2 - t1, 1e-6)
print("references: %d (%.1f MB)" % (n, b / 1e6))
print("cat:         %.3f s  %.1f M lines/s" % (cat, n / cat / 1e6))
print("crawler url: %.3f s  %.2f M URLs/s  (%.1fx the time of cat)" % (url, n / url / 1e6, url / cat))
PY
