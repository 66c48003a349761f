#!/usr/bin/env bash
# Benchmark: `crawler crawl` on the local test web with politeness delays at
# zero, beside references measured in the same run on the same web:
#   - wrk fetching every HTML page of the web (no parsing): the ceiling;
#   - wget -r (the test web as its HTTP proxy, so wget resolves nothing);
#   - Scrapy (Debian python3-scrapy, a CrawlSpider with ROBOTSTXT_OBEY and
#     high concurrency; its resolver answers from the test web's host
#     table), full run only; installed with apt-get when missing (as root).
# Distinct pages fetched with status 200 per second are judged from the test
# web's own log (each tool gets a fresh test web with the same generation
# options). Also printed: MB/s, CPU seconds per 1,000 pages, peak RSS, and
# the rate to 90% coverage: the test web's expected set (`testweb
# --expected`, every URL a polite crawler must request once) is covered by
# the first request of each of its URLs; the time to 90% runs from the
# client's start to the request that covers ceil(0.9 x expected), and the
# rate is that count over that time. Wasted requests: repeats of a URL
# already requested (but for a robots.txt answered 5xx, which must be asked
# again) and requests outside the expected set.
#
#   tests/bench/crawl.sh           full: 1,000 hosts x 100 pages (>= 100,000
#                                  pages); BENCH_HOSTS / BENCH_PAGES /
#                                  BENCH_WGET_SECONDS / BENCH_SCRAPY_SECONDS
#   tests/bench/crawl.sh --web40   40 hosts x 100 pages (4,000 HTML pages of
#                                  5-60 KB, 23 KB on average), crawler and
#                                  wget only
#   tests/bench/crawl.sh --smoke   tiny web, crawler + wget only, < 60 s;
#                                  fails if the crawler fetched nothing,
#                                  wasted a request or broke politeness
#                                  (host delay 20 ms there)
# BENCH_BASELINE=BUILD_DIR: that build's crawler runs too, first, on its
# own fresh web (A/B in one run), and its rate to 90% is set beside.
# BENCH_TMPDIR (default /dev/shm, else /tmp): where every client writes.
# BENCH_CRAWL_SECONDS (default 1800): a crawler still running then is
# stopped and the run fails.
# BENCH_PERF=1: the crawler runs under `perf record` (cpu-clock samples,
# all its threads); its profile by thread and by symbol is printed after
# its figures (the samples slow it a little: judge speed without it).
# Needs CRAWLER_BUILD (crawler/crawler, tests/testweb/testweb), python3,
# wget, /usr/bin/time (optional), wrk (full run), perf (BENCH_PERF only).
set -euo pipefail

smoke=0 web40=0
case "${1:-}" in
--smoke) smoke=1 ;;
--web40) web40=1 ;;
"") ;;
*) echo "usage: $0 [--smoke | --web40]" >&2; exit 2 ;;
esac
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
src=${CRAWLER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
tw=$build/tests/testweb/testweb
crawler=$build/crawler/crawler
[[ -x "$tw" && -x "$crawler" ]] || { echo "crawler or testweb not built in $build" >&2; exit 1; }

if (( smoke )); then
  hosts=10 pages=20 host_delay=20 wget_secs=15 scrapy_secs=0
elif (( web40 )); then
  hosts=${BENCH_HOSTS:-40} pages=${BENCH_PAGES:-100} host_delay=0
  wget_secs=${BENCH_WGET_SECONDS:-120} scrapy_secs=0
else
  hosts=${BENCH_HOSTS:-1000} pages=${BENCH_PAGES:-100} host_delay=0
  wget_secs=${BENCH_WGET_SECONDS:-300} scrapy_secs=${BENCH_SCRAPY_SECONDS:-120}
fi
gen=(--hosts "$hosts" --pages "$pages" --ips 250)
# a crawler that hangs fails the run instead of holding it forever
crawl_secs=${BENCH_CRAWL_SECONDS:-1800}

# Every client writes to tmpfs (/dev/shm) when there is one: wget saves a
# file per page, and on this machine's virtual disk its system time doubled
# from one run to the next (4 s -> 8.8 s on 40 hosts), and its time to 90%
# with it. BENCH_TMPDIR chooses another folder.
tmp_root=${BENCH_TMPDIR:-/dev/shm}
if [[ -z "${BENCH_TMPDIR:-}" ]] && ! { [[ -d $tmp_root && -w $tmp_root ]]; }; then
  echo "crawl bench: no writable /dev/shm, writing to /tmp (wget's times move with the disk)" >&2
  tmp_root=/tmp
fi
tmp=$(mktemp -d "$tmp_root/bench_crawl.XXXXXX")
tw_pid=""
cleanup() {
  [[ -n "$tw_pid" ]] && kill "$tw_pid" 2>/dev/null && wait "$tw_pid" 2>/dev/null || true
  [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

# start_web NAME: a fresh test web logging to $tmp/NAME.log; sets port, dns.
start_web() {
  local name=$1
  rm -f "$tmp/ready"
  "$tw" "${gen[@]}" --ready-file "$tmp/ready" --log "$tmp/$name.log" 2>"$tmp/$name.tw.err" &
  tw_pid=$!
  for _ in $(seq 200); do [[ -f "$tmp/ready" ]] && break; sleep 0.05; done
  [[ -f "$tmp/ready" ]] || { echo "testweb did not start" >&2; exit 1; }
  port=$(sed -n 's/^http_port=//p' "$tmp/ready")
  dns=$(sed -n 's/^dns_port=//p' "$tmp/ready")
  "$tw" "${gen[@]}" --http-port "$port" --seeds > "$tmp/seeds.txt"
  "$tw" "${gen[@]}" --http-port "$port" --expected --agent crawler > "$tmp/$name.expected"
}
# stop_web: also prints the test web's own CPU seconds (it shares the two
# cores with the client: a saturated machine shows here).
stop_web() {
  local st rc=0
  # (an exited child stays a zombie, state Z, until waited for)
  if st=$(cat "/proc/$tw_pid/stat" 2>/dev/null) && st=${st##*) } && [[ ${st:0:1} != Z ]]; then
    awk -v t="$(getconf CLK_TCK)" '{ printf "  (test web CPU: %.1f s)\n", ($12 + $13) / t }' <<< "$st"
    kill "$tw_pid" 2>/dev/null || true
    wait "$tw_pid" 2>/dev/null || true
  else
    wait "$tw_pid" 2>/dev/null || rc=$?
    echo "  WARNING: the test web had exited before the client's end (status $rc): the next figures are not valid"
  fi
  tw_pid=""
}

# timed NAME CMD...: runs CMD with /usr/bin/time; writes $tmp/NAME.time
# ("elapsed user sys maxrss_kb").
timed() {
  local name=$1; shift
  local rc=0
  date +%s%N > "$tmp/$name.start"
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/$name.time" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  else
    local t0; t0=$(date +%s.%N)
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
    echo "$(echo "$(date +%s.%N) - $t0" | bc) 0 0 0" > "$tmp/$name.time"
  fi
  return $rc
}

# report NAME: figures from the test web log + the time file, then the
# rate to 90% coverage against the expected set (coverage.py); $tmp/NAME.log.fig
# gets "pages rate cpu violations rate90 wasted reached90" for the summary.
report() {
  sleep 0.3 # the test web flushes its log every 100 ms
  python3 - "$tmp/$1.log" "$tmp/$1.time" "$1" "$host_delay" <<'EOF'
import sys
log, timef, name, delay_ms = sys.argv[1:5]
delay_ms = int(delay_ms)
rows = []
for line in open(log):
    f = line.rstrip("\n").split("\t")
    if len(f) >= 8 and f[0].isdigit():
        rows.append((int(f[0]), f[1], f[2].lower(), f[3], f[5], int(f[6]), int(f[7])))
rows.sort()
lines = [l for l in open(timef).read().splitlines() if l and l[0].isdigit()]
el, user, sys_, rss = ((lines[-1].split() if lines else []) + ["0"] * 4)[:4]
el, cpu = float(el), float(user) + float(sys_)
pages = set((r[2], r[4]) for r in rows if r[5] == 200)
nbytes = sum(r[6] for r in rows)
viol = 0
if delay_ms:
    last = {}
    for r in rows:
        if r[2] in last and r[0] - last[r[2]] + 1000 < delay_ms * 1000:
            viol += 1
        last[r[2]] = r[0]
n = len(pages)
print("%-8s %8d pages200 %8d requests %7.1f s %9.1f pages/s %7.2f MB/s %7.3f cpu-s/1000p %8s KiB peak RSS  politeness violations %d"
      % (name, n, len(rows), el, n / el if el else 0, nbytes / el / 1e6 if el else 0,
         cpu * 1000 / n if n else 0, rss, viol))
open(log + ".fig", "w").write("%d %f %f %d " % (n, n / el if el else 0,
    cpu * 1000 / n if n else 0, viol))
EOF
  python3 "$src/tests/bench/coverage.py" judge "$tmp/$1.log" "$tmp/$1.expected" \
    "$(cat "$tmp/$1.start")" > "$tmp/$1.cover"
  head -n -1 "$tmp/$1.cover"
  tail -n 1 "$tmp/$1.cover" >> "$tmp/$1.log.fig"
}

echo "test web: $hosts hosts x $pages pages, delays ${host_delay} ms"

# 1. our crawler (and BENCH_BASELINE's before it, on a fresh web each)
# run_crawler NAME EXE [PROFILER...]
run_crawler() {
  local name=$1 exe=$2; shift 2
  start_web "$name"
  timed "$name" timeout "$crawl_secs" "$@" "$exe" crawl --seeds "$tmp/seeds.txt" -c "$src/configs/testweb.conf" \
    --dns-server "127.0.0.1:$dns" --allow-private-networks -o "$tmp/out.$name" --quiet \
    --host-delay "$host_delay" --ip-delay 0 --set politeness.ip_politeness=false \
    --set politeness.crawl_delay_cap_ms="$host_delay" --max-connections 1024 \
    --set output.warc=true || { cat "$tmp/$name.err" >&2; echo "$name failed" >&2; exit 1; }
  stop_web
  report "$name"
}
if [[ -n "${BENCH_BASELINE:-}" ]]; then
  [[ -x $BENCH_BASELINE/crawler/crawler ]] || { echo "no crawler in $BENCH_BASELINE" >&2; exit 1; }
  run_crawler baseline "$BENCH_BASELINE/crawler/crawler"
fi
prof=()
[[ -n "${BENCH_PERF:-}" ]] && prof=(perf record -q -e cpu-clock -F 499 -o "$tmp/perf.data" --)
run_crawler crawler "$crawler" "${prof[@]}"
if [[ -n "${BENCH_PERF:-}" ]]; then
  echo "profile of the crawler (share of its CPU samples), by thread (tid:comm) and shared object:"
  perf report -i "$tmp/perf.data" --no-children --stdio --sort pid,dso 2>/dev/null \
    | grep -E '^ +[0-9]' | head -16 | sed 's/^/  /' || true
  echo "by shared object and symbol (top 25):"
  perf report -i "$tmp/perf.data" --no-children --stdio --sort dso,sym 2>/dev/null \
    | grep -E '^ +[0-9]' | head -25 | sed 's/^/  /' || true
fi

# 2. wget -r through the test web as proxy (robots on, spanning hosts).
start_web wget
mkdir -p "$tmp/wget"
# wget never ends on these webs (it asks every link again with each query
# string, ~300,000 requests on 40 hosts): it is stopped once it covers 90%
# of the expected set, or at its time limit.
http_proxy="http://127.0.0.1:$port" timed wget timeout "$wget_secs" wget -q -r -l inf -H \
  --domains=web.test -e robots=on -e use_proxy=on -U crawler -P "$tmp/wget" \
  -i "$tmp/seeds.txt" &
wget_job=$!
if python3 "$src/tests/bench/coverage.py" watch "$tmp/wget.log" "$tmp/wget.expected" "$wget_job"; then
  # the job's shell runs /usr/bin/time, which runs timeout: TERM to timeout
  # ends wget (timeout passes it on)
  time_pid=$(cat "/proc/$wget_job/task/$wget_job/children" 2>/dev/null || true)
  for p in $time_pid; do
    for q in $(cat "/proc/$p/task/$p/children" 2>/dev/null || true); do kill "$q" 2>/dev/null || true; done
  done
fi
wait "$wget_job" || true
stop_web
report wget

# 3. Scrapy (full run only; apt-get installs it when missing): Debian's python3, not a venv's
# (a pyenv shim may come first on PATH). Scrapy connects to the hosts
# directly: its resolver (DNS_RESOLVER, a process-wide setting) answers the
# test web's names from the test web's own host table (--hosts-info), and
# refuses every other name, so nothing leaves loopback.
py=/usr/bin/python3
if (( scrapy_secs > 0 )) && ! "$py" -c 'import scrapy' 2>/dev/null; then
  if [[ $(id -u) == 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-scrapy >/dev/null 2>&1 \
      || echo "crawl bench: could not install python3-scrapy" >&2
  else
    echo "crawl bench: not root, cannot install python3-scrapy" >&2
  fi
fi
if (( scrapy_secs > 0 )) && "$py" -c 'import scrapy' 2>/dev/null; then
  start_web scrapy
  "$tw" "${gen[@]}" --http-port "$port" --hosts-info | cut -f1,2 > "$tmp/hosts.tsv"
  cat > "$tmp/benchresolver.py" <<'EOF'
import os
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

HOSTS = dict(l.split()[:2] for l in open(os.environ["BENCH_HOSTS_TSV"]) if len(l.split()) >= 2)

@implementer(IResolverSimple)
class TestWebResolver:
    """Names of the test web from its host table; any other name fails."""
    def __init__(self, reactor):
        self.reactor = reactor
    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls(reactor)
    def install_on_reactor(self):
        self.reactor.installResolver(self)
    def getHostByName(self, name, timeout=()):
        ip = HOSTS.get(name.lower().rstrip("."))
        return defer.succeed(ip) if ip else defer.fail(DNSLookupError(name))
EOF
  cat > "$tmp/spider.py" <<EOF
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
class S(CrawlSpider):
    name = "bench"
    allowed_domains = ["web.test"]
    start_urls = [l.strip() for l in open("$tmp/seeds.txt") if l.strip()]
    # Scope by allowed_domains (OffsiteMiddleware compares host names): the
    # LinkExtractor's allow_domains compares host:port, so with the test
    # web's port in every URL it would keep no link at all.
    rules = (Rule(LinkExtractor(), follow=True),)
    custom_settings = {"ROBOTSTXT_OBEY": True, "CONCURRENT_REQUESTS": 256,
                       "CONCURRENT_REQUESTS_PER_DOMAIN": 8, "DOWNLOAD_DELAY": 0,
                       "AUTOTHROTTLE_ENABLED": False, "RETRY_ENABLED": False,
                       "LOG_LEVEL": "INFO", "USER_AGENT": "crawler",
                       "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False,
                       "DOWNLOAD_TIMEOUT": 5, "DOWNLOAD_MAXSIZE": 4194304,
                       "CLOSESPIDER_TIMEOUT": $scrapy_secs}
EOF
  # DNS_RESOLVER is a process setting, not the spider's; no proxy either.
  BENCH_HOSTS_TSV="$tmp/hosts.tsv" PYTHONPATH="$tmp" \
    timed scrapy env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
    timeout $((scrapy_secs + 60)) "$py" -m scrapy runspider "$tmp/spider.py" \
    -s DNS_RESOLVER=benchresolver.TestWebResolver || true
  stop_web
  report scrapy
  grep -E "'finish_reason'|response_status_count/200'|DNSLookupError" "$tmp/scrapy.err" \
    | head -3 | sed 's/^/  scrapy:/' || true
elif (( smoke || web40 )); then
  echo "scrapy: skipped in --smoke and --web40; measured by the full run"
else
  echo "scrapy: python3-scrapy not installed, skipped"
fi

# 4. wrk: the ceiling (HTML pages of the web, no parsing), full run only.
if (( ! smoke && ! web40 )) && command -v wrk >/dev/null; then
  start_web wrk
  "$tw" "${gen[@]}" --http-port "$port" --dump "$tmp/dump" >/dev/null
  cat > "$tmp/cycle.lua" <<'EOF'
local reqs, i = {}, 0
for line in io.lines(os.getenv("URLS")) do
  local host, path = line:match("^http://([^/]+)(/.*)$")
  if host then reqs[#reqs + 1] = wrk.format("GET", path, { ["Host"] = host }) end
end
request = function() i = i % #reqs + 1; return reqs[i] end
EOF
  URLS="$tmp/dump/urls.txt" wrk -t1 -c64 -d10s -s "$tmp/cycle.lua" "http://127.0.0.1:$port/" \
    > "$tmp/wrk.out" 2>&1 || true
  stop_web
  echo "wrk      $(grep -E 'Requests/sec|Transfer/sec' "$tmp/wrk.out" | tr -s ' ' | tr '\n' ' ')"
  wrk_rate=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.out")
fi

read -r c_pages c_rate c_cpu c_viol c_rate90 c_wasted c_reached < "$tmp/crawler.log.fig"
read -r w_pages w_rate w_cpu w_viol w_rate90 w_wasted w_reached < "$tmp/wget.log.fig"
python3 - "$c_rate" "$w_rate" "$c_cpu" "$w_cpu" "$c_rate90" "$w_rate90" "$w_reached" <<'EOF'
import sys
c, w, cc, wc, c90, w90, w_reached = map(float, sys.argv[1:])
print("crawler / wget pages/s: %.2fx (goal >= 2x); cpu-s per 1000 pages: crawler %.3f, wget %.3f"
      % (c / w if w else float("inf"), cc, wc))
# wget short of 90% at its time limit: its rate is at most the bound shown.
print("rate to 90%% coverage, crawler vs wget: %.1f vs %s%.1f URLs/s: %s%.2fx (goal >= 3x)"
      % (c90, "" if w_reached else "< ", w90, "" if w_reached else "> ", c90 / w90 if w90 else float("inf")))
EOF
if [[ -f "$tmp/baseline.log.fig" ]]; then
  read -r b_pages b_rate b_cpu b_viol b_rate90 b_wasted b_reached < "$tmp/baseline.log.fig"
  python3 -c "import sys; c,b=float(sys.argv[1]),float(sys.argv[2]); print('rate to 90%% coverage, crawler vs baseline: %.2fx' % (c/b if b else 0))" "$c_rate90" "$b_rate90"
fi
if [[ -n "${wrk_rate:-}" ]]; then
  python3 -c "import sys; c,w=float(sys.argv[1]),float(sys.argv[2]); print('crawler / wrk ceiling (pages/s vs requests/s, no parsing): %.2f' % (c/w if w else 0))" "$c_rate" "$wrk_rate"
fi
if [[ -f "$tmp/scrapy.log.fig" ]]; then
  read -r s_pages s_rate s_cpu s_viol < "$tmp/scrapy.log.fig"
  python3 -c "import sys; c,s=float(sys.argv[1]),float(sys.argv[2]); print('crawler / scrapy pages/s: %.2fx (goal >= 20x)' % (c/s if s else float('inf')))" "$c_rate" "$s_rate"
fi
if (( c_pages == 0 )); then echo "FAIL: the crawler fetched nothing" >&2; exit 1; fi
if (( c_viol > 0 )); then echo "FAIL: $c_viol politeness violations" >&2; exit 1; fi
if (( c_wasted > 0 )); then echo "FAIL: the crawler wasted $c_wasted requests" >&2; exit 1; fi
echo ok
