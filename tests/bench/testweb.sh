#!/usr/bin/env bash
# Benchmark: the local test web (testweb) against nginx serving the same
# bytes (testweb --dump), measured with wrk in one run: same pages, same
# connections, threads and duration, keep-alive on both. Each server is
# single-process (nginx: worker_processes 1; testweb: one libuv thread).
# wrk cycles through every HTML page of the web (a Lua script sending the
# right Host header); nginx serves DIR/$host/<path>.
#
#   tests/bench/testweb.sh           full run: prints req/s of both and the
#                                    ratio; exits 1 if testweb < 0.8x nginx
#   tests/bench/testweb.sh --smoke   short run: prints the figures, fails only
#                                    if a server did not answer 200s
# Needs CRAWLER_BUILD (build dir holding tests/testweb/testweb), nginx, wrk,
# python3 (to pick a free port), curl (to compare one page from both).
set -euo pipefail

smoke=0
[[ "${1:-}" == "--smoke" ]] && smoke=1
build=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
tw=$build/tests/testweb/testweb
[[ -x "$tw" ]] || { echo "testweb not built: $tw" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk missing" >&2; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x "$nginx_bin" ]] || { echo "nginx missing" >&2; exit 1; }

if (( smoke )); then
  hosts=4 pages=10 dur=2 conns=32 rounds=1
else
  hosts=${TW_BENCH_HOSTS:-40} pages=${TW_BENCH_PAGES:-100} dur=${TW_BENCH_SECONDS:-8}
  conns=${TW_BENCH_CONNS:-64} rounds=${TW_BENCH_ROUNDS:-3}
fi
threads=1

tmp=$(mktemp -d /tmp/bench_testweb.XXXXXX)
chmod 755 "$tmp"   # nginx workers run as an unprivileged user
tw_pid="" ng_pid=""
cleanup() {
  [[ -n "$tw_pid" ]] && kill "$tw_pid" 2>/dev/null && wait "$tw_pid" 2>/dev/null || true
  [[ -n "$ng_pid" ]] && kill "$ng_pid" 2>/dev/null && wait "$ng_pid" 2>/dev/null || true
  [[ -n "${TW_BENCH_KEEP:-}" ]] || rm -rf "$tmp"
}
trap cleanup EXIT

gen=(--hosts "$hosts" --pages "$pages" --seed 1)
"$tw" "${gen[@]}" --dns-port -1 --ready-file "$tmp/ready" &
tw_pid=$!
for _ in $(seq 500); do [[ -f "$tmp/ready" ]] && break; sleep 0.02; done
[[ -f "$tmp/ready" ]] || { echo "testweb did not start" >&2; exit 1; }
tw_port=$(sed -n 's/^http_port=//p' "$tmp/ready")

# Same bytes for nginx: the dump embeds the same port in its links.
"$tw" "${gen[@]}" --http-port "$tw_port" --dump "$tmp/dump"
npages=$(wc -l < "$tmp/dump/urls.txt")

ng_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/ng/tmp"
cat > "$tmp/ng/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/ng/nginx.pid;
error_log $tmp/ng/error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 100000000;
  open_file_cache max=100000 inactive=60s;
  client_body_temp_path $tmp/ng/tmp/body;
  proxy_temp_path $tmp/ng/tmp/proxy;
  fastcgi_temp_path $tmp/ng/tmp/fastcgi;
  uwsgi_temp_path $tmp/ng/tmp/uwsgi;
  scgi_temp_path $tmp/ng/tmp/scgi;
  server {
    listen 127.0.0.1:$ng_port;
    root $tmp/dump/\$host;
    index index.html;
  }
}
EOF
"$nginx_bin" -p "$tmp/ng" -c "$tmp/ng/nginx.conf" &
ng_pid=$!
for _ in $(seq 250); do
  curl -s -o /dev/null --noproxy '*' "http://127.0.0.1:$ng_port/" 2>/dev/null && break
  sleep 0.02
done

# Both must serve the same bytes for the same page.
first=$(head -1 "$tmp/dump/urls.txt")
hostport=${first#http://}; hostport=${hostport%%/*}
for u in "$first" "$(sed -n '2p' "$tmp/dump/urls.txt")"; do
  path=/${u#http://*/}
  curl -sf --noproxy '*' -H "Host: $hostport" -o "$tmp/a" "http://127.0.0.1:$tw_port$path" \
    || { echo "FAIL: testweb did not serve $u" >&2; exit 1; }
  curl -sf --noproxy '*' -H "Host: $hostport" -o "$tmp/b" "http://127.0.0.1:$ng_port$path" \
    || { echo "FAIL: nginx did not serve $u" >&2; exit 1; }
  cmp -s "$tmp/a" "$tmp/b" || { echo "FAIL: testweb and nginx bytes differ for $u" >&2; exit 1; }
done

cat > "$tmp/cycle.lua" <<'EOF'
-- Cycle through every page URL of the dump with its Host header.
local reqs = {}
local idx = 0
init = function(args)
  for line in io.lines(os.getenv("TW_URLS")) do
    local host, path = line:match("^http://([^/]+)(/.*)$")
    if host then reqs[#reqs + 1] = wrk.format("GET", path, { ["Host"] = host }) end
  end
  idx = math.random(#reqs)
end
request = function()
  idx = idx % #reqs + 1
  return reqs[idx]
end
EOF

# run_wrk PORT -> prints "REQS_PER_SEC NON2XX"
run_wrk() {
  local out rps bad
  out=$(TW_URLS="$tmp/dump/urls.txt" wrk -t"$threads" -c"$conns" -d"${dur}s" \
        -s "$tmp/cycle.lua" "http://127.0.0.1:$1/" 2>&1)
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
  errs=$(awk '/Socket errors:/ {print $0}' <<<"$out")
  [[ -n "$errs" ]] && echo "  ($1) $errs" >&2
  echo "${rps:-0} ${bad:-0}"
}

best_tw=0 best_ng=0
echo "testweb bench: $hosts hosts x $pages pages ($npages HTML pages, 5-60 KB), wrk -t$threads -c$conns -d${dur}s, $rounds round(s), keep-alive"
for r in $(seq "$rounds"); do
  read -r ng bad_ng < <(run_wrk "$ng_port")
  read -r twr bad_tw < <(run_wrk "$tw_port")
  echo "round $r: nginx $ng req/s (non-2xx $bad_ng), testweb $twr req/s (non-2xx $bad_tw)"
  if [[ "$bad_ng" != 0 || "$bad_tw" != 0 ]]; then
    echo "FAIL: non-200 responses" >&2
    exit 1
  fi
  best_ng=$(python3 -c "print(max($best_ng, $ng))")
  best_tw=$(python3 -c "print(max($best_tw, $twr))")
done
ratio=$(python3 -c "print('%.2f' % ($best_tw / $best_ng if $best_ng > 0 else 0))")
echo "nginx:   $best_ng req/s (best of $rounds)"
echo "testweb: $best_tw req/s (best of $rounds)"
echo "ratio testweb/nginx: $ratio"
if python3 -c "import sys; sys.exit(0 if $best_tw > 0 and $best_ng > 0 else 1)"; then :; else
  echo "FAIL: a server served nothing" >&2; exit 1
fi
if (( ! smoke )) && python3 -c "import sys; sys.exit(0 if $ratio < 0.8 else 1)"; then
  echo "FAIL: testweb below 0.8x nginx" >&2
  exit 1
fi
exit 0
