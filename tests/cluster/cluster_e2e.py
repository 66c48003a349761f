#!/usr/bin/env python3
"""End-to-end crawls of the local test web by several agents sharing one
Redis (crawler crawl --cluster), judged from the test web's request log.

  cluster_e2e.py kill --assign M
      three agents start with the same seeds; one is killed with SIGKILL
      once a third of the web is fetched, a fourth joins at two thirds.
      Every expected page is requested, nothing robots-disallowed or
      unexpected, no two requests to one host closer than the host delay
      and none to one IP from different hosts closer than the IP delay
      (whichever agents sent them: the web's 4 IPs are shared by hosts of
      every agent, so only the agents' IP leases in Redis keep those gaps),
      the URLs requested twice are within
      the stated bound (the killed agent's window plus its requests in
      flight), and the three agents left end by themselves with exit 0.
      Every WARC of an agent that ended by itself reads back whole.
  cluster_e2e.py stop --assign M
      the same with a graceful stop (SIGINT) instead of the kill: no URL
      requested twice.
  cluster_e2e.py join-kill
      two agents; a third joins once a quarter of the web is fetched and is
      killed a second later, as soon as the others have handed it hosts:
      those hosts return to the first two with URLs their own sieves have
      seen but never fetched (they went to the third): all fetched.
  cluster_e2e.py redis-restart
      two agents; Redis is killed (SIGKILL) mid-crawl and restarted on its
      AOF (appendfsync always) a second later: the crawl finishes whole,
      nothing lost, nothing twice beyond the bound.
  cluster_e2e.py max-pages
      three agents with --max-pages N, a third of the web: the test web
      sees at most N page requests (robots.txt aside), at least N minus
      MAX_PAGES_SLACK distinct ones, and every agent ends by itself with
      exit 0.
  cluster_e2e.py max-pages-stop
      the same, one agent stopped (SIGINT) once the test web has seen the
      limit minus STOP_BEFORE_LIMIT pages, when the budget is all reserved:
      the pages it gives back are used by the other two, which have hosts
      left (a third of the web): at least N minus their STOP_SLACK distinct
      pages.
  cluster_e2e.py resume
      three agents; one is killed (SIGKILL) once a third of the web is
      fetched and restarted with --resume on its own folder and name once
      its heir has taken its inbox: the crawl finishes whole, nothing
      twice beyond the kill's bound, no host delay broken, every agent
      exits 0 and the resumed agent's WARCs (both runs') read back whole.
  cluster_e2e.py inbox
      one agent whose inbox holds, before it starts, an entry written by
      something else than an agent (issue 30): a URL that is not a crawl
      key (/zz/../zz-dotdot), a trap (/zz-trap with 12 query parameters),
      one past max_depth (/zz-deep), one whose depth word no agent writes
      (/zz-baddepth) and a good one (/zz-ok). Only /zz-ok is requested;
      stats.json counts the four as errors.inbox-rejected.
  cluster_e2e.py resume-max-pages
      the same under --max-pages N (half the web), the kill at a sixth:
      at most N page requests, at least N minus MAX_PAGES_SLACK and the
      killed agent's unused quota (RESUME_LOST) distinct ones: the resumed
      agent's earlier pages count once.

  cluster_e2e.py max-time
      the whole crawl's --max-time T: one agent starts, two more join
      MAX_TIME_LATE_S later, all with --max-time T. The test web sees no
      request past the first agent's start + T + MAX_TIME_SLACK_S (an
      agent's own clock would let the late ones go on MAX_TIME_LATE_S
      longer), and the late agents did fetch; every agent exits 0.
  cluster_e2e.py pause-idle
      two agents; once the whole web is fetched (both idle, not yet
      ended) one is stopped (SIGSTOP) past its lease and continued: it
      fences itself, rejoins, says idle again and ends by itself, exit 0.
  cluster_e2e.py faults --assign M [--redis single|cluster]
      every fault in one crawl, on one Redis or on a Redis Cluster of 3
      masters with a replica each: three agents; one killed (SIGKILL) at a
      quarter of the web, one stopped (SIGINT, exit 0) at half, a fourth
      joins, then the master serving the crawl's slot is killed and its
      replica takes over (one Redis: killed and restarted on its AOF). The
      crawl finishes whole, no politeness violation, the repeats within
      the kill's bound and the master's (FAULTS_REPEATS).
  cluster_e2e.py rules
      two agents; once a sixth of the web is fetched, a rule rejecting
      /s3/ is POSTed to a1 only (and a bad one, refused with a 400 and
      never shared), and a3 joins a second later: from the POST's reply
      on, no agent requests a /s3/ URL (past a grace: the requests
      already started, and for a2 its next read of the shared rules,
      every 0.5 s), a3 holds the rule in its rules.txt; a1 and a2 had fetched
      /s3/ URLs before and both left some unfetched (the expected set,
      fetched whole without the rule, holds them); all exit 0; Redis
      holds the good rule only.

Environment: CRAWLER_BUILD, CRAWLER_SOURCE (as tests/e2e/crawl_e2e.py),
E2E_HOSTS / E2E_PAGES to resize the web, E2E_WINDOW the agents'
cluster.window (40).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import crawl_e2e as e2e  # noqa: E402
import redis_cluster  # noqa: E402

HOST_DELAY_MS = 50
IP_DELAY_MS = e2e.IP_DELAY_MS
LEASE_MS = 1000
# cluster.window: URLs an agent takes before acking (E2E_WINDOW: to
# measure what a kill repeats with another, e.g. the default 10,000)
WINDOW = int(os.environ.get("E2E_WINDOW", "40"))
# What a crash may repeat: the URLs of the entries the killed agent had
# taken and not acked, its requests in flight among them: the window,
# overshot by at most one entry (CLUSTER_BATCH_URLS - 1).
KILL_REPEATS = WINDOW + 255
# What a killed agent's run takes from the page budget and the test web
# never sees: its unused quota (at most a chunk and a half, 15 here) and
# its requests in flight (one per host it held: 7 or so). Measured: 9 to
# 15.
RESUME_LOST = 48
RESUME_CKPT_S = 1  # --checkpoint-interval of the resume mode's agents
# The killed agent's restart follows the kill by this: its lease (1 s) has
# lapsed and its heir has drained its inbox (measured: nothing pending).
RESUME_AFTER_S = 2.5


def fail(msg):
    e2e.fail(msg)


class Redis:
    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.port = e2e.free_port()
        self.proc = None
        self.start()

    def start(self):
        if not shutil.which("redis-server"):
            fail("redis-server missing: run crawler/install-deps.sh")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", self.dir,
             "--logfile", os.path.join(self.dir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                fail("redis-server did not start")
            time.sleep(0.05)

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.kill()


class ClusterRedis:
    """A Redis Cluster of 3 masters, a replica each, in place of Redis: the
    agents are given its first master; kill() kills the master serving the
    crawl's slot and returns once its replica took over."""

    def __init__(self, workdir):
        self.c = redis_cluster.RedisCluster(os.path.join(workdir, "rcluster"), masters=3,
                                            replicas=1)
        self.c.start()
        self.port = self.c.port

    def kill(self):
        old, new = self.c.kill_master_of("{e2e}:ver")
        print("master %d killed, replica %d took over" % (old, new))

    def stop(self):
        self.c.stop()


class Agent:
    def __init__(self, tw, work, redis, name, assign, seeds, extra=()):
        self.name = name
        self.out = os.path.join(work, "out-" + name)
        self.err = open(os.path.join(work, name + ".err"), "w")
        cmd = [e2e.CRAWLER, "crawl", "--seeds", seeds,
               "-c", os.path.join(e2e.SOURCE, "configs", "testweb.conf"),
               "--dns-server", "127.0.0.1:%d" % tw.dns_port, "--allow-private-networks",
               "-o", self.out, "--quiet", "--policy", "fixed",
               "--host-delay", str(HOST_DELAY_MS), "--ip-delay", str(IP_DELAY_MS),
               "--set", "politeness.crawl_delay_cap_ms=%d" % HOST_DELAY_MS,
               "--cluster", "redis://127.0.0.1:%d/e2e" % redis.port, "--agent", name,
               "--assign", assign,
               "--set", "cluster.lease_ms=%d" % LEASE_MS,
               "--set", "cluster.window=%d" % WINDOW]
        self.proc = subprocess.Popen(cmd + list(extra), stdout=subprocess.DEVNULL,
                                     stderr=self.err)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


def log_rows(tw):
    return tw.requests() if os.path.exists(tw.log) else []


def pages_seen(tw):
    return sum(1 for r in log_rows(tw) if r[5] != "/robots.txt")


def wait_pages(tw, n, agents, timeout):
    deadline = time.time() + timeout
    while pages_seen(tw) < n:
        if time.time() > deadline:
            fail("only %d of %d pages requested after %d s" % (pages_seen(tw), n, timeout))
        for a in agents:
            if a.proc.poll() is not None:
                a.err.flush()
                print(open(a.err.name).read()[-4000:], file=sys.stderr)
                fail("agent %s exited %s early" % (a.name, a.proc.returncode))
        time.sleep(0.05)


def judge(tw, expected, faults, agents, gone, bound, t0):
    rows = tw.requests()
    got = e2e.observed_set(tw, rows, faults)
    missing = sorted(expected - set(got))
    extra = sorted(set(got) - expected)
    twice = sorted(k for k, n in got.items() if n > 1 and "/robots.txt" not in k)
    repeats = sum(n - 1 for k, n in got.items() if n > 1 and "/robots.txt" not in k)
    bad = e2e.check_politeness(rows, "fixed", HOST_DELAY_MS, IP_DELAY_MS)
    print("%d expected, %d requests, %d distinct, %d repeated (bound %d), %.1f s" %
          (len(expected), len(rows), len(got), repeats, bound, time.time() - t0))
    for a in agents:
        try:
            st = e2e.json.load(open(os.path.join(a.out, "stats.json")))
            print("  agent %s: exit %s, %d pages, IP leases refused %d, Redis errors %d" %
                  (a.name, a.proc.returncode, st["pages"], st["errors"].get("ip-lease-refused", 0),
                   st["errors"].get("ip-lease-redis", 0)))
        except (OSError, ValueError):
            print("  agent %s: exit %s, no stats.json" % (a.name, a.proc.returncode))
    errors = []
    if missing:
        errors.append("%d expected URLs never requested, e.g. %s" % (len(missing), missing[:5]))
    if extra:
        errors.append("%d unexpected requests, e.g. %s" % (len(extra), extra[:5]))
    if repeats > bound:
        errors.append("%d repeated requests > bound %d, e.g. %s" % (repeats, bound, twice[:5]))
    if bad:
        nip = sum(1 for b in bad if b.startswith("ip "))
        errors.append("%d host and %d IP delay violations, e.g. %s" %
                      (len(bad) - nip, nip, bad[:5]))
    for a in agents:
        if a is not gone and a.proc.returncode != 0:
            errors.append("agent %s exited %s" % (a.name, a.proc.returncode))
        if a.proc.returncode == 0:
            errors += check_warcs(a)
    return errors


def check_warcs(agent):
    """Every record of an agent that ended by itself reads back whole (the
    independent reader of crawl_e2e.py fails the test otherwise)."""
    warcs = [f for f in os.listdir(agent.out) if f.endswith(".warc.gz")]
    n = sum(1 for w in warcs for _ in e2e.read_warc_records(os.path.join(agent.out, w)))
    return [] if n else ["agent %s wrote no WARC record" % agent.name]


class Crawl:
    """One test's test web, Redis and agents; close() stops them all."""

    def __init__(self, prefix, cluster=False):
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.tw = e2e.TestWeb(self.work, e2e.gen_args())
        self.redis = ClusterRedis(self.work) if cluster else Redis(self.work)
        self.agents = []
        self.t0 = time.time()
        self.expected = set(self.tw.run_mode("--expected", "--agent", e2e.AGENT))
        self.faults = e2e.fault_hosts(self.tw)
        self.seeds = os.path.join(self.work, "seeds.txt")
        with open(self.seeds, "w") as f:
            f.write("\n".join(self.tw.run_mode("--seeds")) + "\n")

    def start(self, names, assign, extra=()):
        """Starts agents of these names, added to self.agents."""
        self.agents += [Agent(self.tw, self.work, self.redis, n, assign, self.seeds, extra)
                        for n in names]

    def wait_end(self, gone):
        for a in self.agents:
            if a is not gone and a.wait(180) is None:
                fail("agent %s did not end by itself" % a.name)

    def close(self):
        for a in self.agents:
            if a.proc.poll() is None:
                a.proc.kill()
                a.proc.wait()
        self.redis.stop()
        self.tw.stop()

    def verdict(self, errors):
        if errors:
            for a in self.agents:
                a.err.flush()
                print("---- %s stderr:\n%s" % (a.name, open(a.err.name).read()[-3000:]),
                      file=sys.stderr)
            fail("; ".join(errors))
        shutil.rmtree(self.work, ignore_errors=True)
        print("ok")


def run(variant, assign):
    cl = Crawl("e2e-cluster-")
    tw, redis, agents = cl.tw, cl.redis, cl.agents
    try:
        n = len(cl.expected)
        if variant == "join-kill":
            cl.start(["a1", "a2"], assign)
            wait_pages(tw, n // 4, agents, 120)
            cl.start(["a3"], assign)
            time.sleep(1.0)
        else:
            cl.start(["a1", "a2", "a3"], assign)
            wait_pages(tw, n // 3, agents, 120)
        gone = agents[1]
        if variant == "join-kill":
            gone = agents[2]
            gone.proc.kill()
            gone.wait(30)
        elif variant == "redis-restart":
            redis.kill()
            time.sleep(1.0)
            redis.start()
            gone = None
        elif variant == "kill":
            gone.proc.kill()
        else:
            gone.proc.send_signal(signal.SIGINT)
        if gone and variant != "join-kill":
            rc = gone.wait(30)
            if variant == "stop" and rc != 0:
                fail("agent %s stopped with exit %s" % (gone.name, rc))
            live = [a for a in agents if a is not gone]
            wait_pages(tw, 2 * n // 3, live, 120)
            cl.start(["a4"], assign)
        cl.wait_end(gone)
    finally:
        cl.close()
    bound = 0 if variant == "stop" else KILL_REPEATS
    cl.verdict(judge(tw, cl.expected, cl.faults, agents, gone, bound, cl.t0))


# What the budget may leave unused at the end: an agent that ends idle
# keeps at most a chunk and a half of it (crawl_cluster.h), the chunk a
# tenth of a second of its pages: at most 10 on this web (an agent fetches
# about 100 pages/s at most), so 15 for each of the three.
MAX_PAGES_SLACK = 3 * 15


def budget_errors(cl, limit, slack):
    """The page requests the test web saw against --max-pages limit: at most
    limit, at least limit - slack distinct."""
    pages = [r for r in cl.tw.requests() if r[5] != "/robots.txt"]
    distinct = len(set((r[2], r[5]) for r in pages))
    print("--max-pages %d: %d page requests, %d distinct (at least %d), %.1f s" %
          (limit, len(pages), distinct, limit - slack, time.time() - cl.t0))
    errors = []
    if len(pages) > limit:
        errors.append("%d page requests > --max-pages %d" % (len(pages), limit))
    if distinct < limit - slack:
        errors.append("%d distinct pages < %d - %d" % (distinct, limit, slack))
    return errors


def exit_errors(cl):
    """Prints each agent's exit and pages: an error per agent not exiting 0."""
    errors = []
    for a in cl.agents:
        st = e2e.json.load(open(os.path.join(a.out, "stats.json"))) if a.proc.returncode == 0 else {}
        print("  agent %s: exit %s, %s pages" % (a.name, a.proc.returncode, st.get("pages")))
        if a.proc.returncode != 0:
            errors.append("agent %s exited %s" % (a.name, a.proc.returncode))
    return errors


def pages_expected(cl):
    return sum(1 for u in cl.expected if "/robots.txt\t" not in u)


def run_max_pages(assign):
    cl = Crawl("e2e-cluster-budget-")
    limit = pages_expected(cl) // 3
    try:
        cl.start(["a1", "a2", "a3"], assign, ["--max-pages", str(limit)])
        cl.wait_end(None)
    finally:
        cl.close()
    errors = budget_errors(cl, limit, MAX_PAGES_SLACK)
    errors += exit_errors(cl)
    cl.verdict(errors)


# The stop comes this close to the limit: the quotas then reserved (up to
# a chunk and a half each, 15 here) cover the rest of the budget.
STOP_BEFORE_LIMIT = 20
# What the two left may leave unused: pages reserved in flight when the
# budget ran out (they end on it only once it reads spent with no quota).
STOP_SLACK = 4


def run_max_pages_stop(assign):
    cl = Crawl("e2e-cluster-budget-stop-")
    limit = pages_expected(cl) // 3
    try:
        cl.start(["a1", "a2", "a3"], assign, ["--max-pages", str(limit)])
        wait_pages(cl.tw, limit - STOP_BEFORE_LIMIT, cl.agents, 120)
        cl.agents[2].proc.send_signal(signal.SIGINT)
        cl.wait_end(None)
    finally:
        cl.close()
    errors = budget_errors(cl, limit, STOP_SLACK)
    errors += exit_errors(cl)
    cl.verdict(errors)


class ResumedAgent(Agent):
    """Agent killed, restarted with --resume on its own folder and name: its
    command line without the seeds (they come from the folder)."""

    def __init__(self, killed):
        self.name = killed.name
        self.out = killed.out
        self.err = open(killed.err.name, "a")
        args = list(killed.proc.args)
        at = args.index("--seeds")
        del args[at:at + 2]
        args.insert(args.index("crawl") + 1, "--resume")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.err)


def run_resume(assign, budget):
    """budget: with --max-pages, half the web."""
    cl = Crawl("e2e-cluster-resume-")
    limit = pages_expected(cl) // 2
    extra = ["--checkpoint-interval", str(RESUME_CKPT_S)]
    if budget:
        extra += ["--max-pages", str(limit)]
    try:
        cl.start(["a1", "a2", "a3"], assign, extra)
        wait_pages(cl.tw, len(cl.expected) // (6 if budget else 3), cl.agents, 120)
        gone = cl.agents[1]
        gone.proc.kill()
        gone.wait(30)
        time.sleep(RESUME_AFTER_S)
        cl.agents.append(ResumedAgent(gone))
        cl.wait_end(gone)
    finally:
        cl.close()
    errors, expected = [], cl.expected
    if budget:
        errors = budget_errors(cl, limit, MAX_PAGES_SLACK + RESUME_LOST)
        # stopped on the limit: what was fetched is judged, nothing missing
        expected = cl.expected & set(e2e.observed_set(cl.tw, cl.tw.requests(), cl.faults))
    cl.verdict(errors + judge(cl.tw, expected, cl.faults, cl.agents, gone, KILL_REPEATS, cl.t0))


# What the faults mode may repeat: the killed agent's (KILL_REPEATS), and
# after the master's death the window of every agent live then, whose
# unacked entries come again when an inbox command gets no answer.
FAULTS_REPEATS = KILL_REPEATS + 3 * WINDOW


def run_faults(assign, cluster):
    cl = Crawl("e2e-cluster-faults-", cluster)
    tw, agents = cl.tw, cl.agents
    try:
        n = len(cl.expected)
        cl.start(["a1", "a2", "a3"], assign)
        wait_pages(tw, n // 4, agents, 120)
        killed = agents[1]
        killed.proc.kill()
        killed.wait(30)
        wait_pages(tw, n // 2, [agents[0], agents[2]], 120)
        agents[2].proc.send_signal(signal.SIGINT)
        if agents[2].wait(60) != 0:
            fail("agent a3 stopped with exit %s" % agents[2].proc.returncode)
        cl.start(["a4"], assign)
        wait_pages(tw, 5 * n // 8, [agents[0], agents[3]], 120)
        cl.redis.kill()
        if not cluster:
            time.sleep(1.0)
            cl.redis.start()
        cl.wait_end(killed)
    finally:
        cl.close()
    cl.verdict(judge(tw, cl.expected, cl.faults, agents, killed, FAULTS_REPEATS, cl.t0))


def run_pause_idle(assign):
    cl = Crawl("e2e-cluster-pause-")
    agents = cl.agents
    try:
        cl.start(["a1", "a2"], assign)
        deadline = time.time() + 120
        while not cl.expected <= set(e2e.observed_set(cl.tw, log_rows(cl.tw), cl.faults)):
            if time.time() > deadline or any(a.proc.poll() is not None for a in agents):
                fail("the web was not fetched whole by two live agents")
            time.sleep(0.1)
        time.sleep(0.3)  # both idle now; the end takes two census reads, 1 s apart
        agents[0].proc.send_signal(signal.SIGSTOP)
        time.sleep(3 * LEASE_MS / 1000)
        agents[0].proc.send_signal(signal.SIGCONT)
        for a in agents:
            if a.wait(30) is None:
                fail("agent %s did not end by itself" % a.name)
    finally:
        cl.close()
    cl.verdict(judge(cl.tw, cl.expected, cl.faults, agents, None, 0, cl.t0))


MAX_TIME_S = 6
MAX_TIME_LATE_S = 4
# The deadline is set when the first agent has joined (a second or so
# after its start) and an agent stops within a tick (0.1 s) of it.
MAX_TIME_SLACK_S = 2.0


def run_max_time(assign):
    cl = Crawl("e2e-cluster-time-")
    extra = ["--max-time", str(MAX_TIME_S)]
    try:
        t0 = time.time()
        cl.start(["a1"], assign, extra)
        time.sleep(MAX_TIME_LATE_S)
        cl.start(["a2", "a3"], assign, extra)
        cl.wait_end(None)
    finally:
        cl.close()
    rows = cl.tw.requests()
    last = max(r[0] for r in rows) / 1e6 - t0
    print("--max-time %d: last request %.2f s after the first agent's start (bound %.1f), "
          "%d requests" % (MAX_TIME_S, last, MAX_TIME_S + MAX_TIME_SLACK_S, len(rows)))
    errors = []
    if last > MAX_TIME_S + MAX_TIME_SLACK_S:
        errors.append("a request %.2f s after the start > %d + %.1f" %
                      (last, MAX_TIME_S, MAX_TIME_SLACK_S))
    if len(set(e2e.observed_set(cl.tw, rows, cl.faults))) >= len(cl.expected):
        errors.append("the whole web was fetched: the web is too small for the test")
    errors += exit_errors(cl)
    for a in cl.agents[1:]:
        st = e2e.json.load(open(os.path.join(a.out, "stats.json"))) if a.proc.returncode == 0 else {}
        if not st.get("pages"):
            errors.append("agent %s fetched nothing" % a.name)
    bad = e2e.check_politeness(rows, "fixed", HOST_DELAY_MS, IP_DELAY_MS)
    if bad:
        errors.append("%d politeness violations, e.g. %s" % (len(bad), bad[:5]))
    cl.verdict(errors)


def run_inbox():
    os.environ["E2E_HOSTS"], os.environ["E2E_PAGES"] = "4", "10"  # a small web: one agent
    cl = Crawl("e2e-cluster-inbox-")
    tw = cl.tw
    host = "h0.web.test:%d" % tw.http_port
    base = "http://" + host
    params = "&".join("p%d=%d" % (i, i) for i in range(12))
    lines = ["%s/zz/../zz-dotdot\t\t1" % base,
             "%s/zz-trap?%s\t\t1" % (base, params),
             "%s/zz-deep\t\t9" % base,
             "%s/zz-baddepth\t\t99999999999" % base,
             "%s/zz-ok\t\t1" % base]
    subprocess.run(["redis-cli", "-p", str(cl.redis.port), "XADD", "{e2e:a:a1}:inbox", "*", "u",
                    "\n".join(lines) + "\n"], check=True, stdout=subprocess.DEVNULL)
    try:
        cl.start(["a1"], "consistent", ["--max-depth", "5"])
        cl.wait_end(None)
    finally:
        cl.close()
    errors = []
    paths = {r[5] for r in log_rows(tw) if r[2] == host}
    if "/zz-ok" not in paths:
        errors.append("the good inbox URL /zz-ok was not requested")
    bad = sorted(p for p in paths if p.startswith("/zz") and p != "/zz-ok")
    if bad:
        errors.append("inbox URLs this crawl does not take were requested: %s" % bad)
    stats = json.load(open(os.path.join(cl.agents[0].out, "stats.json")))
    got = stats.get("errors", {}).get("inbox-rejected")
    if got != 4:
        errors.append("errors.inbox-rejected = %s, want 4" % got)
    cl.verdict(errors)


# A rule steered into one agent: how late after its POST's reply a
# request it rejects may still come. The agent that got it: the requests
# already started (RULES_GRACE_S). Any other agent: its next read of the
# shared rules too (every 0.5 s).
RULES_GRACE_S = 0.3
RULES_SHARED_S = 0.5
RULES_CUT = "/s3/"
RULES_JOIN_S = 1.0  # a3 joins this long after the rule: past every grace


def owners(names, assign, hosts):
    """host -> the agent that owns it among names (crawler assign)."""
    out = subprocess.run([e2e.CRAWLER, "assign", "--method", assign, "--agents", ",".join(names)],
                         input="\n".join(hosts) + "\n", capture_output=True, text=True,
                         check=True).stdout
    return dict(line.split("\t")[:2] for line in out.splitlines())


def run_rules(assign):
    os.environ["E2E_HOSTS"], os.environ["E2E_PAGES"] = "12", "20"  # 30 s at most
    cl = Crawl("e2e-cluster-rules-")
    tw, agents = cl.tw, cl.agents
    port = e2e.free_port()
    errors = []
    try:
        cl.start(["a1"], assign, ["--metrics", "127.0.0.1:%d" % port])
        cl.start(["a2"], assign)
        wait_pages(tw, len(cl.expected) // 6, agents, 120)
        got = e2e.ask(port, "POST", "/rules", "reject path /nothing/\nreject regex (\n")
        if got[0] != 400 or "POST /rules:2:" not in got[1]:
            errors.append("a bad rule: got %d %r, wanted 400 naming line 2" % got)
        got = e2e.ask(port, "POST", "/rules", "reject path %s\n" % RULES_CUT)
        t_rule = time.time()
        if got[0] != 200:
            errors.append("POST /rules: got %d %r" % got)
        time.sleep(RULES_JOIN_S)
        cl.start(["a3"], assign)
        cl.wait_end(None)
        shared = subprocess.run(["redis-cli", "-p", str(cl.redis.port), "LRANGE", "{e2e}:rules",
                                 "0", "-1"], capture_output=True, text=True).stdout
    finally:
        cl.close()
    rows = tw.requests()
    own = owners(["a1", "a2"], assign, sorted({r[2].split(":")[0] for r in rows}))
    grace = {"a1": RULES_GRACE_S, "a2": RULES_GRACE_S + RULES_SHARED_S}
    late = [(own[r[2].split(":")[0]], r[2], r[5], round(r[0] / 1e6 - t_rule, 3)) for r in rows
            if r[5].startswith(RULES_CUT) and
            r[0] / 1e6 > t_rule + grace[own[r[2].split(":")[0]]]]
    asked = set(e2e.observed_set(tw, rows, cl.faults))
    cut = [u for u in cl.expected - asked if RULES_CUT in u.split("\t")[0]]
    cut_by = {a: sum(1 for u in cut if own[urllib.parse.urlsplit(u).hostname] == a)
              for a in ("a1", "a2")}
    before = {a: sum(1 for r in rows if r[5].startswith(RULES_CUT) and
                     own[r[2].split(":")[0]] == a and r[0] / 1e6 < t_rule) for a in ("a1", "a2")}
    last = {a: max([r[0] / 1e6 - t_rule for r in rows if r[5].startswith(RULES_CUT) and
                    own[r[2].split(":")[0]] == a] + [float("-inf")]) for a in ("a1", "a2")}
    print("rule %s POSTed to a1 at %.2f s: %s URLs requested before it, %s cut, %d late, the "
          "last one %s s after the POST's reply; {e2e}:rules holds %d line(s)" %
          (RULES_CUT, t_rule - cl.t0, before, cut_by, len(late),
           {a: round(v, 3) for a, v in last.items()}, shared.count("reject")))
    if late:
        errors.append("%d %s requests after the rule and its grace (agent, host, path, s "
                      "after): %s" % (len(late), RULES_CUT, late[:5]))
    for a in ("a1", "a2"):
        if not cut_by[a] or not before[a]:
            errors.append("agent %s: %d %s URLs fetched before the rule, %d cut by it: the "
                          "test tests nothing there" % (a, before[a], RULES_CUT, cut_by[a]))
    if not json.load(open(os.path.join(agents[2].out, "stats.json"))).get("pages"):
        errors.append("a3, joining after the rule, fetched nothing: the test tests nothing there")
    late_rules = open(os.path.join(agents[2].out, "rules.txt")).read()
    if "reject path %s\t# added from agent a1: POST /rules:1" % RULES_CUT not in late_rules:
        errors.append("a3, joining after the rule, does not hold it: rules.txt %r" %
                      late_rules[-300:])
    if shared.count("reject") != 1 or "(" in shared:
        errors.append("{e2e}:rules holds %r: wanted the good rule only" % shared[:300])
    errors += exit_errors(cl)
    cl.verdict(errors)


def main():
    modes = ("kill", "stop", "join-kill", "redis-restart", "max-pages", "resume",
             "resume-max-pages", "faults", "max-time", "max-pages-stop", "pause-idle", "inbox",
             "rules")
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        fail("usage: cluster_e2e.py %s [--assign M]" % "|".join(modes))
    args = sys.argv[2:]
    opt = dict(zip(args[::2], args[1::2]))
    assign = opt.get("--assign", "consistent")
    if sys.argv[1] == "pause-idle":
        run_pause_idle(assign)
    elif sys.argv[1] == "max-pages-stop":
        run_max_pages_stop(assign)
    elif sys.argv[1] == "max-time":
        run_max_time(assign)
    elif sys.argv[1] == "faults":
        run_faults(assign, opt.get("--redis", "single") == "cluster")
    elif sys.argv[1] == "max-pages":
        run_max_pages(assign)
    elif sys.argv[1] == "inbox":
        run_inbox()
    elif sys.argv[1] == "rules":
        run_rules(assign)
    elif sys.argv[1] in ("resume", "resume-max-pages"):
        run_resume(assign, sys.argv[1] == "resume-max-pages")
    else:
        run(sys.argv[1], assign)


if __name__ == "__main__":
    main()
