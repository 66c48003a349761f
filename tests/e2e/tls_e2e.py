#!/usr/bin/env python3
"""HTTPS and HTTP/2 end to end: the test web behind a TLS front.

At test time: a CA and a server certificate for *.web.test (openssl
command line); nginx, started here with a config in a temporary folder,
listens with TLS and http2 on the test web's host addresses (127.0.1.x)
and proxies to the test web, rewriting its absolute http://...:HTTP_PORT
links and redirects to https://...:TLS_PORT. Three crawls of https:// seeds:

  1. --ca-file CA, DNS servers "DEAD,TESTWEB" (a silent socket first):
     every expected page is fetched once (the test web's log is the
     witness), over HTTP/2, and every WARC record reads back whole with the
     independent reader (tests/crawler/warc_check.py), WARC-Protocol h2.
  2. no CA file: certificates do not verify; tls-cert failures are counted
     in stats.json and the test web sees no request at all.
  3. no CA file, --insecure: the certificates are accepted, pages fetched.
  4. --ca-file CA through an HTTP proxy started here (crawl_e2e.py's, which
     tunnels CONNECT to the address of the host it names): every expected
     page again, the proxy was asked for host names, never addresses, and
     each response record holds the page's own header block.
  5. --resolv-conf FILE (c-ares 1.18 reads no port there, so FILE names a
     UDP relay this test runs on 127.77.0.2:53 in front of the test web's
     DNS; only when the test may bind port 53, else skipped): pages fetched,
     the relay saw the queries. And a FILE with no usable nameserver (a
     "nameserver ADDR:PORT" line) stops the crawler at start with exit 2.

Environment: as crawl_e2e.py (CRAWLER_BUILD, CRAWLER_SOURCE).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crawl_e2e as e2e  # noqa: E402  (TestWeb, observed_set, fail)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
IPS = 2  # host addresses 127.0.1.1 .. 127.0.1.IPS
WARC_CHECK = os.path.join(e2e.SOURCE, "tests", "crawler", "warc_check.py")


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        e2e.fail("%s: %s" % (" ".join(cmd), p.stderr.strip()))


def make_certs(work, domain):
    """CA (ca.pem) and a server certificate for *.domain signed by it."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=crawler test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign"], work)
    run(["openssl", "req"] + ec + ["-keyout", "srv.key", "-out", "srv.csr",
        "-subj", "/CN=*.%s" % domain], work)
    with open(os.path.join(work, "srv.ext"), "w") as f:
        f.write("subjectAltName=DNS:*.%s,DNS:%s\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n" % (domain, domain))
    run(["openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "srv.ext"], work)


class TlsFront:
    """nginx in the foreground (no daemon, no workers), TLS + http2."""

    def __init__(self, work, http_port):
        self.port = e2e.free_port("127.0.1.1")
        d = os.path.join(work, "nginx")
        os.mkdir(d)
        listens = "".join("    listen 127.0.1.%d:%d ssl http2;\n" % (i, self.port)
                          for i in range(1, IPS + 1))
        temps = "".join("  %s_temp_path %s/%s;\n" % (t, d, t)
                        for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""daemon off;
master_process off;
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log notice;
events { worker_connections 512; }
http {
  access_log off;
%(temps)s  server {
%(listens)s    ssl_certificate %(w)s/srv.pem;
    ssl_certificate_key %(w)s/srv.key;
    location / {
      proxy_pass http://127.0.0.1:%(hp)d;
      proxy_http_version 1.1;
      proxy_set_header Host $host;
      proxy_set_header Connection "";
      proxy_set_header Accept-Encoding "";
      proxy_redirect ~^http://([^/:]+):%(hp)d(.*)$ https://$1:%(tp)d$2;
      sub_filter_types *;
      sub_filter_once off;
      sub_filter 'http://' 'https://';
      sub_filter ':%(hp)d' ':%(tp)d';
    }
  }
}
""" % {"d": d, "w": work, "hp": http_port, "tp": self.port, "temps": temps, "listens": listens})
        self.proc = subprocess.Popen([NGINX, "-p", d, "-e", os.path.join(d, "error.log"), "-c", conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.1.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    e2e.fail("nginx did not start: %s" % open(os.path.join(d, "error.log")).read())
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def crawl(tw, out, seeds, dns, extra):
    cmd = [e2e.CRAWLER, "crawl", "--seeds", seeds, "-c",
           os.path.join(e2e.SOURCE, "configs", "testweb.conf"), "--dns-server", dns,
           "--allow-private-networks", "-o", out, "--quiet", "--host-delay", "0", "--ip-delay", "0",
           "--set", "politeness.crawl_delay_cap_ms=0", "--set", "dns.timeout_ms=300"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stdout, p.stderr, file=sys.stderr)
        e2e.fail("crawler exited %d" % p.returncode)
    return json.load(open(os.path.join(out, "stats.json")))


class DnsRelay:
    """UDP relay on 127.77.0.2:53 to the test web's DNS port (None when
    port 53 cannot be bound). Counts the queries it relayed."""

    def __init__(self, dns_port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.77.0.2", 53))
        self.sock.settimeout(0.1)
        self.dns_port = dns_port
        self.queries = 0
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        up.settimeout(1)
        while not self.stopping:
            try:
                q, client = self.sock.recvfrom(2048)
                up.sendto(q, ("127.0.0.1", self.dns_port))
                a, _ = up.recvfrom(4096)
            except OSError:
                continue
            self.queries += 1
            self.sock.sendto(a, client)
        up.close()

    def stop(self):
        self.stopping = True
        self.thread.join()
        self.sock.close()


def start_relay(dns_port):
    try:
        return DnsRelay(dns_port)
    except OSError:
        return None


def resolv_conf_crawls(tw, work, seeds, ca, errors):
    """Crawl 4 (see the module's text); returns a summary for the log."""
    bad = os.path.join(work, "resolv-bad.conf")
    with open(bad, "w") as f:
        f.write("nameserver 127.0.0.1:%d\n" % tw.dns_port)
    p = subprocess.run([e2e.CRAWLER, "crawl", "--resolv-conf", bad, "-o", os.path.join(work, "out-bad"),
                        "--quiet", "https://h0.web.test/"], capture_output=True, text=True, timeout=30)
    if p.returncode != 2 or "resolv-bad.conf" not in p.stderr:
        errors.append("an unusable resolv.conf: exit %d, %r" % (p.returncode, p.stderr))
    relay = start_relay(tw.dns_port)
    if relay is None:
        return "resolv.conf crawl skipped (port 53 not available)"
    try:
        conf = os.path.join(work, "resolv.conf")
        with open(conf, "w") as f:
            f.write("search web.test\nnameserver 127.77.0.2\n")
        cmd = [e2e.CRAWLER, "crawl", "--seeds", seeds, "-c",
               os.path.join(e2e.SOURCE, "configs", "testweb.conf"), "--resolv-conf", conf,
               "--ca-file", ca, "--allow-private-networks", "-o", os.path.join(work, "out-rc"),
               "--quiet", "--host-delay", "0", "--max-pages", "40"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        relay.stop()
    st = json.load(open(os.path.join(work, "out-rc", "stats.json"))) if p.returncode == 0 else None
    if st is None or st["pages"] == 0 or relay.queries == 0:
        errors.append("--resolv-conf crawl: exit %d, pages %s, relayed queries %d: %s" %
                      (p.returncode, st and st["pages"], relay.queries, p.stderr[-300:]))
        return "resolv.conf crawl failed"
    return "resolv.conf crawl: %d pages, %d queries relayed" % (st["pages"], relay.queries)


def logged(tw):
    """The test web's log so far: it flushes every 100 ms."""
    time.sleep(0.3)
    return tw.requests()


def main():
    work = tempfile.mkdtemp(prefix="e2e-tls-")
    gen = ["--hosts", "8", "--pages", "20", "--ips", str(IPS)]
    dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # bound, never answers
    dead.bind(("127.0.0.1", 0))
    tw = e2e.TestWeb(work, gen)
    front = None
    try:
        make_certs(work, "web.test")
        front = TlsFront(work, tw.http_port)
        expected = set(tw.run_mode("--expected", "--agent", e2e.AGENT))
        seeds = os.path.join(work, "seeds.txt")
        with open(seeds, "w") as f:
            for s in tw.run_mode("--seeds"):
                f.write(s.replace("http://", "https://").replace(
                    ":%d/" % tw.http_port, ":%d/" % front.port) + "\n")
        dns_list = "127.0.0.1:%d,127.0.0.1:%d" % (dead.getsockname()[1], tw.dns_port)
        ca = os.path.join(work, "ca.pem")
        out1 = os.path.join(work, "out-ca")
        st1 = crawl(tw, out1, seeds, dns_list, ["--ca-file", ca])
        rows1 = logged(tw)
        out2 = os.path.join(work, "out-noca")
        st2 = crawl(tw, out2, seeds, dns_list, [])
        rows2 = logged(tw)
        out3 = os.path.join(work, "out-insecure")
        st3 = crawl(tw, out3, seeds, dns_list, ["--insecure"])
        rows3 = logged(tw)
        names = dict(f.split("\t")[:2] for f in tw.run_mode("--hosts-info"))
        plog = e2e.ProxyLog(names)
        proxy = e2e.start_proxy("http", plog)
        try:
            crawl(tw, os.path.join(work, "out-proxy"), seeds, dns_list,
                  ["--ca-file", ca, "--proxy", "http://127.0.0.1:%d" % proxy.server_address[1]])
        finally:
            proxy.shutdown()
            proxy.server_close()
        rows4 = logged(tw)
        errors = []
        rc_summary = resolv_conf_crawls(tw, work, seeds, ca, errors)
    finally:
        if front:
            front.stop()
        tw.stop()
        dead.close()
    got = e2e.observed_set(tw, rows1, set())
    missing = sorted(expected - set(got))
    extra = sorted(set(got) - expected)
    # a 5xx robots.txt is asked again at the host's next visit (its URLs wait)
    dups = sorted(k for k, n in got.items() if n > 1 and not re.search(r"/robots\.txt\t5\d\d$", k))
    if missing:
        errors.append("%d expected URLs never requested, e.g. %s" % (len(missing), missing[:5]))
    if extra:
        errors.append("%d unexpected requests, e.g. %s" % (len(extra), extra[:5]))
    if dups:
        errors.append("%d URLs requested more than once, e.g. %s" % (len(dups), dups[:5]))
    if st1["pages"] + st1["robots_fetches"] != len(rows1):
        errors.append("crawl 1: stats.json counts %d pages + %d robots, test web logged %d" %
                      (st1["pages"], st1["robots_fetches"], len(rows1)))
    if st1["errors"].get("tls-cert") or st1["errors"].get("tls"):
        errors.append("crawl 1: TLS errors %s" % st1["errors"])
    p = subprocess.run([sys.executable, WARC_CHECK, out1], capture_output=True, text=True)
    summary = dict(kv.split("=") for kv in p.stdout.split() if "=" in kv)
    if p.returncode != 0:
        errors.append("WARC reader: %s" % p.stdout.strip())
    else:
        records = sum(int(summary[k]) for k in ("request", "response", "revisit"))
        if int(summary["request"]) != len(rows1) or int(summary["h2"]) != records:
            errors.append("WARC: %s for %d requests (every record should be h2)" %
                          (p.stdout.strip(), len(rows1)))
    # An HTTP/1.1 message needs its Host: the h2 request rendering keeps one.
    for w in sorted(f for f in os.listdir(out1) if f.endswith(".warc.gz")):
        for h, block in e2e.read_warc_records(os.path.join(out1, w)):
            if h["warc-type"] == "request" and b"\r\nhost: " not in block.lower():
                errors.append("request record without Host: %r" % block[:200])
                break
    if len(rows2) != len(rows1):
        errors.append("crawl without the CA reached the test web %d times" % (len(rows2) - len(rows1)))
    if not st2["errors"].get("tls-cert") or st2["pages"] != 0:
        errors.append("crawl without the CA: pages %d, errors %s (want tls-cert and no page)" %
                      (st2["pages"], st2["errors"]))
    got4 = set(e2e.observed_set(tw, rows4[len(rows3):], set()))
    tunnels = set(plog.entries)
    want_tunnels = set("CONNECT %s:%d" % (h, front.port) for h in names
                       if any(r[2].split(":")[0] == h for r in rows4[len(rows3):]))
    if got4 != expected or not tunnels or tunnels != want_tunnels:
        errors.append("crawl through the proxy: %d expected never requested, %d unexpected; "
                      "tunnels %s, want %s" % (len(expected - got4), len(got4 - expected),
                                               sorted(tunnels)[:3], sorted(want_tunnels)[:3]))
    # Through the tunnel, each response record is the page's own header
    # block: not the proxy's answer to CONNECT, nothing read as a trailer.
    out4 = os.path.join(work, "out-proxy")
    p4 = subprocess.run([sys.executable, WARC_CHECK, out4], capture_output=True, text=True)
    if p4.returncode != 0:
        errors.append("WARC reader (proxy crawl): %s" % p4.stdout.strip())
    for w in sorted(f for f in os.listdir(out4) if f.endswith(".warc.gz")):
        for h, block in e2e.read_warc_records(os.path.join(out4, w)):
            head = block.split(b"\r\n\r\n", 1)[0].lower()
            if h["warc-type"] == "response" and (b"x-crawler-trailer" in head or
                                                 b"connection established" in head):
                errors.append("proxy crawl: response record %r" % block[:200])
                break
    if st3["pages"] == 0 or st3["errors"].get("tls-cert"):
        errors.append("--insecure crawl: pages %d, errors %s" % (st3["pages"], st3["errors"]))
    print(rc_summary)
    print("tls: %d expected, %d requested with the CA (WARC %s); without: tls-cert %s; "
          "--insecure: %d pages (%d requests); through the proxy: %d requests, %d tunnels" %
          (len(expected), len(rows1), p.stdout.strip(), st2["errors"].get("tls-cert"),
           st3["pages"], len(rows3) - len(rows2), len(rows4) - len(rows3), len(plog.entries)))
    if errors:
        e2e.fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
