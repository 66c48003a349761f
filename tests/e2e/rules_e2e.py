#!/usr/bin/env python3
"""End-to-end crawls of the local test web with URL rules (--rules), judged
from the test web's own request log.

  rules_e2e.py rules
      a rules file of every common matcher (ext, regex, path, host, prefix,
      surt; an accept above a reject to show the first match wins): no URL
      a rule rejects is requested (robots.txt aside; seeds are exempt), and
      every URL of the expected set that the rules leave reachable from the
      seeds is requested. The reachable set is computed here, independently
      of the crawler: a second test web (same generation, another port) is
      walked from the seeds over its links and redirects with the rules
      applied by this script, within the full crawl's expected set.

Environment: as crawl_e2e.py (CRAWLER_BUILD, CRAWLER_SOURCE, E2E_HOSTS,
E2E_PAGES).
"""
import collections
import html.parser
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crawl_e2e as e2e  # noqa: E402


def rules_text(port):
    """The rules under test, for a test web on port: (text, [(action, fn)])
    where fn(url) says whether the rule matches a URL (this script's own
    reading of each matcher, on the test web's canonical URLs)."""
    def hp(i):
        return "h%d.web.test:%d" % (i, port)

    rules = [
        ("accept prefix http://%s/doc/" % hp(1), "accept",
         lambda u: u.startswith("http://%s/doc/" % hp(1))),
        ("reject ext pdf", "reject", lambda u: urllib.parse.urlsplit(u).path.lower().endswith(".pdf")),
        ("reject regex [?]q=[0-9]+$", "reject", lambda u: re.search(r"[?]q=[0-9]+$", u) is not None),
        ("reject path /gone/", "reject", lambda u: urllib.parse.urlsplit(u).path.startswith("/gone/")),
        ("reject host %s" % "h2.web.test", "reject", lambda u: urllib.parse.urlsplit(u).hostname == "h2.web.test"),
        ("reject prefix http://%s/s1/" % hp(3), "reject", lambda u: u.startswith("http://%s/s1/" % hp(3))),
        ("reject surt http://(test,web,h4,:%d)/img/" % port, "reject",
         lambda u: u.startswith("http://%s/img/" % hp(4))),
    ]
    text = "# rules_e2e.py: first match wins\n" + "".join(r[0] + "\n" for r in rules)
    return text, [(r[1], r[2]) for r in rules]


def decide(rules, url):
    for action, match in rules:
        if match(url):
            return action
    return None


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("href", "src") and v:
                self.hrefs.append(v)


def walk(port, seeds, universe, rules):
    """The URLs of universe (the expected set's URLs, on port) reachable
    from the seeds over links and redirects that the rules do not reject,
    fetched from the test web listening on port (its own copy)."""
    seen, todo, reached = set(seeds), list(seeds), set()
    while todo:
        url = todo.pop()
        if url not in universe:
            continue
        reached.add(url)
        sp = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", sp.path + ("?" + sp.query if sp.query else ""),
                     headers={"Host": sp.netloc, "User-Agent": "rules-e2e-oracle"})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        found = []
        if 300 <= resp.status < 400 and resp.getheader("Location"):
            found.append(resp.getheader("Location"))
        elif resp.status == 200 and "html" in (resp.getheader("Content-Type") or ""):
            p = Links()
            p.feed(body.decode("utf-8", "replace"))
            found += p.hrefs
        for h in found:
            u = urllib.parse.urldefrag(urllib.parse.urljoin(url, h))[0]
            sp = urllib.parse.urlsplit(u)
            u = urllib.parse.urlunsplit((sp.scheme.lower(), sp.netloc.lower(), sp.path or "/",
                                         sp.query, ""))
            if u not in seen and decide(rules, u) != "reject":
                seen.add(u)
                todo.append(u)
    return reached


def test_rules():
    work = tempfile.mkdtemp(prefix="e2e-rules-")
    gen = e2e.gen_args()
    tw = e2e.TestWeb(work, gen)
    oracle_dir = os.path.join(work, "oracle")
    os.mkdir(oracle_dir)
    oracle_port = e2e.free_port()
    oracle = e2e.TestWeb(oracle_dir, gen, ["--http-port", str(oracle_port)])
    try:
        text, _ = rules_text(tw.http_port)
        rules_path = os.path.join(work, "rules.txt")
        with open(rules_path, "w") as f:
            f.write(text)
        expected = set(tw.run_mode("--expected", "--agent", e2e.AGENT))
        faults = e2e.fault_hosts(tw)
        seeds = tw.run_mode("--seeds")
        # The oracle's walk on its own copy of the web (URLs on its port).
        _, oracle_rules = rules_text(oracle_port)
        universe = set(l.split("\t")[0].replace(":%d/" % tw.http_port, ":%d/" % oracle_port)
                       for l in expected)
        reached = walk(oracle_port, [s.replace(":%d/" % tw.http_port, ":%d/" % oracle_port)
                                     for s in seeds], universe, oracle_rules)
        reached = set(u.replace(":%d/" % oracle_port, ":%d/" % tw.http_port) for u in reached)
        out = os.path.join(work, "out")
        cmd = [e2e.CRAWLER, "crawl", "--seeds", os.path.join(work, "seeds.txt"), "-c",
               os.path.join(e2e.SOURCE, "configs", "testweb.conf"), "--dns-server",
               "127.0.0.1:%d" % tw.dns_port, "--allow-private-networks", "-o", out,
               "--host-delay", str(e2e.HOST_DELAY_MS), "--ip-delay", str(e2e.IP_DELAY_MS),
               "--set", "politeness.crawl_delay_cap_ms=%d" % e2e.HOST_DELAY_MS,
               "--rules", rules_path]
        with open(os.path.join(work, "seeds.txt"), "w") as f:
            f.write("\n".join(seeds) + "\n")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
    finally:
        tw.stop()
        oracle.stop()
    errors = []
    if p.returncode != 0:
        errors.append("crawler exited %d: %s" % (p.returncode, p.stderr[-800:]))
    if re.search(r"not applied|ignored", p.stderr, re.I):
        errors.append("the crawler says the rules are not applied: %s" % p.stderr[-500:])
    rows = tw.requests()
    got = e2e.observed_set(tw, rows, faults)
    _, rules = rules_text(tw.http_port)
    requested = collections.Counter(k.split("\t")[0] for k in got.elements())
    seedset = set(seeds)
    rejected = sorted(u for u in requested if not u.endswith("/robots.txt") and
                      u not in seedset and decide(rules, u) == "reject")
    if rejected:
        errors.append("%d URLs a rule rejects were requested, e.g. %s" % (len(rejected), rejected[:5]))
    want = set(u for u in reached if urllib.parse.urlsplit(u).hostname not in faults)
    missing = sorted(want - set(requested))
    if missing:
        errors.append("%d accepted reachable URLs never requested, e.g. %s" % (len(missing), missing[:5]))
    extra = sorted(set(requested) - want - set(u for u in requested if u.endswith("/robots.txt")))
    if extra:
        errors.append("%d requests outside the accepted reachable set, e.g. %s" % (len(extra), extra[:5]))
    dups = sorted(u for u, n in requested.items() if n > 1 and not u.endswith("/robots.txt"))
    if dups:
        errors.append("%d URLs requested twice, e.g. %s" % (len(dups), dups[:5]))
    # The full crawl would have fetched more: the rules cut something of
    # every kind they name.
    full = set(l.split("\t")[0] for l in expected)
    cut = full - want
    for what, pat in (("pdf", r"\.pdf$"), ("query", r"\?q=\d+$"), ("gone", r"/gone/"),
                      ("h2", r"//h2\.web\.test"), ("h3 /s1/", r"//h3\.web\.test:\d+/s1/"),
                      ("h4 /img/", r"//h4\.web\.test:\d+/img/")):
        if not any(re.search(pat, u) for u in cut):
            errors.append("the rules cut no %s URL from the expected set: the web lacks them" % what)
    if not any(re.search(r"//h1\.web\.test:\d+/doc/.*\.pdf$", u) for u in want):
        errors.append("no PDF of h1's /doc/ is reachable: the first-match accept is not tested")
    print("rules: %d expected without rules, %d accepted and reachable, %d requested (%d distinct);"
          " %d cut by the rules" % (len(full), len(want), len(rows), len(requested), len(cut)))
    if errors:
        e2e.fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "rules":
        test_rules()
    else:
        e2e.fail("usage: rules_e2e.py rules")


if __name__ == "__main__":
    main()
