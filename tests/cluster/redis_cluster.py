#!/usr/bin/env python3
"""A Redis Cluster on loopback for tests and benchmarks: M masters with R
replicas each (redis-server in cluster mode, one folder per node), created
by hand (slots in equal ranges, MEET, REPLICATE), killed and restarted per
node, stopped whole. Every server dies with the process that started it.

As a module:
    c = RedisCluster(workdir, masters=3, replicas=1)
    c.start()                    # returns once every slot is served
    c.url("crawl")               # redis://127.0.0.1:PORT/crawl (c.port)
    port = c.master_of_key("{crawl}:ver")
    old, new = c.kill_master(port)   # SIGKILL, returns once a replica
                                     # took over its slots
    c.kill_master_of("{crawl}:ver")  # the same in one call
    c.restart(old)               # it comes back as a replica
    c.cpu_seconds(c.master_ports())  # user + system CPU, from /proc
    c.stop()

As a command, for tests in other languages (test_cluster.c):
    redis_cluster.py serve DIR [--masters M] [--replicas R]
prints "ready PORT..." (the masters) once the cluster serves every slot,
then reads commands on stdin, one a line, answering one line each:
    kill-master KEY [STALL_MS]
                      -> "ok OLD NEW": the master of KEY's slot killed,
                         NEW its replica that took over (its replica
                         stopped STALL_MS before the kill, if given)
    restart PORT      -> "ok": the node back, as a replica
    masters           -> "ok PORT...": the masters now
    stop (or EOF)     -> stops every node and exits.
"""
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

SLOTS = 16384
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        ctypes.CDLL("libc.so.6").prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    k = key.encode() if isinstance(key, str) else key
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) % SLOTS


class RespError(Exception):
    pass


def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("closed")
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return rest.decode()
    if t == b"-":
        raise RespError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode(errors="replace")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise ConnectionError("bad reply %r" % line)


def command(port, *args, timeout=2.0):
    """One command to 127.0.0.1:port; its reply (RespError on an error)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(out)
        with s.makefile("rb") as f:
            return _read_reply(f)


def free_port_pair():
    """A port free with port + 10000 (the cluster bus) free too."""
    for _ in range(200):
        p = random.randint(20000, 55000)
        try:
            socks = []
            for q in (p, p + 10000):
                s = socket.socket()
                s.bind(("127.0.0.1", q))
                socks.append(s)
            for s in socks:
                s.close()
            return p
        except OSError:
            for s in socks:
                s.close()
    raise RuntimeError("no free port pair")


class Node:
    def __init__(self, workdir, port, args):
        self.port = port
        self.dir = os.path.join(workdir, "node-%d" % port)
        os.makedirs(self.dir, exist_ok=True)
        self.args = args
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--dir", self.dir, "--logfile", os.path.join(self.dir, "redis.log"),
             "--save", ""] + self.args,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def cmd(self, *args):
        return command(self.port, *args)


class RedisCluster:
    def __init__(self, workdir, masters=3, replicas=1, node_timeout_ms=1000,
                 appendfsync="everysec"):
        if not shutil.which("redis-server"):
            raise RuntimeError("redis-server missing: run crawler/install-deps.sh")
        self.workdir = workdir
        self.nmasters, self.nreplicas = masters, replicas
        args = ["--appendonly", "yes", "--appendfsync", appendfsync,
                "--cluster-node-timeout", str(node_timeout_ms),
                "--cluster-replica-validity-factor", "0"]
        self.nodes = [Node(workdir, free_port_pair(), args)
                      for _ in range(masters * (1 + replicas))]

    # ---- life ----

    def start(self, timeout=60):
        for n in self.nodes:
            n.start()
        deadline = time.time() + timeout
        for n in self.nodes:
            self._wait(lambda: self._pings(n), deadline, "node %d did not start" % n.port)
        m = self.nmasters
        for i, n in enumerate(self.nodes):
            n.cmd("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
        for i in range(m):
            lo, hi = i * SLOTS // m, (i + 1) * SLOTS // m - 1
            self.nodes[i].cmd("CLUSTER", "ADDSLOTSRANGE", lo, hi)
        for n in self.nodes[1:]:
            self.nodes[0].cmd("CLUSTER", "MEET", "127.0.0.1", n.port)
        ids = [n.cmd("CLUSTER", "MYID") for n in self.nodes]
        # by ID, past the handshake: a replica told to follow a master it
        # knows only by a handshake's temporary ID answers "Unknown node"
        self._wait(lambda: all(self._knows(n, ids) for n in self.nodes),
                   deadline, "nodes did not meet")
        for k, n in enumerate(self.nodes[m:]):
            n.cmd("CLUSTER", "REPLICATE", ids[k % m])
        self._wait(self.ready, deadline, "the cluster did not come up")
        return self

    def stop(self):
        for n in self.nodes:
            n.kill()

    def ready(self):
        """Every live node says ok, every slot has a live master, every live
        replica is in sync."""
        try:
            for n in self.nodes:
                if not n.alive():
                    continue
                if "cluster_state:ok" not in n.cmd("CLUSTER", "INFO"):
                    return False
                info = n.cmd("INFO", "replication")
                if "role:slave" in info and "master_link_status:up" not in info:
                    return False
            served = 0
            live = set(n.port for n in self.nodes if n.alive())
            for lo, hi, port in self.slot_ranges():
                if port in live:
                    served += hi - lo + 1
            return served == SLOTS
        except (OSError, RespError, ConnectionError):
            return False

    # ---- what serves what ----

    def _any(self):
        for n in self.nodes:
            if n.alive():
                return n
        raise RuntimeError("no node alive")

    def slot_ranges(self):
        return [(r[0], r[1], r[2][1]) for r in self._any().cmd("CLUSTER", "SLOTS")]

    def master_ports(self):
        return sorted(set(p for _, _, p in self.slot_ranges()))

    def master_of_slot(self, slot):
        for lo, hi, port in self.slot_ranges():
            if lo <= slot <= hi:
                return port
        return None

    def master_of_key(self, key):
        return self.master_of_slot(key_slot(key))

    @property
    def port(self):
        """A node to name in --cluster (any node serves the map): the first
        master at start, as one Redis's port for the e2e drivers."""
        if not hasattr(self, "_seed"):
            self._seed = self.master_ports()[0]
        return self._seed

    def url(self, prefix="crawl"):
        return "redis://127.0.0.1:%d/%s" % (self.port, prefix)

    def kill_master_of(self, key):
        """kill_master() of the master serving key's slot."""
        return self.kill_master(self.master_of_key(key))

    def node(self, port):
        return next(n for n in self.nodes if n.port == port)

    # ---- faults ----

    def kill_master(self, port, timeout=60, stall_ms=0):
        """SIGKILL the master on port; returns (port, the replica that took
        over) once every slot is served again. stall_ms: its replicas are
        stopped (SIGSTOP) that long before, and continued just after: a
        replica too busy to keep up when its master dies."""
        slots = [(lo, hi) for lo, hi, p in self.slot_ranges() if p == port]
        if not slots:
            raise RuntimeError("%d is not a master" % port)
        stalled = self.replicas_of(port) if stall_ms > 0 else []
        for n in stalled:
            n.proc.send_signal(signal.SIGSTOP)
        time.sleep(stall_ms / 1000.0)
        self.node(port).kill()
        for n in stalled:
            n.proc.send_signal(signal.SIGCONT)
        deadline = time.time() + timeout
        self._wait(self.ready, deadline, "no replica took over from %d" % port)
        return port, self.master_of_slot(slots[0][0])

    def replicas_of(self, port):
        """The nodes replicating the master on port."""
        mid = self.node(port).cmd("CLUSTER", "MYID")
        return [n for n in self.nodes if n.alive() and n.port != port and
                any(l.split()[3] == mid for l in self._nodes_of(n)
                    if "myself" in l.split()[2])]

    def restart(self, port, timeout=60):
        n = self.node(port)
        n.start()
        deadline = time.time() + timeout
        self._wait(lambda: self._pings(n), deadline, "node %d did not restart" % port)
        self._wait(self.ready, deadline, "node %d did not rejoin" % port)

    def cpu_seconds(self, ports):
        """User + system CPU seconds of the nodes on ports so far."""
        tck = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for p in ports:
            n = self.node(p)
            if n.alive():
                with open("/proc/%d/stat" % n.proc.pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tck
        return total

    # ---- helpers ----

    @staticmethod
    def _pings(n):
        try:
            return n.alive() and n.cmd("PING") == "PONG"
        except (OSError, RespError, ConnectionError):
            return False

    @staticmethod
    def _nodes_of(n):
        try:
            return [l for l in n.cmd("CLUSTER", "NODES").splitlines() if l]
        except (OSError, RespError, ConnectionError):
            return []

    @classmethod
    def _knows(cls, n, ids):
        """n lists every node of ids, none of them still in a handshake."""
        known = set()
        for l in cls._nodes_of(n):
            f = l.split()
            if len(f) > 2 and "handshake" not in f[2]:
                known.add(f[0])
        return all(i in known for i in ids)

    @staticmethod
    def _wait(cond, deadline, msg):
        while not cond():
            if time.time() > deadline:
                raise RuntimeError(msg)
            time.sleep(0.05)


def serve(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="redis_cluster.py serve")
    ap.add_argument("dir")
    ap.add_argument("--masters", type=int, default=3)
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--node-timeout", type=int, default=1000)
    a = ap.parse_args(argv)
    _die_with_parent()
    c = RedisCluster(a.dir, a.masters, a.replicas, a.node_timeout)
    try:
        c.start()
        print("ready " + " ".join(str(p) for p in c.master_ports()), flush=True)
        for line in sys.stdin:
            w = line.split()
            try:
                if not w or w[0] == "stop":
                    break
                if w[0] == "kill-master":
                    stall = int(w[2]) if len(w) > 2 else 0
                    old, new = c.kill_master(c.master_of_key(w[1]), stall_ms=stall)
                    print("ok %d %d" % (old, new), flush=True)
                elif w[0] == "restart":
                    c.restart(int(w[1]))
                    print("ok", flush=True)
                elif w[0] == "masters":
                    print("ok " + " ".join(str(p) for p in c.master_ports()), flush=True)
                else:
                    print("error unknown command", flush=True)
            except (RuntimeError, OSError, RespError, ConnectionError) as e:
                print("error %s" % e, flush=True)
    finally:
        c.stop()


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
