/*
 * testweb: the local synthetic web every end-to-end test and benchmark
 * crawls instead of the internet. It is the neutral witness of what a
 * crawler did: its request log says exactly what was asked, and
 * `--expected` says what a polite crawler had to ask.
 *
 * COMMAND-LINE CONTRACT (stable; `testweb --help` prints the same text)
 *
 *   testweb [options]                      serve (HTTP + DNS) until SIGTERM/SIGINT
 *   testweb --seeds    [generation opts]   print seed URLs, one per line
 *   testweb --expected [--agent UA] [generation opts]
 *                                          print the expected set: URL<TAB>STATUS
 *   testweb --hosts-info [generation opts] print host<TAB>ip<TAB>robots_status<TAB>
 *                                          robots_kind<TAB>crawl_delay<TAB>sitemap<TAB>fault
 *   testweb --dump DIR [generation opts]   write every 200 resource of the non-fault
 *                                          hosts as DIR/<host>/<path> (+ DIR/urls.txt)
 *   testweb --judge LOG --agent UA [--judge-delay-ms MS] [--judge-after-us US]
 *                                          [generation opts]: a crawl judged from the
 *                                          log in one pass (judge.h), 'name N' lines
 *
 * How a test starts it:
 *   testweb --http-port 0 --dns-port 0 --ready-file RF --log LOG --hosts 10 ...&
 *   wait until RF exists; RF (written atomically, rename) holds
 *       http_port=N\ndns_port=N\npid=N\n
 *   then `testweb --expected --agent UA --http-port N <same generation opts>`.
 *   Stop with SIGTERM or SIGINT: the log is flushed and the exit status is 0.
 *
 * Generation options (must be identical for serve/--seeds/--expected/--dump;
 * every URL embeds the HTTP port, so pass --http-port = the served port):
 *   --seed S, --hosts N, --pages P, --domain D, --ips K, --http-port N,
 *   --seed-hosts S, --fault hI=MODE (repeatable), --robots-agent NAME,
 *   --crawl-delay SECS, --ipv6, --epoch N, --change-pct P, --copy-pct P,
 *   --topics T.
 *
 * Validators: every 200 carries a weak ETag and Last-Modified; a GET or
 * HEAD with If-None-Match (weak comparison, "*" too) or, without it,
 * If-Modified-Since (IMF-fixdate) that matches is answered 304 Not
 * Modified with both and no body. A page's validators change with its
 * version (--epoch); `testweb --changed` lists the pages that changed.
 *
 * Host hI.D (0 <= I < N) lives on 127.0.1.(1 + I % K); the server listens
 * on the same HTTP port on each of those K addresses and on 127.0.0.1 (use
 * 127.0.0.1:PORT as an HTTP proxy: absolute-form targets), DNS on 127.0.0.1.
 * With --ipv6 it also listens (HTTP and DNS) on ::1, and hosts get address
 * families by I % 4 (IPv4 only, IPv6 only, both, both with a dead IPv4
 * address: tw_host_stack); the log's server_ip column says which listener
 * took each request ("::1" for IPv6).
 *
 * Request log (--log FILE): one TSV line per response:
 *   time_us  conn_id  host  server_ip  method  target_path  status  body_bytes
 * time_us = microseconds since the epoch when the request was parsed;
 * host = lowercase host name without port ("-" if none); target_path =
 * path with query as requested (absolute-form targets reduced to the path);
 * body_bytes = body bytes actually written (HEAD: 0). A request carrying an
 * Authorization header is answered 401 (no page of the test web asks for
 * credentials), so the log shows every one a crawler sent.
 * With --models/--model, three columns follow (what the server saw):
 *   in_flight  rate_1s  service_us
 * in_flight = requests of the same host in service when this one arrived
 * (not counting it); rate_1s = requests of the host that arrived in the
 * last second, this one included; service_us = microseconds from parsing
 * the request to its last byte written (or the connection's end). Both
 * counts are '-' for requests not of a host of the web (unknown host,
 * malformed request). The last column, always there, names the request's
 * conditional headers: '-', 'inm' (If-None-Match), 'ims'
 * (If-Modified-Since) or 'inm,ims'. Without models the log has 9 columns.
 *
 * Server models (--models FILE, --model LINE; see SERVER MODELS in
 * --help and tests/testweb/models.h): per host a latency distribution, a
 * bandwidth, a capacity with 429/503 + Retry-After beyond it, and phases
 * that change them some time after the host's first request. The format
 * is line-based so a plan file can embed the lines or name the file.
 *
 * Layout of the code: gen.c (deterministic web: pages, links, robots, the
 * expected set, dump), server.c (libuv HTTP server, DNS responder, faults,
 * log, model shaping), models.c (model rules, per-host accounting),
 * judge.c (a log judged in one pass), this file (option parsing and
 * dispatch).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testweb/gen.h"
#include "tests/testweb/judge.h"
#include "tests/testweb/models.h"
#include "tests/testweb/server.h"

static const char usage_text[] =
        "usage: testweb [MODE] [OPTIONS]\n"
        "\n"
        "A deterministic synthetic web on loopback for crawler tests.\n"
        "\n"
        "MODES (default: serve)\n"
        "  (none)              serve HTTP on the K host addresses and on 127.0.0.1 (same\n"
        "                      port; 127.0.0.1:PORT works as an HTTP proxy), DNS on\n"
        "                      127.0.0.1, until SIGTERM/SIGINT (then flush the log, exit 0)\n"
        "  --seeds             print the seed URLs, one per line: the front page\n"
        "                      http://hI.D:PORT/ of each non-fault host I < --seed-hosts\n"
        "  --expected          print the expected set, sorted, one 'URL<TAB>STATUS' a line\n"
        "                      (see EXPECTED SET); needs --agent (default 'testcrawler')\n"
        "  --hosts-info        print one line per host: name, ip, robots.txt status,\n"
        "                      robots kind (0-9), crawl-delay ('-' if none), sitemap (0/1),\n"
        "                      fault mode ('-' if none), TAB separated\n"
        "  --dump DIR          write every 200 resource (pages, images, PDFs, robots.txt,\n"
        "                      sitemap.xml) of the non-fault hosts to DIR/<host>/<path>\n"
        "                      ('/' -> index.html), plus DIR/urls.txt (one URL a line,\n"
        "                      HTML pages only); query variants and redirects not dumped\n"
        "  --judge LOG         judge a crawl from this request log in one pass (for webs\n"
        "                      too large for --expected), needs --agent; prints 'name N'\n"
        "                      lines: requests, outside (no host of the web), hosts,\n"
        "                      robots_requests, robots_repeats (beyond a host's first),\n"
        "                      hosts_robots_repeated, robots_violations (a page of a host\n"
        "                      before its robots.txt, or one it disallows),\n"
        "                      politeness_violations (a host's requests closer than\n"
        "                      --judge-delay-ms less 1 ms), near_dup_pairs (pages whose two\n"
        "                      variants were both answered 200), first_us, last_us,\n"
        "                      first_after_us (the first request at or after\n"
        "                      --judge-after-us US; -1 if none)\n"
        "  --changed           print, sorted, the URLs of the expected set (--agent) whose\n"
        "                      pages differ between --since M and --epoch N\n"
        "  --help              this text\n"
        "\n"
        "GENERATION OPTIONS (same values in every mode, or URLs/pages differ)\n"
        "  --seed S            generation seed (default 1); same seed -> same bytes\n"
        "  --hosts N           number of hosts h0..h(N-1) (default 10)\n"
        "  --pages P           HTML pages per host (default 20, min 1)\n"
        "  --domain D          test domain (default web.test)\n"
        "  --ips K             host hI is on 127.0.1.(1 + I % K), 1 <= K <= 250 (default 4)\n"
        "  --ipv6              serve on ::1 too (HTTP and DNS, same ports), and give the\n"
        "                      hosts families by I % 4: 0 IPv4 only (A), 1 IPv6 only\n"
        "                      (AAAA ::1), 2 both, 3 both with a dead IPv4 address (A\n"
        "                      127.0.2.(1 + I % K), where nothing listens: a client\n"
        "                      preferring IPv4 must fall back to ::1). --hosts-info's\n"
        "                      ip column lists both ('127.0.1.3,::1')\n"
        "  --http-port N       HTTP port; 0 = ephemeral when serving (default 0). Other\n"
        "                      modes need the real served port, since URLs embed it\n"
        "  --seed-hosts S      seeds are the front pages of hosts 0..S-1 (default all)\n"
        "  --sitemaps          --expected: for a crawler that follows the sitemaps\n"
        "                      robots.txt lists (and the pages only they list)\n"
        "  --requisites        pages embed requisites (/req/: stylesheets with url()s,\n"
        "                      images with srcset, scripts, style attributes) on their\n"
        "                      host and on two extra hosts hN and hN+1 (N = --hosts)\n"
        "                      that no page links; --expected is then for a crawler\n"
        "                      fetching requisites one hop off domains h0..hN-1: hN's\n"
        "                      stylesheet names hN+1 images it must not fetch\n"
        "  --sitemap-faults    hosts with robots kind 5 also list sitemap_big.xml\n"
        "                      (40 entries), sitemap_huge.xml (100 entries of ~300\n"
        "                      bytes) and sitemap_bad.xml (malformed after 5)\n"
        "  --sitemap-max-urls N  --expected: a crawler reads N entries per sitemap\n"
        "  --robots-agent NAME agent named in the agent-specific robots.txt groups\n"
        "                      (default badbot)\n"
        "  --crawl-delay SECS  value of Crawl-delay lines (default 1)\n"
        "  --epoch N           the web at epoch N (default 0), for recrawls: at each\n"
        "                      step 1..N every HTML page changes with probability\n"
        "                      --change-pct (drawn from the seed, host, page and step):\n"
        "                      one more paragraph, a new ETag and Last-Modified (one\n"
        "                      day later per version); links and the expected set stay\n"
        "  --change-pct P      percent of pages changed per epoch step (default 10)\n"
        "  --since M           --changed: the epoch compared with (default N - 1)\n"
        "  --topics T          topical pages, 2 <= T <= 12 topics (default none): page J\n"
        "                      of host hI (/, /sD/pJ.html, /private/pJ.html and their\n"
        "                      ?q= variants) is about topic (I + J) mod T; a fifth of\n"
        "                      its words are that topic's (--topic-words), a fiftieth\n"
        "                      any topic's; 4 in 5 of its random page links go to a\n"
        "                      page of its topic\n"
        "  --topic-words K     print topic K's words, one a line (needs --topics)\n"
        "  --copy-pct P        percent of pages that repeat another page's payload, as\n"
        "                      boilerplate and soft-404 pages do (default 0): page J > 5\n"
        "                      is then served as the bytes and validators of page J - 5\n"
        "                      when both share a directory (drawn from the seed, host\n"
        "                      and page); the expected set follows those bytes' links\n"
        "  --fault hI=MODE     make host hI a fault host (repeatable). MODE is one of:\n"
        "       slow       200, Content-Length 1000, body at 1 byte per second\n"
        "       endless    200, chunked HTML body that never ends\n"
        "       hugeheaders 200 with about 1 MiB of header lines, then a small body\n"
        "       gzipbomb   200, Content-Encoding: gzip, ~2 MB on the wire that inflates\n"
        "                  to 2 GiB of zeros (sent whatever Accept-Encoding says)\n"
        "       badchunk   200, Transfer-Encoding: chunked with a non-hex chunk size\n"
        "       reset      200, Content-Length 100000, 1000 bytes then TCP RST\n"
        "       trap       normal host plus an infinite calendar: the front page links\n"
        "                  /cal/2026/11/, each /cal/Y/M/ links the next and previous month\n"
        "       429        429 Too Many Requests with Retry-After: 30\n"
        "       robotsredir /robots.txt: 301 -> /rr/4 of h(I+1)%N, each /rr/K 302 ->\n"
        "                  /rr/K-1 of the next host, /rr/0 'Disallow: /' (5 redirects\n"
        "                  across hosts); its other paths are those of a normal host\n"
        "       robotsredir6 the same from /rr/5 of h(I+1)%N: 6 redirects\n"
        "       robotsflaky /robots.txt: 503 to the first 2 requests, then allow all;\n"
        "                  its other paths are those of a normal host\n"
        "       chunked    normal pages, every response Transfer-Encoding: chunked\n"
        "                  (gzip-encoded when asked and the page is in the gzip share)\n"
        "       br         normal pages, every 200 Content-Encoding: br when the request\n"
        "                  accepts br; the gzip share of pages also chunked\n"
        "       kaclose    normal pages, but a connection's second request (a kept-alive\n"
        "                  reuse) is read and the connection closed without an answer\n"
        "                  (logged with status 0)\n"
        "       session    normal host plus a session-ID trap: the front page links\n"
        "                  /sess?sid=1, each /sess?sid=N links /sess?sid=M (a new ID)\n"
        "                  and the same with eleven more query parameters\n"
        "       userinfo   normal host, robots kind 3 (Crawl-delay), whose front page\n"
        "                  also links /u0../u19 as http://uK@hI.D:PORT/uK and page 1\n"
        "                  through the name hI.D. (a final dot): one server, many names\n"
        "       robotszstd /robots.txt: 200 with Content-Encoding: zstd (not decodable)\n"
        "       robotsbadgzip /robots.txt: 200, Content-Encoding: gzip, a corrupt stream\n"
        "       robotsutf8 /robots.txt: 200 with Content-Encoding: utf-8 (no coding)\n"
        "       robots429  /robots.txt: 429 with Retry-After: 1, every time\n"
        "       robotsnx   /robots.txt: 301 to http://nx.hI.D:PORT/robots.txt, a name\n"
        "                  the DNS answers NXDOMAIN\n"
        "                  (these five: the other paths are those of a normal host)\n"
        "                  The fault applies to every path but /robots.txt (allow all).\n"
        "                  Pages of fault hosts link only to their own host (and\n"
        "                  /rx/J stays there), so nothing is discovered through them.\n"
        "\n"
        "SERVER OPTIONS\n"
        "  --dns-port N        UDP port of the DNS responder on 127.0.0.1, 0 = ephemeral\n"
        "                      (default 0); -1 = no DNS\n"
        "  --ttl SECS          TTL of DNS answers (default 60)\n"
        "  --ready-file FILE   when listening, write 'http_port=N\\ndns_port=N\\npid=N\\n'\n"
        "                      to FILE.tmp and rename it to FILE\n"
        "  --conns-file FILE   at exit, one line per listening address: 'ADDRESS N', N\n"
        "                      the most connections it had open at once (idle included)\n"
        "  --log FILE          request log, TSV, one line per response:\n"
        "                      time_us conn_id host server_ip method path status body_bytes\n"
        "                      and with models: in_flight rate_1s service_us (requests of\n"
        "                      the host in service at arrival, not counting this one;\n"
        "                      its arrivals in the last second, this one included; us\n"
        "                      from parsing to the last byte; '-' '-' if no host of the\n"
        "                      web); last, always: cond, the request's conditional\n"
        "                      headers ('-', 'inm', 'ims' or 'inm,ims'). Flushed every\n"
        "                      100 ms and at exit. A request with\n"
        "                      an Authorization header is answered (and logged) 401\n"
        "  --latency-ms MS     delay every response by MS milliseconds (default 0)\n"
        "  --max-conns N       connection cap; beyond it new connections are closed\n"
        "                      at once (default 10000)\n"
        "  --max-request BYTES cap on request line + headers; beyond it 431 and close\n"
        "                      (default 16384)\n"
        "  --idle-ms MS        close idle keep-alive connections after MS (default 30000)\n"
        "  --cache-mb MB       response cache budget (default 256)\n"
        "  --models FILE       server models per host, one rule a line (see SERVER MODELS)\n"
        "  --model LINE        one more rule (repeatable); rules apply in command-line order\n"
        "\n"
        "SERVER MODELS (--models FILE, --model LINE)\n"
        "  One rule a line, '#' starts a comment:\n"
        "      SELECTOR [after DURATION] SETTING [SETTING ...]\n"
        "  SELECTOR: '*' (every host), hI, hA-hB (inclusive), or a glob on the host\n"
        "  name hI.D (case-insensitive, must contain '.', '*', '?' or '[').\n"
        "  SETTING:\n"
        "    latency fixed D | uniform D1 D2 | normal MEAN SD | lognormal MEAN SD\n"
        "          | exponential MEAN   time before the first byte of each response;\n"
        "                               D with its unit: 800us, 50ms, 1.5s; normal is\n"
        "                               cut at 0; lognormal takes the latency's own mean\n"
        "                               and sd. Draws are reproducible: host I's k-th\n"
        "                               request draws the same latency for the same --seed\n"
        "    bandwidth RATE             bytes per second per response (headers + body),\n"
        "                               RATE = N[B|KB|KiB|MB|MiB|GB|GiB][/s] or unlimited;\n"
        "                               written in 10 ms chunks, never faster than RATE\n"
        "    capacity N                 at most N requests of the host in service (waiting\n"
        "                               out latency or being written); beyond, answered at\n"
        "                               once with the 'over' status; 0 = unlimited\n"
        "    over 429|503               that status (default 429)\n"
        "    retry-after N              its Retry-After header, seconds (default 1)\n"
        "  Defaults: latency fixed 0ms, bandwidth unlimited, capacity 0. Every rule\n"
        "  matching a host applies in order, later settings overriding earlier ones.\n"
        "  'after T' rules form a phase starting T after the host's first request,\n"
        "  built on the phase before it (at most 15 distinct offsets). Hosts outside\n"
        "  the web get no model; a fault host's fault responses are counted but not\n"
        "  shaped (its robots.txt is). --latency-ms adds to the model's latency.\n"
        "  The log then carries in_flight, rate_1s and service_us (see --log); an\n"
        "  empty FILE gives those columns and shapes nothing.\n"
        "  Example:\n"
        "      *          latency lognormal 80ms 40ms\n"
        "      h3         latency fixed 50ms\n"
        "      h4-h7      capacity 2 over 503 retry-after 5\n"
        "      h1*.web.test bandwidth 100KB/s\n"
        "      h3         after 5s latency fixed 200ms\n"
        "  A bad line stops testweb (exit 2): 'testweb: models: FILE:LINE: why'.\n"
        "\n"
        "THE WEB\n"
        "  Any host hI.D with I < N is a site (names case-insensitive, no leading zeros).\n"
        "  Requests may use origin-form with a Host header or absolute-form\n"
        "  (GET http://hI.D:PORT/p HTTP/1.1), so the server works as an HTTP proxy\n"
        "  for clients that resolve nothing. Unknown hosts get 404.\n"
        "  Paths of host hI: '/' (page 0), /sJ%5/pJ.html (page J, 0 < J < P, J%10 != 7),\n"
        "  /private/pJ.html (J%10 == 7), PAGE?q=1 and PAGE?q=2 (small variant pages,\n"
        "  near-duplicates of each other: the same text but for numbers),\n"
        "  /img/iJ.png (image/png), /doc/dJ.pdf (application/pdf), /gone/... (404),\n"
        "  /r/J (301 -> page J), /r2/J (302 -> /r/J), /r3/J (301 -> /r2/J),\n"
        "  /rx/J (302 -> page J of host h(I+1)%N; of hI itself on fault hosts),\n"
        "  /loop/a <-> /loop/b (302 loop; linked from front pages of hosts I%5 == 2),\n"
        "  /inf/J (302 -> /inf/J+1, endless), /status/S (status S, 100 <= S <= 999),\n"
        "  /rr/K (see robotsredir); none of them is linked.\n"
        "  /robots.txt, /sitemap.xml (hosts with robots kind 5 or 6, else 404), there\n"
        "  also /sitemap.xml.gz, /sitemap_index.xml (listed by kind 6) and /o/oK.html,\n"
        "  K < 3 (pages listed only by the sitemaps).\n"
        "  Every page links pages J+1 and J+2 (mod P); front pages link the front\n"
        "  page of h(I+1)%N, so every host is reachable from any seed unless a fault\n"
        "  host or robots.txt breaks that ring (the BFS accounts for it). Links are\n"
        "  <a href> (images also <img src>), written absolute (some with upper-case\n"
        "  host), root-relative, ./ and ../ relative, with fragments, duplicated; some\n"
        "  pages carry <base href> to another directory. Links also point to unknown\n"
        "  hosts nxJ.D (DNS NXDOMAIN), to www.example.org (outside the domain) and\n"
        "  to mailto:. About 1/3 of pages are sent gzip-encoded to clients sending\n"
        "  Accept-Encoding: gzip. HTML pages carry 5-60 KB of filler text.\n"
        "  robots.txt kind = (I + seed) % 10: 0 allow all; 1 '*' disallows /private/;\n"
        "  2 the --robots-agent disallows /s1/ and /doc/, '*' allows all; 3 '*'\n"
        "  disallows /s3/ with Crawl-delay; 4 404; 5 allow all + Sitemap; 6 '*' allows\n"
        "  /private/p7.html, disallows /private/, + Sitemap; 7 503; 8 '*' disallows /r/\n"
        "  with Crawl-delay; 9 the --robots-agent disallows /, '*' allows all.\n"
        "\n"
        "EXPECTED SET (--expected --agent UA)\n"
        "  Every URL a polite crawler starting at the seeds must request, each once,\n"
        "  as 'URL<TAB>STATUS', sorted bytewise. Computed by a BFS over the generator:\n"
        "  start at the seeds; follow every <a href> of every 200 text/html response\n"
        "  (resolved against <base href> if present) and every redirect Location.\n"
        "  A URL is listed if it is on a non-fault host hI.D (I < N), and robots.txt\n"
        "  of that host allows it for UA (RFC 9309: UA's product token, i.e. up to\n"
        "  the first '/', matched case-insensitively against user-agent lines, else\n"
        "  the '*' group; longest match wins, Allow on ties; a 404 robots.txt allows\n"
        "  all; a 5xx robots.txt disallows all). For every host with at least one\n"
        "  discovered URL, http://hI.D:PORT/robots.txt is listed with its status.\n"
        "  Fragments dropped; URLs in normalized absolute form: lowercase scheme and\n"
        "  host, explicit :PORT, path and query as generated (no dot segments).\n"
        "  Not listed: URLs of fault hosts (and nothing linked from them), unknown\n"
        "  hosts, other domains, sitemaps (unless --sitemaps: then the sitemaps a\n"
        "  robots.txt lists, and what they list, as links), disallowed URLs.\n"
        "  Compare a crawl with it by taking the request log, dropping fault hosts\n"
        "  (see --hosts-info), and comparing sets of 'http://HOST:PORTPATH<TAB>STATUS'\n"
        "  built from its host, path and status columns (duplicates are retries).\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

enum mode {
	MODE_SERVE,
	MODE_SEEDS,
	MODE_EXPECTED,
	MODE_HOSTS_INFO,
	MODE_DUMP,
	MODE_CHANGED,
	MODE_JUDGE,
	MODE_TOPIC_WORDS
};

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end = NULL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* The serve mode's options, models included. */
struct server_args {
	struct tw_server_options so;
	struct tw_models *models; /* owned; NULL until --models or --model */
	int model_lines;          /* --model lines so far */
};

static int models_option(struct server_args *sa, const char *a, const char *v)
{
	char err[512];
	if (sa->models == NULL && (sa->models = tw_models_create()) == NULL) {
		fprintf(stderr, "testweb: out of memory\n");
		return -1;
	}
	int rc = strcmp(a, "--models") == 0 ? tw_models_load(sa->models, v, err, sizeof err)
	                                    : tw_models_parse(sa->models, v, strlen(v), "--model",
	                                                      ++sa->model_lines, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "testweb: models: %s\n", err);
	return rc;
}

/* Option a with value v if it is a server option: 1 = taken (v used),
 * 0 = not a server option, -1 = bad (message on stderr). */
static int server_option(struct server_args *sa, const char *a, const char *v)
{
	enum { DNS_PORT, TTL, LATENCY, MAX_CONNS, MAX_REQUEST, IDLE, CACHE, NNUM };
	static const struct {
		const char *name;
		long lo, hi;
	} num[NNUM] = { [DNS_PORT] = { "--dns-port", -1, 65535 },
		        [TTL] = { "--ttl", 0, 2147483647L },
		        [LATENCY] = { "--latency-ms", 0, 3600000 },
		        [MAX_CONNS] = { "--max-conns", 1, 1000000 },
		        [MAX_REQUEST] = { "--max-request", 256, 16 * 1024 * 1024 },
		        [IDLE] = { "--idle-ms", 1, 3600000 },
		        [CACHE] = { "--cache-mb", 0, 1 << 20 } };
	static const char *const text[] = { "--ready-file", "--log", "--conns-file", "--models",
		                            "--model" };
	struct tw_server_options *so = &sa->so;
	size_t k = 0, t = 0;
	while (k < NNUM && strcmp(a, num[k].name) != 0)
		k++;
	while (t < sizeof text / sizeof *text && strcmp(a, text[t]) != 0)
		t++;
	if (k == NNUM && t == sizeof text / sizeof *text)
		return 0;
	if (v == NULL) {
		fprintf(stderr, "testweb: %s needs a value\n", a);
		return -1;
	}
	if (t == 0)
		so->ready_file = v;
	else if (t == 1)
		so->log_file = v;
	else if (t == 2)
		so->conns_file = v;
	else if (t < sizeof text / sizeof *text)
		return models_option(sa, a, v) == 0 ? 1 : -1;
	if (k == NNUM)
		return 1;
	long n = 0;
	if (parse_long(v, num[k].lo, num[k].hi, &n) != 0) {
		fprintf(stderr, "testweb: bad value for %s: %s\n", a, v);
		return -1;
	}
	switch (k) {
	case DNS_PORT: so->dns_port = (int)n; break;
	case TTL: so->ttl = (unsigned)n; break;
	case LATENCY: so->latency_ms = (unsigned)n; break;
	case MAX_CONNS: so->max_conns = (unsigned)n; break;
	case MAX_REQUEST: so->max_request = (size_t)n; break;
	case IDLE: so->idle_ms = (unsigned)n; break;
	case CACHE: so->cache_bytes = (size_t)n << 20; break;
	}
	return 1;
}

/* --judge: the log judged (judge.h); the exit status. */
static int judge(const struct tw_config *cfg, struct tw_judge_options *jo, const char *agent,
                 const char *path)
{
	struct tw_judge_result r;
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "testweb: --judge: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	jo->agent = agent;
	int rc = tw_judge_log(cfg, jo, f, &r);
	fclose(f);
	if (rc != 0)
		return 1;
	tw_judge_write(&r, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct tw_config cfg;
	struct server_args sa = { .models = NULL, .model_lines = 0 };
	enum mode mode = MODE_SERVE;
	const char *dump_dir = NULL, *judge_log = NULL;
	struct tw_judge_options jo = { .slack_us = 1000 };
	const char *agent = "testcrawler";
	long since = -1, topic = 0;
	char err[512];
	int rc = 2, taken;

	tw_config_defaults(&cfg);
	tw_server_options_defaults(&sa.so);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
		long n = 0;
#define NEED_ARG()                                                                                 \
	do {                                                                                       \
		if (v == NULL) {                                                                   \
			fprintf(stderr, "testweb: %s needs a value\n", a);                         \
			goto out;                                                                  \
		}                                                                                  \
		i++;                                                                               \
	} while (0)
#define NUM(lo, hi)                                                                                \
	do {                                                                                       \
		NEED_ARG();                                                                        \
		if (parse_long(v, (lo), (hi), &n) != 0) {                                          \
			fprintf(stderr, "testweb: bad value for %s: %s\n", a, v);                  \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if (strcmp(a, "--seeds") == 0) {
			mode = MODE_SEEDS;
		} else if (strcmp(a, "--expected") == 0) {
			mode = MODE_EXPECTED;
		} else if (strcmp(a, "--hosts-info") == 0) {
			mode = MODE_HOSTS_INFO;
		} else if (strcmp(a, "--dump") == 0) {
			NEED_ARG();
			mode = MODE_DUMP;
			dump_dir = v;
		} else if (strcmp(a, "--judge") == 0) {
			NEED_ARG();
			mode = MODE_JUDGE;
			judge_log = v;
		} else if (strcmp(a, "--judge-delay-ms") == 0) {
			NUM(0, 3600000);
			jo.host_delay_ms = (unsigned)n;
		} else if (strcmp(a, "--judge-after-us") == 0) {
			NUM(0, LONG_MAX);
			jo.after_us = n;
		} else if (strcmp(a, "--changed") == 0) {
			mode = MODE_CHANGED;
		} else if (strcmp(a, "--epoch") == 0) {
			NUM(0, 1000000);
			cfg.epoch = n;
		} else if (strcmp(a, "--change-pct") == 0) {
			NUM(0, 100);
			cfg.change_pct = (int)n;
		} else if (strcmp(a, "--topic-words") == 0) {
			NUM(0, TW_TOPICS_MAX - 1);
			mode = MODE_TOPIC_WORDS;
			topic = n;
		} else if (strcmp(a, "--topics") == 0) {
			NUM(2, TW_TOPICS_MAX);
			cfg.topics = (int)n;
		} else if (strcmp(a, "--copy-pct") == 0) {
			NUM(0, 100);
			cfg.copy_pct = (int)n;
		} else if (strcmp(a, "--since") == 0) {
			NUM(0, 1000000);
			since = n;
		} else if (strcmp(a, "--agent") == 0) {
			NEED_ARG();
			agent = v;
		} else if (strcmp(a, "--seed") == 0) {
			NEED_ARG();
			char *end = NULL;
			errno = 0;
			unsigned long long s = strtoull(v, &end, 10);
			if (errno != 0 || end == v || *end != '\0') {
				fprintf(stderr, "testweb: bad --seed %s\n", v);
				goto out;
			}
			cfg.seed = s;
		} else if (strcmp(a, "--hosts") == 0) {
			NUM(1, 100000000);
			cfg.hosts = n;
		} else if (strcmp(a, "--pages") == 0) {
			NUM(1, 100000000);
			cfg.pages = n;
		} else if (strcmp(a, "--domain") == 0) {
			NEED_ARG();
			if (tw_config_set_domain(&cfg, v) != 0) {
				fprintf(stderr, "testweb: bad --domain %s\n", v);
				goto out;
			}
		} else if (strcmp(a, "--ips") == 0) {
			NUM(1, 250);
			cfg.ips = (int)n;
		} else if (strcmp(a, "--http-port") == 0) {
			NUM(0, 65535);
			cfg.http_port = (int)n;
		} else if (strcmp(a, "--sitemaps") == 0) {
			cfg.sitemaps = 1;
		} else if (strcmp(a, "--ipv6") == 0) {
			cfg.ipv6 = 1;
		} else if (strcmp(a, "--requisites") == 0) {
			cfg.requisites = 1;
		} else if (strcmp(a, "--sitemap-faults") == 0) {
			cfg.sitemap_faults = 1;
		} else if (strcmp(a, "--sitemap-max-urls") == 0) {
			NUM(1, 100000000);
			cfg.sitemap_max_urls = n;
		} else if (strcmp(a, "--seed-hosts") == 0) {
			NUM(0, 100000000);
			cfg.seed_hosts = n;
		} else if (strcmp(a, "--robots-agent") == 0) {
			NEED_ARG();
			if (tw_config_set_robots_agent(&cfg, v) != 0) {
				fprintf(stderr, "testweb: bad --robots-agent %s\n", v);
				goto out;
			}
		} else if (strcmp(a, "--crawl-delay") == 0) {
			NEED_ARG();
			if (tw_config_set_crawl_delay(&cfg, v) != 0) {
				fprintf(stderr, "testweb: bad --crawl-delay %s\n", v);
				goto out;
			}
		} else if (strcmp(a, "--fault") == 0) {
			NEED_ARG();
			if (tw_config_add_fault(&cfg, v) != 0) {
				fprintf(stderr, "testweb: bad --fault %s (want hI=MODE)\n", v);
				goto out;
			}
		} else if ((taken = server_option(&sa, a, v)) != 0) {
			if (taken < 0)
				goto out;
			i++;
		} else {
			fprintf(stderr, "testweb: unknown option %s (see --help)\n", a);
			goto out;
		}
#undef NUM
#undef NEED_ARG
	}
	if (tw_config_check(&cfg) != 0) {
		fprintf(stderr, "testweb: inconsistent options (fault host beyond --hosts?)\n");
		goto out;
	}
	if (sa.models != NULL &&
	    tw_models_bind(sa.models, cfg.domain, cfg.hosts, cfg.seed, err, sizeof err) != 0) {
		fprintf(stderr, "testweb: models: %s\n", err);
		goto out;
	}
	sa.so.models = sa.models;
	if (mode == MODE_TOPIC_WORDS) {
		if (topic >= cfg.topics) {
			fprintf(stderr, "testweb: --topic-words K needs --topics T with K < T\n");
			goto out;
		}
		for (int k = 0; k < TW_TOPIC_WORDS; k++)
			printf("%s\n", tw_topic_word(topic, k));
		rc = fflush(stdout) != 0;
		goto out;
	}
	if (mode != MODE_SERVE && cfg.http_port == 0) {
		fprintf(stderr, "testweb: this mode needs --http-port N (the served port)\n");
		goto out;
	}
	switch (mode) {
	case MODE_SERVE: rc = tw_server_run(&cfg, &sa.so) == 0 ? 0 : 1; break;
	case MODE_SEEDS: rc = tw_seeds_write(&cfg, stdout) == 0 ? 0 : 1; break;
	case MODE_EXPECTED: rc = tw_expected_write(&cfg, agent, stdout) == 0 ? 0 : 1; break;
	case MODE_HOSTS_INFO: rc = tw_hosts_info_write(&cfg, stdout) == 0 ? 0 : 1; break;
	case MODE_DUMP: rc = tw_dump(&cfg, dump_dir) == 0 ? 0 : 1; break;
	case MODE_JUDGE: rc = judge(&cfg, &jo, agent, judge_log); break;
	case MODE_TOPIC_WORDS: break; /* done above */
	case MODE_CHANGED:
		rc = tw_changed_write(&cfg, agent, since >= 0 ? since : cfg.epoch - 1, stdout) == 0
		             ? 0
		             : 1;
		break;
	}
	if (fflush(stdout) != 0)
		rc = 1;
out:
	tw_models_destroy(sa.models);
	tw_config_release(&cfg);
	return rc;
}
