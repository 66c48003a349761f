#!/usr/bin/env python3
"""End-to-end crawls of the local test web under a page budget, judged
from the test web's own request log: does the crawl order fetch what
matters first?

  order_e2e.py priority
      12% of the HTML pages (those numbered ...4) match a `priority=3` URL
      rule; --max-pages is ORDER_BUDGET_PCT (default 10) percent of the
      expected set (its pages, images, PDFs, redirects and 404s). With the
      rule, at least 95% of the matching pages of the expected set are
      fetched; breadth-first (no rule) at least 15 points fewer. 0
      politeness and 0 robots.txt violations in both crawls (testweb
      --judge).
  order_e2e.py focus
      a topical web (testweb --topics 8: each page about one topic, a
      fifth of its words that topic's, most of its links to pages of its
      topic); --focus lists topic 0's words (testweb --topic-words 0);
      --max-pages is FOCUS_BUDGET_PCT (default 20) percent of the expected
      set's HTML pages. The harvest rate (pages about topic 0 among the HTML
      pages answered 200, the topic known from the URL, not from the
      crawler's score) with --order focused is at least twice
      breadth-first's; 0 politeness and 0 robots.txt violations in both.
      The focused crawl's crawl.log carries a focus=S per parsed page and
      stats.json's focus object (pages scored, on-topic, mean) agrees.
  order_e2e.py resume
      the same prioritised crawl killed (SIGKILL) after its first
      checkpoint and resumed (--resume): the tiers come back from the
      checkpoint, and the budget still goes to the matching pages first.

Environment: CRAWLER_BUILD, CRAWLER_SOURCE as crawl_e2e.py; the web is
20 hosts x 30 pages whatever E2E_HOSTS says.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crawl_e2e as base  # noqa: E402

MATCH = re.compile(r"^/s[0-9]+/p[0-9]*4\.html$")
RULE = "accept regex /s[0-9]+/p[0-9]*4\\.html$ priority=3\n"
HOST_DELAY_MS = 50
# the page budget, in percent of the expected set (ORDER_BUDGET_PCT)
BUDGET_PCT = int(os.environ.get("ORDER_BUDGET_PCT", "10"))
# the focused crawl's page budget, in percent of the expected set
FOCUS_BUDGET_PCT = int(os.environ.get("FOCUS_BUDGET_PCT", "20"))


def web():
    # 20 x 30 under the sanitizers too (not E2E_HOSTS/E2E_PAGES): on a
    # smaller web a page or two discovered late weigh more than 5%
    return ["--hosts", "20", "--pages", "30", "--ips", "4"]


def matching(urls_or_paths):
    out = set()
    for u in urls_or_paths:
        host, path = u
        if MATCH.match(path):
            out.add((host, path))
    return out


def expected_matching(tw):
    """(host:port, path) of the expected set's 200 pages the rule matches,
    and the size of the expected set."""
    exp = [line.split("\t") for line in tw.run_mode("--expected", "--agent", base.AGENT)]
    pairs = []
    for url, status in exp:
        if status != "200":
            continue
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
        pairs.append((host.lower(), "/" + path))
    return matching(pairs), len(exp)


def judge(tw):
    out = tw.run_mode("--judge", tw.log, "--agent", base.AGENT, "--judge-delay-ms", str(HOST_DELAY_MS))
    return dict((k, int(v)) for k, v in (line.split() for line in out if len(line.split()) == 2))


def crawl_args(work, budget, rules):
    args = ["--max-pages", str(budget), "--host-delay", str(HOST_DELAY_MS), "--ip-delay", "10",
            "--set", "politeness.crawl_delay_cap_ms=%d" % HOST_DELAY_MS]
    if rules:
        path = os.path.join(work, "rules.txt")
        with open(path, "w") as f:
            f.write(RULE)
        args += ["--rules", path]
    return args


def fetched_matching(tw):
    rows = tw.requests()
    return matching((r[2], r[5]) for r in rows if r[6] == 200), rows


def verdict(tag, tw, want):
    got, rows = fetched_matching(tw)
    j = judge(tw)
    share = len(got & want) / len(want)
    print("%s: %d requests, %d of %d matching pages (%.0f%%); politeness_violations %d, "
          "robots_violations %d" % (tag, len(rows), len(got & want), len(want), 100 * share,
                                    j.get("politeness_violations", -1), j.get("robots_violations", -1)))
    errors = []
    if j.get("politeness_violations") != 0 or j.get("robots_violations") != 0:
        errors.append("%s: judge says %r" % (tag, j))
    return share, errors


def run_one(rules, tag):
    work = tempfile.mkdtemp(prefix="e2e-order-")
    tw = base.TestWeb(work, web())
    try:
        want, n_expected = expected_matching(tw)
        budget = n_expected * BUDGET_PCT // 100
        base.crawl(tw, os.path.join(work, "out"), crawl_args(work, budget, rules))
    finally:
        tw.stop()
    share, errors = verdict("%s (budget %d of %d)" % (tag, budget, n_expected), tw, want)
    shutil.rmtree(work, ignore_errors=True)
    return share, errors


def test_priority():
    prio, e1 = run_one(True, "priority rule")
    bfs, e2 = run_one(False, "breadth-first")
    errors = e1 + e2
    if prio < 0.95:
        errors.append("with the rule only %.0f%% of the matching pages were fetched" % (100 * prio))
    if bfs > prio - 0.15:
        errors.append("breadth-first fetched %.0f%% of the matching pages: the test web does not "
                      "tell the orders apart" % (100 * bfs))
    if errors:
        base.fail("; ".join(errors))
    print("ok")


def test_resume():
    work = tempfile.mkdtemp(prefix="e2e-order-resume-")
    out = os.path.join(work, "out")
    # a slower crawl (host delay 300 ms) so the kill lands mid-crawl
    tw = base.TestWeb(work, web())
    try:
        want, n_expected = expected_matching(tw)
        budget = n_expected * BUDGET_PCT // 100
        seeds = os.path.join(work, "seeds.txt")
        with open(seeds, "w") as f:
            f.write("\n".join(tw.run_mode("--seeds")) + "\n")
        cmd = [base.CRAWLER, "crawl", "--seeds", seeds, "-c",
               os.path.join(base.SOURCE, "configs", "testweb.conf"),
               "--dns-server", "127.0.0.1:%d" % tw.dns_port, "--allow-private-networks",
               "-o", out, "--quiet", "--checkpoint-interval", "1"] + \
            crawl_args(work, budget, True) + ["--host-delay", "300"]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        current = os.path.join(out, "checkpoint", "CURRENT")
        while not os.path.exists(current) and p.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        if p.poll() is not None:
            base.fail("the crawl ended before it could be killed (exit %s)" % p.returncode)
        p.send_signal(signal.SIGKILL)
        p.wait()
        got_before, rows_before = fetched_matching(tw)
        before, match_before = len(rows_before), len(got_before & want)
        r = subprocess.run([base.CRAWLER, "crawl", "--resume", "-o", out, "--quiet",
                            "--dns-server", "127.0.0.1:%d" % tw.dns_port],
                           capture_output=True, text=True, timeout=110)
        if r.returncode != 0:
            base.fail("--resume exited %d: %s" % (r.returncode, r.stderr[-500:]))
    finally:
        tw.stop()
    print("killed after %d requests (%d matching pages), then resumed" % (before, match_before))
    share, errors = verdict("priority rule, killed and resumed (budget %d of %d)" % (budget, n_expected),
                            tw, want)
    if before >= budget or match_before > 0.8 * len(want):
        errors.append("the kill came too late to tell (%d requests, %d matching pages)" %
                      (before, match_before))
    if share < 0.95:
        errors.append("after the resume only %.0f%% of the matching pages were fetched" % (100 * share))
    if errors:
        base.fail("; ".join(errors))
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


TOPICS = 8
FOCUS_TOPIC = 0
PAGE = re.compile(r"^/(?:s[0-9]+/p([0-9]+)\.html|private/p([0-9]+)\.html)?(?:\?q=[0-9]+)?$")
HOST = re.compile(r"^h([0-9]+)\.")


def topic_of(host, path):
    """The topic testweb gives a page (--topics: (I + J) mod T), or None
    for what is no page."""
    m, h = PAGE.match(path), HOST.match(host.lower())
    if not m or not h:
        return None
    j = int(m.group(1) or m.group(2) or 0)
    return (int(h.group(1)) + j) % TOPICS


def expected_pages(tw):
    """The HTML pages of the expected set (answered 200)."""
    out = []
    for line in tw.run_mode("--expected", "--agent", base.AGENT):
        url, status = line.split("\t")
        host, _, path = url.split("://", 1)[1].partition("/")
        if status == "200" and topic_of(host, "/" + path) is not None:
            out.append(url)
    return out


def harvest(tw):
    """(on-topic pages, HTML pages) among the 200 answers of the log."""
    pages = [topic_of(r[2], r[5]) for r in tw.requests() if r[6] == 200]
    pages = [t for t in pages if t is not None]
    return sum(1 for t in pages if t == FOCUS_TOPIC), len(pages)


def run_focus(focused, tag):
    work = tempfile.mkdtemp(prefix="e2e-order-focus-")
    tw = base.TestWeb(work, web() + ["--topics", str(TOPICS)])
    try:
        n_expected = len(expected_pages(tw))
        budget = n_expected * FOCUS_BUDGET_PCT // 100
        args = crawl_args(work, budget, False)
        if focused:
            path = os.path.join(work, "focus.txt")
            with open(path, "w") as f:
                f.write("\n".join(tw.run_mode("--topic-words", str(FOCUS_TOPIC))) + "\n")
            args += ["--order", "focused", "--focus", path]
        base.crawl(tw, os.path.join(work, "out"), args)
    finally:
        tw.stop()
    on, pages = harvest(tw)
    j = judge(tw)
    rate = on / pages if pages else 0.0
    print("%s (budget %d of %d): %d of %d HTML pages on-topic, harvest rate %.3f; "
          "politeness_violations %d, robots_violations %d"
          % (tag, budget, n_expected, on, pages, rate, j.get("politeness_violations", -1),
             j.get("robots_violations", -1)))
    errors = []
    if j.get("politeness_violations") != 0 or j.get("robots_violations") != 0:
        errors.append("%s: judge says %r" % (tag, j))
    if focused:
        errors += check_scores(os.path.join(work, "out"))
    shutil.rmtree(work, ignore_errors=True)
    return rate, errors


def check_scores(out):
    """crawl.log carries a focus=S per HTML page the crawl parsed, and
    stats.json's focus object sums them up."""
    scores = []
    with open(os.path.join(out, "crawl.log")) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(fields) != 13:
                continue
            for flag in fields[11].split(","):
                if flag.startswith("focus="):
                    scores.append(float(flag[6:]))
    with open(os.path.join(out, "stats.json")) as f:
        focus = json.load(f)["focus"]
    errors = []
    on_topic = sum(1 for v in scores if v >= 0.02)
    mean = sum(scores) / len(scores) if scores else 0.0
    if not scores or focus["pages_scored"] != len(scores) or focus["on_topic"] != on_topic or \
            abs(focus["mean_score"] - mean) > 1e-3:
        errors.append("crawl.log's %d scores (%d on-topic, mean %.4f) disagree with stats.json's "
                      "%r" % (len(scores), on_topic, mean, focus))
    return errors


def test_focus():
    focused, e1 = run_focus(True, "focused")
    bfs, e2 = run_focus(False, "breadth-first")
    errors = e1 + e2
    print("harvest rate: focused %.3f, breadth-first %.3f (%.2fx)"
          % (focused, bfs, focused / bfs if bfs else float("inf")))
    if focused < 2 * bfs:
        errors.append("the focused crawl's harvest rate %.3f is under twice breadth-first's %.3f"
                      % (focused, bfs))
    if errors:
        base.fail("; ".join(errors))
    print("ok")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "priority":
        test_priority()
    elif what == "resume":
        test_resume()
    elif what == "focus":
        test_focus()
    else:
        base.fail("usage: order_e2e.py priority|focus|resume")


if __name__ == "__main__":
    main()
