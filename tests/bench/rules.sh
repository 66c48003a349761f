#!/usr/bin/env bash
# Benchmark: the cost of URL rules (frontier/url_rules.h) per discovered
# URL, set beside what a parse thread spends on the same URLs today, and
# the crawl's CPU per page with the rules applied, predicted and measured.
#
# One test web (testweb --dump) gives the pages; a rules list is generated
# with BENCH_REGEXES (100) regexes of the kinds crawl rules hold (session
# and tracking parameters, calendars, hosts, extensions) and 70 rules of the
# other matchers (host, host suffix, domain, prefix, path, surt, ext),
# shuffled; a few match the test web, most do not. tests/bench/rules/
# rules_bench then extracts every page's links (parse/links.h: tokenizer,
# resolution, crawl keys, SimHash: a parse thread's work per page before the
# sieve), decides each key by the rules with the regex prefilter on and off,
# and runs the same regexes through POSIX regexec for comparison; then the
# crawler crawls the same web served on loopback (delays 0, every feature
# on, as floors.sh), without rules and with the list less the three rules
# that match the test web (so both fetch the same pages), alternately,
# ROUNDS times each. Printed: each figure, the rules' cost as a share of
# link extraction, the rise of the crawl's CPU per page it predicts, and
# the measured A/B: the median CPU per page with the rules over the median
# without (goal <= 1.05).
#
#   tests/bench/rules.sh           full: 40 hosts x 100 pages, 3 rounds
#   tests/bench/rules.sh --smoke   4 hosts x 20 pages, 1 round, < 30 s;
#                                  fails only if a figure is missing or
#                                  not positive, or the crawls differ
# BENCH_HOSTS / BENCH_PAGES / BENCH_ROUNDS / BENCH_REGEXES override;
# BENCH_KEEP=1 keeps the work folder.
# Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb,
# tests/bench/rules/rules_bench), python3, /usr/bin/time.
set -euo pipefail

mode=full
case "${1:-}" in
--smoke) mode=smoke ;;
"") ;;
*) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
esac
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
tw=$build/tests/testweb/testweb
crawler=$build/crawler/crawler
bench=$build/tests/bench/rules/rules_bench
for exe in "$tw" "$crawler" "$bench"; do
  [[ -x $exe ]] || { echo "rules bench: $exe not built" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "rules bench: needs /usr/bin/time" >&2; exit 1; }

case $mode in
smoke) hosts=4 pages=20 rounds=1 ;;
full) hosts=40 pages=100 rounds=3 ;;
esac
hosts=${BENCH_HOSTS:-$hosts}
pages=${BENCH_PAGES:-$pages}
rounds=${BENCH_ROUNDS:-$rounds}
regexes=${BENCH_REGEXES:-100}
gen=(--hosts "$hosts" --pages "$pages" --ips 250)

tmp=$(mktemp -d /tmp/bench_rules.XXXXXX)
tw_pid=""
cleanup() {
  if [[ -n "$tw_pid" ]]; then
    kill "$tw_pid" 2>/dev/null || true
    wait "$tw_pid" 2>/dev/null || true
  fi
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

echo "rules bench: test web $hosts hosts x $pages pages, $regexes regex rules + 70 others," \
  "$rounds round(s); load average $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$regexes" "$tmp/rules" <<'EOF'
import random, sys
n_regex, out = int(sys.argv[1]), sys.argv[2]
r = random.Random(7)
words = ["calendar", "archive", "print", "login", "logout", "cart", "checkout", "search",
         "tag", "feed", "share", "comment", "reply", "edit", "admin", "wp-admin", "cgi-bin",
         "track", "ads", "banner"]
rules = []
for i in range(n_regex):
    w, v = words[i % len(words)], words[(i + 5) % len(words)]
    rules.append("reject regex " + [
        "[?&](%s|%sid)=" % (w, w[:3]),
        "/%s/[0-9]{4}/[0-9]{2}/" % w,
        "[.](%s|%s%d)([?]|$)" % (w[:3], w[:2], i),
        "^https?://[^/]*%s%d[.]" % (w, i),
        "/%s%d/" % (w, i),
        "/%s[-_]?%d" % (w, i),
        "[?&]utm_%s%d=" % (w[:4], i),
        "^https?://%s[.]example[.]com/" % w,
        "/(%s|%s)/page/[0-9]+" % (w, v),
        "%s.*%s" % (w, v),
    ][i % 10])
rules += ["reject host h%d.blocked%d.test" % (i, i) for i in range(20)]
rules += ["reject host .tracker%d.example" % i for i in range(10)]
rules += ["accept domain partner%d.org depth=3" % i for i in range(10)]
rules += ["accept prefix http://docs%d.example.org/manual/ priority=2" % i for i in range(10)]
rules += ["reject path /private%d/" % i for i in range(10)]
rules += ["reject surt (com,example,ads%d," % i for i in range(5)]
rules += ["reject ext exe,dmg,iso", "reject ext mp4,avi", "reject !ext html,pdf,png,jpg,xml,txt"]
rules += ["reject path /gone/", "reject regex [?]q=2$"]
r.shuffle(rules)
open(out, "w").write("".join(x + "\n" for x in rules))
EOF

# 1. The rules against link extraction, on the dumped pages.
"$tw" "${gen[@]}" --http-port 8080 --dump "$tmp/web" >/dev/null
"$bench" --web "$tmp/web" --rules "$tmp/rules" --rounds "$rounds" >"$tmp/bench.out" ||
  { cat "$tmp/bench.out" >&2; echo "rules bench: rules_bench failed" >&2; exit 1; }
rm -rf "$tmp/web"
sed 's/^figure /  /' "$tmp/bench.out"

# 2. The crawler's CPU per page on the same web, served (as floors.sh),
# crawled without rules and with them, alternately, $rounds time(s) each.
# The crawl's rules are the list less the few that match the test web, so
# both crawls fetch the same pages and only the rules' cost differs.
grep -v -e '!ext' -e '/gone/' -e 'q=2[$]' "$tmp/rules" >"$tmp/rules.crawl"
"$tw" "${gen[@]}" --ready-file "$tmp/ready" --log "$tmp/web.log" 2>"$tmp/tw.err" &
tw_pid=$!
for _ in $(seq 200); do [[ -f "$tmp/ready" ]] && break; sleep 0.05; done
[[ -f "$tmp/ready" ]] || { echo "rules bench: testweb did not start" >&2; exit 1; }
port=$(sed -n 's/^http_port=//p' "$tmp/ready")
dns=$(sed -n 's/^dns_port=//p' "$tmp/ready")
"$tw" "${gen[@]}" --http-port "$port" --seeds >"$tmp/seeds.txt"
crawl_once() { # NAME [ARGS...]: one crawl into $tmp/NAME, its time in $tmp/NAME.time
  local name=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/$name.time" \
    "$crawler" crawl --seeds "$tmp/seeds.txt" -c "$src/configs/testweb.conf" \
    --dns-server "127.0.0.1:$dns" --allow-private-networks -o "$tmp/$name" --quiet \
    --host-delay 0 --ip-delay 0 --set politeness.ip_politeness=false \
    --set politeness.crawl_delay_cap_ms=0 --max-connections 1024 \
    --set output.warc=true --set parse.near_dup=true "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { cat "$tmp/$name.err" >&2; echo "rules bench: crawler failed ($name)" >&2; exit 1; }
}
for i in $(seq "$rounds"); do
  crawl_once "plain$i"
  crawl_once "rules$i" --rules "$tmp/rules.crawl"
done
kill "$tw_pid" 2>/dev/null || true
wait "$tw_pid" 2>/dev/null || true
tw_pid=""

python3 - "$tmp/bench.out" "$tmp" "$rounds" <<'EOF'
import json, os, statistics, sys
out, tmp, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
fig = {}
for line in open(out):
    f = line.split()
    if len(f) >= 3 and f[0] == "figure":
        try:
            fig[f[1]] = float(f[2])
        except ValueError:
            pass


def crawl(name):
    """(CPU s, 200 pages, HTML pages, URLs the rules decided) of one crawl"""
    t = [l for l in open(os.path.join(tmp, name + ".time")).read().splitlines()
         if l and l[0].isdigit()][-1].split()
    st = json.load(open(os.path.join(tmp, name, "stats.json")))
    html = 0
    for line in open(os.path.join(tmp, name, "crawl.log")):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 7 and f[1] == "200" and f[6].startswith("text/html"):
            html += 1
    ru = st.get("url_rules", {})
    decided = ru.get("accepted", 0) + ru.get("rejected", 0) + ru.get("no_match", 0)
    return float(t[1]) + float(t[2]), int(st["status"].get("200", 0)), html, decided


plain = [crawl("plain%d" % i) for i in range(1, rounds + 1)]
ruled = [crawl("rules%d" % i) for i in range(1, rounds + 1)]
need = ["links_per_page", "extract_per_page", "rules_per_url", "rules_per_page",
        "rules_noprefilter_per_url", "posix_per_url"]
missing = [n for n in need if fig.get(n, 0) <= 0]
pages, html = plain[0][1], plain[0][2]
if missing or pages <= 0 or html <= 0:
    sys.exit("rules bench: FAIL: missing or non-positive figure(s): %s"
             % (", ".join(missing) or "crawler pages or HTML pages"))
if any(c[1] != pages for c in plain + ruled):
    sys.exit("rules bench: FAIL: the crawls fetched different page counts: %s"
             % [c[1] for c in plain + ruled])
if any(c[3] <= 0 for c in ruled):
    sys.exit("rules bench: FAIL: a crawl with --rules decided no URL by them (stats.json)")
cpu_plain = statistics.median(c[0] for c in plain)
cpu_rules = statistics.median(c[0] for c in ruled)
print("rules: %.0f ns a URL (%.0f without the prefilter, %.1fx; POSIX regexec of the"
      " regexes alone %.0f ns, %.1fx slower than the rules)"
      % (fig["rules_per_url"], fig["rules_noprefilter_per_url"],
         fig["rules_noprefilter_per_url"] / fig["rules_per_url"], fig["posix_per_url"],
         fig["posix_per_url"] / fig["rules_per_url"]))
rise = fig["rules_per_page"] * html / (cpu_plain * 1e6)
print("per HTML page (%.1f links): rules %.2f us = %.1f%% of link extraction (%.1f us);"
      " predicted crawl CPU per page rise %.2f%%"
      % (fig["links_per_page"], fig["rules_per_page"], 100 * fig["rules_per_page"] /
         fig["extract_per_page"], fig["extract_per_page"], 100 * rise))
ratio = cpu_rules / cpu_plain
print("crawl A/B, %d pages (200; %d HTML), %d URLs decided by the rules, median of %d:"
      " without rules %.1f us/page (CPU, user + sys, all threads), with them %.1f us/page:"
      " ratio %.3f (goal <= 1.05: %s)"
      % (pages, html, ruled[0][3], rounds, cpu_plain * 1e6 / pages, cpu_rules * 1e6 / pages,
         ratio, "met" if ratio <= 1.05 else "MISSED"))
EOF
echo ok
