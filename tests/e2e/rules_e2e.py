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
  rules_e2e.py steering
      a crawl steered while it runs, over --metrics and through files in
      OUT/action/, SIGKILLed and resumed: judged from the test web's log,
      no request starts inside a paused window (a pause at the resume
      holds too), a rule added mid-crawl stops its URLs (and still does
      after the resume), a host's delay override holds between its
      requests (after the resume too), and seeds added mid-crawl (one by
      HTTP, one by a file, just before the kill) are fetched. Bad requests
      and files get a 4xx or failed/NAME.reason naming the line.

Environment: as crawl_e2e.py (CRAWLER_BUILD, CRAWLER_SOURCE, E2E_HOSTS,
E2E_PAGES).
"""
import collections
import html.parser
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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


ask = e2e.ask


def wait_for(what, cond, timeout=30):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            e2e.fail("timed out waiting for " + what)
        time.sleep(0.05)


def start_crawl(tw, work, port, resume):
    out = os.path.join(work, "out")
    cmd = [e2e.CRAWLER, "crawl"] + (["--resume"] if resume else
                                     ["--seeds", os.path.join(work, "seeds.txt")])
    cmd += ["-c", os.path.join(e2e.SOURCE, "configs", "testweb.conf"), "--dns-server",
            "127.0.0.1:%d" % tw.dns_port, "--allow-private-networks", "-o", out, "--quiet",
            "--host-delay", "100", "--ip-delay", "10", "--checkpoint-interval", "1",
            "--set", "politeness.crawl_delay_cap_ms=100", "--metrics", "127.0.0.1:%d" % port]
    err = open(os.path.join(work, "crawl-%d.err" % resume), "w")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)

    def up():
        if p.poll() is not None:
            e2e.fail("the crawler exited %d at start" % p.returncode)
        try:
            return ask(port, "GET", "/status")[0] == 200
        except OSError:
            return False
    wait_for("the crawler's --metrics server", up)
    return p


def expect(errors, what, got, want_status, want_text=None):
    if got[0] != want_status or (want_text and want_text not in got[1]):
        errors.append("%s: got %d %r, wanted %d %r" % (what, got[0], got[1][:200], want_status,
                                                       want_text))


def requests_between(rows, t0, t1):
    return [r for r in rows if t0 <= r[0] / 1e6 <= t1]


def test_steering():
    work = tempfile.mkdtemp(prefix="e2e-steer-")
    tw = e2e.TestWeb(work, ["--hosts", "6", "--pages", "12", "--ips", "3"])
    P = tw.http_port
    h0, h1, h2 = ("h%d.web.test:%d" % (i, P) for i in range(3))
    errors, marks = [], {}
    out = os.path.join(work, "out")
    try:
        with open(os.path.join(work, "seeds.txt"), "w") as f:
            f.write("\n".join(tw.run_mode("--seeds")) + "\n")
        port = e2e.free_port()
        p = start_crawl(tw, work, port, 0)
        wait_for("10 requests", lambda: len(tw.requests()) >= 10)
        # A pause of 2 s while every host has work.
        expect(errors, "POST /pause", ask(port, "POST", "/pause"), 200)
        marks["pause1"] = time.time()
        time.sleep(2)
        marks["resume1"] = time.time()
        expect(errors, "POST /resume", ask(port, "POST", "/resume"), 200)
        # Bad requests change nothing and name the line.
        expect(errors, "bad rule", ask(port, "POST", "/rules", "reject path /s3/\nreject nothing\n"),
               400, "POST /rules:2:")
        expect(errors, "bad seed", ask(port, "POST", "/seeds", "http://%s/ok\nftp://x/\n" % h0),
               400, "POST /seeds:2:")
        expect(errors, "bad delay", ask(port, "POST", "/hosts/%s/delay?ms=soon" % h1), 400, "delay")
        expect(errors, "unknown page", ask(port, "GET", "/nothing"), 404)
        expect(errors, "unknown host", ask(port, "GET", "/hosts/nowhere.test"), 404)
        st = json.loads(ask(port, "GET", "/status")[1]).get("steering", {})
        if st.get("refused") != 3 or st.get("applied") != 2:
            errors.append("/status steering counts %s: wanted 3 refused, 2 applied" % st)
        # A rule, a delay and a seed.
        expect(errors, "POST /rules", ask(port, "POST", "/rules", "reject path /s3/\n"), 200)
        marks["rule"] = time.time()
        expect(errors, "POST delay", ask(port, "POST", "/hosts/%s/delay?ms=600" % h1), 200)
        marks["delay"] = time.time()
        expect(errors, "POST /seeds", ask(port, "POST", "/seeds", "http://%s/steered-a\n" % h0), 200)
        st, text = ask(port, "GET", "/hosts/%s" % h1)
        if st != 200 or json.loads(text)["queues"][0]["steered_delay_ms"] != 600:
            errors.append("GET /hosts/%s: %d %s" % (h1, st, text[:300]))
        time.sleep(2.5)
        # Files: a seed, then a pause, and a bad one; then SIGKILL.
        adir = os.path.join(out, "action")
        for name, text in (("b.seeds", "http://%s/steered-b\n" % h2), ("c.pause", ""),
                           ("d.rules", "# bad\nreject regex (\n")):
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
            os.rename(os.path.join(work, name), os.path.join(adir, name))
        wait_for("the action files taken",
                 lambda: os.path.exists(os.path.join(adir, "failed", "d.rules.reason")))
        marks["pause2"] = time.time()
        reason = open(os.path.join(adir, "failed", "d.rules.reason")).read()
        if "d.rules:2:" not in reason:
            errors.append("failed/d.rules.reason does not name line 2: %r" % reason)
        for name in ("b.seeds", "c.pause"):
            if not os.path.exists(os.path.join(adir, "done", name)):
                errors.append("action/%s not moved to done/" % name)
        time.sleep(1.5)
        p.send_signal(signal.SIGKILL)
        p.wait()
        marks["kill"] = time.time()
        # The resumed crawl starts paused; resumed, its delay and rule hold.
        port = e2e.free_port()
        marks["start2"] = time.time()
        p = start_crawl(tw, work, port, 1)
        time.sleep(2)
        marks["resume2"] = time.time()
        st, text = ask(port, "GET", "/hosts/%s" % h1)
        if st != 200 or json.loads(text)["queues"][0]["steered_delay_ms"] != 600 or \
                not json.loads(text)["paused"]:
            errors.append("after the resume, GET /hosts/%s: %d %s" % (h1, st, text[:300]))
        expect(errors, "POST /resume", ask(port, "POST", "/resume"), 200)
        time.sleep(3)
        marks["release"] = time.time()
        expect(errors, "POST delay 0", ask(port, "POST", "/hosts/%s/delay?ms=0" % h1), 200)
        rc = p.wait(timeout=120)
        if rc != 0:
            errors.append("the resumed crawl exited %d" % rc)
    finally:
        tw.stop()
    rows = tw.requests()
    judge_steering(rows, marks, (h0, h1, h2), set(tw.run_mode("--expected", "--agent", e2e.AGENT)),
                   errors)
    print("steering: %d requests; marks %s" %
          (len(rows), {k: round(v - marks["pause1"], 2) for k, v in marks.items()}))
    if errors:
        e2e.fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


def judge_steering(rows, marks, hosts, expected, errors):
    h0, h1, h2 = hosts
    grace = 0.3  # the transfers in flight when an action is applied
    for a, b in (("pause1", "resume1"), ("pause2", "kill"), ("start2", "resume2")):
        inside = requests_between(rows, marks[a] + (grace if a != "start2" else 0), marks[b])
        if inside:
            errors.append("%d requests inside the paused window %s..%s, e.g. %s" %
                          (len(inside), a, b, [(r[2], r[5]) for r in inside[:3]]))
    before = requests_between(rows, marks["pause1"] - 2, marks["pause1"])
    if not before:
        errors.append("no request in the 2 s before the first pause: the pause tests nothing")
    s3 = [r for r in rows if r[5].startswith("/s3/") and r[0] / 1e6 > marks["rule"] + grace]
    if s3:
        errors.append("%d /s3/ requests after the rule, e.g. %s" % (len(s3), [(r[2], r[5]) for r in s3[:3]]))
    asked = set((r[2], r[5]) for r in rows)
    if not any(re.search(r"/s3/", e) and (urllib.parse.urlsplit(e.split("\t")[0]).netloc,
                                          urllib.parse.urlsplit(e.split("\t")[0]).path) not in asked
               for e in expected):
        errors.append("the rule cut no /s3/ URL of the expected set")
    for seed, host in (("/steered-a", h0), ("/steered-b", h2)):
        if (host, seed) not in asked:
            errors.append("the steered seed http://%s%s was never requested" % (host, seed))
    # h1's gaps from its second request after the delay was set until it
    # was released (the first may have been scheduled before).
    t1 = [r[0] / 1e6 for r in rows if r[2] == h1 and marks["delay"] < r[0] / 1e6 < marks["release"]]
    gaps = [b - a for a, b in zip(t1[1:], t1[2:])]
    short = [round(g, 3) for g in gaps if g < 0.6 - 0.005]
    after = [r[0] / 1e6 for r in rows if r[2] == h1 and marks["resume2"] < r[0] / 1e6 < marks["release"]]
    if len(gaps) < 4 or len(after) < 2:
        errors.append("too few requests to %s under its delay: %d gaps, %d after the resume" %
                      (h1, len(gaps), len(after)))
    if short:
        errors.append("%d gaps of %s under the 600 ms delay: %s" % (len(short), h1, short[:5]))
    print("h1 under its 600 ms delay: %d gaps, shortest %.3f s" % (len(gaps), min(gaps) if gaps else 0))


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "rules":
        test_rules()
    elif what == "steering":
        test_steering()
    else:
        e2e.fail("usage: rules_e2e.py rules|steering")


if __name__ == "__main__":
    main()
