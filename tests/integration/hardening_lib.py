"""Shared pieces of the hardening tests (test_soak, test_lifecycle,
test_degradation): a configuration with every feature on, a mixed-traffic
generator (TCP bulk with shrinking receive buffers, UDP, slow readers,
stalled receivers, cgroups created and removed), and snapshots of the BPF
objects a process holds. Not a test program itself (tests/run runs test_*
only)."""

import glob
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ebpftest import Cgroup, NetnsPair, sh  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NSL_TRAFFIC = os.path.join(HERE, "nsl_traffic.py")
TCPW_TRAFFIC = os.path.join(HERE, "tcpw_traffic.py")


def all_features_conf(netns=None, cgroup_glob=None, groupby_cgroup=False,
                      buckets=False, tcpw_netns=None):
    """<Plugin ebpf> body with every feature on: PSI (host and cgroups),
    netstacklat, tcp_window (clamps, transitions, tcp_mem, sock_diag) and
    the BPF self-monitoring."""
    ns = ' NetworkNamespace "%s"\n' % netns if netns else ""
    # tcp_window stays in collectd's own namespace by default: TcpMemory
    # reads net.ipv4.tcp_mem, which only the initial namespace has (F1).
    tns = ' NetworkNamespace "%s"\n' % tcpw_netns if tcpw_netns else ""
    cg = ' Cgroup "%s"\n' % cgroup_glob if cgroup_glob else ""
    return ("BPFStats true\n"
            "<Pressure>\n Host true\n Resources \"cpu\" \"memory\" \"io\"\n%s"
            "</Pressure>\n"
            "<Netstacklat>\n%s Percentiles 50 99\n Buckets %s\n%s"
            "</Netstacklat>\n"
            "<WindowClamp>\n%s ClampTransitions true\n StalledAfter 2\n"
            "</WindowClamp>\n"
            % (cg, ns, "true" if buckets else "false",
               " GroupBy cgroup\n MaxGroups 64\n" if groupby_cgroup else "",
               tns))


# ------------------------------------------------------------ BPF objects

def held_bpf_ids(pid):
    """{'prog': ids, 'map': ids, 'link': ids} held through pid's fds."""
    out = {"prog": set(), "map": set(), "link": set()}
    for fd in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(fd) as f:
                for line in f:
                    for kind in out:
                        if line.startswith(kind + "_id:"):
                            out[kind].add(int(line.split()[1]))
        except OSError:
            pass
    return out


def live_bpf_ids():
    """{'prog': {id: name}, 'map': {id: name}, 'link': {id: prog_id}} of
    the whole host (bpftool)."""
    out = {}
    for kind in ("prog", "map", "link"):
        r = subprocess.run(["bpftool", "-j", kind, "show"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        import json
        try:
            items = json.loads(r.stdout or "[]")
        except ValueError:
            items = []
        out[kind] = {i["id"]: i.get("name", str(i.get("prog_id", "")))
                     for i in items if "id" in i}
    return out


def leftovers(held, timeout=5.0):
    """The ids of `held` (see held_bpf_ids) still alive after up to
    `timeout` s (programs and maps are freed after an RCU grace period)."""
    end = time.time() + timeout
    while True:
        live = live_bpf_ids()
        left = {k: {i: live[k][i] for i in held[k] if i in live[k]} for k in held}
        if not any(left.values()) or time.time() > end:
            return left
        time.sleep(0.2)


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ---------------------------------------------------------------- traffic

class MixedTraffic:
    """Runs rounds of mixed traffic in a NetnsPair until stop(): each round
    makes a new cgroup (tag-<n>), runs UDP, TCP ping-pong with a slow reader
    and TCP bulk with a shrinking receive buffer from inside it, keeps one
    stalled receiver open for a few rounds, then removes the cgroup."""

    def __init__(self, tag, round_seconds=6):
        self.tag = tag
        self.pair = NetnsPair(tag)
        self.round_seconds = round_seconds
        self.rounds = 0
        self.cgroups_made = 0
        self.errors = []
        self._stop = threading.Event()
        self._thread = None
        self._procs = []

    def _py(self, ns, script, args, cg=None, **kw):
        """script in namespace ns (None: our own), in cgroup cg."""
        pre = (lambda: cg.add(os.getpid())) if cg else None
        netns = ["ip", "netns", "exec", ns.name] if ns else []
        p = subprocess.Popen(netns + [sys.executable, script]
                             + [str(a) for a in args], preexec_fn=pre, **kw)
        self._procs.append(p)
        return p

    def _round(self, n):
        cg = Cgroup("%s-%d" % (self.tag, n))
        self.cgroups_made += 1
        b, a = self.pair.b, self.pair.a
        port = 21000 + (os.getpid() % 2000) * 10 + (n % 2) * 5
        procs = []
        try:
            # UDP: a -> b
            r = self._py(b, NSL_TRAFFIC, ["recv-udp", self.pair.B4, port, 300], cg,
                         stdout=subprocess.PIPE, text=True)
            r.stdout.readline()
            procs += [r, self._py(a, NSL_TRAFFIC, ["send-udp", self.pair.B4, port, 300])]
            # TCP ping-pong with a slow reader (5 ms per message), IPv6
            r = self._py(b, NSL_TRAFFIC, ["recv-tcp", self.pair.B6, port + 1, 40, 5], cg,
                         stdout=subprocess.PIPE, text=True)
            r.stdout.readline()
            procs += [r, self._py(a, NSL_TRAFFIC, ["send-tcp", self.pair.B6, port + 1, 40])]
            # TCP bulk on our own loopback, reader shrinks its buffer
            procs.append(self._py(None, TCPW_TRAFFIC, ["clamp", port + 2,
                                                    max(2, self.round_seconds - 2)], cg))
            # A stalled receiver that stays for this round
            st = self._py(None, TCPW_TRAFFIC, ["stall", port + 3, 200000], cg,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            st.stdout.readline()
            procs.append(st)
            self._stop.wait(self.round_seconds)
            st.stdin.close()
            for p in procs:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        except Exception as e:  # noqa: BLE001 - traffic is best effort
            self.errors.append("round %d: %s" % (n, e))
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        finally:
            cg.remove()
        self._procs = [p for p in self._procs if p.poll() is None]

    def _run(self):
        n = 0
        while not self._stop.is_set():
            self._round(n)
            n += 1
            self.rounds = n

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(60)
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.pair.delete()


def nsl_exchange(pair, cg, port, n_udp=100, m_tcp=20):
    """UDP and TCP ping-pong from namespace a to receivers in namespace b
    that run in cgroup cg (None: ours). Waits for the end."""
    def run(ns, args, cgroup=None, **kw):
        pre = (lambda: cgroup.add(os.getpid())) if cgroup else None
        return subprocess.Popen(["ip", "netns", "exec", ns.name, sys.executable,
                                 NSL_TRAFFIC] + [str(a) for a in args],
                                preexec_fn=pre, **kw)
    procs = []
    r = run(pair.b, ["recv-udp", pair.B4, port, n_udp], cg, stdout=subprocess.PIPE, text=True)
    r.stdout.readline()
    procs += [r, run(pair.a, ["send-udp", pair.B4, port, n_udp])]
    r = run(pair.b, ["recv-tcp", pair.B4, port + 1, m_tcp, 0], cg,
            stdout=subprocess.PIPE, text=True)
    r.stdout.readline()
    procs += [r, run(pair.a, ["send-tcp", pair.B4, port + 1, m_tcp])]
    for p in procs:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
