#!/usr/bin/env bash
# Link extraction speed (parse/links.h) against its floor: libxml2's HTML
# push parser over the same bytes with no callbacks, both timed in one run
# by tests/bench/links/links_bench (best of N rounds each).
#
#   bash tests/bench/links.sh            full run: real HTML from Debian's
#       documentation packages (postgresql-doc-15, python3.11-doc; installed
#       with apt-get when missing and run as root); fails if the extractor is
#       below 0.7x the floor.
#   bash tests/bench/links.sh --smoke    < 60 s: generated pages plus the
#       HTML already in /usr/share/doc; fails if the driver fails, extracts no
#       link, or falls below 0.4x (a loose bound: the machine is shared).
# Needs CRAWLER_BUILD (the build dir; default ./build/normal).
set -euo pipefail
smoke=0
[[ "${1:-}" == "--smoke" ]] && smoke=1
build=${CRAWLER_BUILD:-build/normal}
bench=$build/tests/bench/links/links_bench
if [[ ! -x $bench ]]; then
  cmake --build "$build" --target links_bench >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Generated pages: a link-heavy page and a text-heavy page, deterministic.
gen_pages() {
  local dir=$1 count=$2
  mkdir -p "$dir"
  python3 - "$dir" "$count" <<'EOF'
import random, sys
d, count = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
words = ["crawler", "frontier", "sieve", "politeness", "robots", "link", "page",
         "host", "queue", "budget", "heap", "parse", "fetch", "visit", "delay"]
for i in range(count):
    parts = ["<!DOCTYPE html><html><head><meta charset=utf-8><title>Page %d</title>" % i,
             "<link rel=stylesheet href=/s.css><script>var x = '<a href=/no>';</script>",
             "</head><body><div class=nav><ul>"]
    for j in range(rnd.randint(50, 300)):
        parts.append('<li><a href="/section%d/page-%d.html?ref=%d&amp;x=%d">%s %s</a></li>'
                     % (rnd.randint(0, 50), rnd.randint(0, 10000), j, i,
                        rnd.choice(words), rnd.choice(words)))
    parts.append("</ul></div><div class=content>")
    for p in range(rnd.randint(20, 80)):
        parts.append("<p>" + " ".join(rnd.choice(words) for _ in range(rnd.randint(30, 120)))
                     + ' <a href="../rel/%d.html">more</a></p>' % p)
    parts.append("<!-- <a href=/commented> --></div></body></html>")
    with open("%s/page%04d.html" % (d, i), "w") as f:
        f.write("\n".join(parts))
EOF
}

if (( smoke )); then
  gen_pages "$work/gen" 40
  find "$work/gen" -name '*.html' > "$work/list"
  find /usr/share/doc -name '*.html' -size -2M 2>/dev/null | head -300 >> "$work/list" || true
  rounds=3
  min_ratio=0.4
else
  pkgs=()
  [[ -d /usr/share/doc/postgresql-doc-15/html ]] || pkgs+=(postgresql-doc-15)
  [[ -d /usr/share/doc/python3.11/html ]] || pkgs+=(python3.11-doc)
  if (( ${#pkgs[@]} )); then
    if [[ $(id -u) == 0 ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}" >/dev/null \
        || echo "links bench: could not install ${pkgs[*]}" >&2
    else
      echo "links bench: not root, cannot install ${pkgs[*]}" >&2
    fi
  fi
  : > "$work/list"
  for d in /usr/share/doc/postgresql-doc-15/html /usr/share/doc/python3.11/html; do
    [[ -d $d ]] && find "$d" -name '*.html' >> "$work/list"
  done
  if [[ ! -s $work/list ]]; then
    echo "links bench: no real HTML corpus available; using generated pages" >&2
    gen_pages "$work/gen" 400
    find "$work/gen" -name '*.html' > "$work/list"
  fi
  rounds=5
  min_ratio=0.7
fi

echo "links bench: $(wc -l < "$work/list") files, $rounds rounds"
out=$("$bench" --rounds "$rounds" "$work/list")
echo "$out"
links=$(awk '/^pages/ {print $6}' <<< "$out")
ratio=$(awk '/^ratio/ {print $2}' <<< "$out")
if [[ -z $links || $links -eq 0 ]]; then
  echo "links bench: FAIL: no link extracted" >&2
  exit 1
fi
if awk -v r="$ratio" -v m="$min_ratio" 'BEGIN { exit !(r < m) }'; then
  echo "links bench: FAIL: ratio $ratio < $min_ratio of libxml2's own parse" >&2
  exit 1
fi
if (( ! smoke )); then
  # For information: links alone, without the SimHash text pass.
  echo "without simhash: $("$bench" --rounds "$rounds" --no-simhash "$work/list" | grep '^ratio')"
  # And with page requisites extracted too (images, scripts, CSS url()s).
  echo "with requisites: $("$bench" --rounds "$rounds" --requisites "$work/list" | grep -E '^(pages|ratio)' | tr '\n' ' ')"
fi
echo "links bench: OK: extractor (links + SimHash) at ${ratio}x of libxml2's no-callback parse (min $min_ratio)"
