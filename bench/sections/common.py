# SPDX-License-Identifier: GPL-2.0-only
"""What the sections of bench/run share: the build's paths, the hooks and
our programs' names, the kernel's BPF state (run stats, bpftool), the arms
(none, tstamp, floor, ours, bpftrace, the per-tracepoint floors), the
traffic (sockperf, iperf3), the statistics and the CSV and table output."""
import csv
import ctypes
import json
import os
import platform
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from ebpftest import COLLECTD, Cgroup, Collectd, cgroup2_root, held_prog_ids  # noqa: E402,F401

BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))
BENCH = os.path.join(REPO, "bench")
BPFLOAD = os.path.join(BUILD, "bench", "bpfload")
READCOST = os.path.join(BUILD, "bench", "readcost")
EMPTY_OBJ = os.path.join(BUILD, "bench", "empty.bpf.o")
PKT_FLOOR_OBJ = os.path.join(BUILD, "bench", "pkt_floor.bpf.o")
PLUGIN_SO = os.path.join(BUILD, "ebpf.so")
BT = os.path.join(BENCH, "netstacklat.bt")

HOOKS = ["ip_start", "tcp_start", "tcp_socket_enqueued", "udp_socket_enqueued",
         "tcp_socket_read"]
# The kernel keeps 15 characters of a program name. One program
# (enqueued_tp) serves both enqueue hooks on sk_data_ready; builds before it
# had one per hook (tcp_enqueued_tp, udp_enqueued_tp).
OURS = {"ip_start_tp": ["ip_start"], "tcp_start_tp": ["tcp_start"],
        "enqueued_tp": ["tcp_socket_enqueued", "udp_socket_enqueued"],
        "tcp_enqueued_tp": ["tcp_socket_enqueued"],
        "udp_enqueued_tp": ["udp_socket_enqueued"],
        "tcp_read_tp": ["tcp_socket_read"],
        # IncludeHOLBlocked false: out-of-order arrivals, on tcp_probe.
        "hol_arrival_tp": ["tcp_start"]}
FLOOR = {"e_ip_start": "ip_start", "e_tcp_start": "tcp_start",
         "e_tcp_enq": "tcp_socket_enqueued", "e_udp_enq": "udp_socket_enqueued",
         "e_tcp_read": "tcp_socket_read"}
# bpftrace's programs, by the tracepoint `bpftool perf` says they sit on; one
# program serves both enqueue hooks, like a user would write it.
BT_TP = {"netif_receive_skb": ["ip_start"], "tcp_probe": ["tcp_start"],
         "sk_data_ready": ["tcp_socket_enqueued", "udp_socket_enqueued"],
         "skb_copy_datagram_iovec": ["tcp_socket_read"]}
SKDR = "sk_data_ready(both)"
# The default settings, spelled out: collectd drops an empty block, and the
# plugin then sees no <Netstacklat> at all.
DEFAULT_NSL = "<Netstacklat>\n EnableTimestamps true\n</Netstacklat>\n"
DEFAULT_PRESSURE = "<Pressure>\n Host true\n</Pressure>\n"  # the two enqueue hooks together

SO_TIMESTAMPING = 37
SOF_RX_SOFTWARE_AND_SOFTWARE = (1 << 3) | (1 << 4)
SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
BPF_ENABLE_STATS = 32

PORT = 21000 + os.getpid() % 5000


def next_port():
    """A port no earlier measurement of this run used."""
    global PORT
    PORT += 1
    return PORT


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    i = int(k)
    return xs[i] + (xs[min(i + 1, len(xs) - 1)] - xs[i]) * (k - i)


def sh(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, **kw).stdout


def snippet_body():
    """The <Plugin ebpf> body of collectd.conf.d/ebpf.conf."""
    with open(os.path.join(REPO, "collectd.conf.d", "ebpf.conf")) as f:
        return f.read().split("<Plugin ebpf>\n", 1)[1].rsplit("</Plugin>", 1)[0]


# ------------------------------------------------------------ kernel state

class BpfStats:
    """Kernel BPF run-time statistics on while held (bpf_enable_stats: the
    kernel turns them off again when the fd closes, even if we crash)."""

    def __enter__(self):
        self.fd = -1
        if SYS_BPF:
            libc = ctypes.CDLL(None, use_errno=True)
            attr = (ctypes.c_uint32 * 16)()  # attr.enable_stats.type = 0: RUN_TIME
            self.fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, 4)
        if self.fd < 0:
            raise SystemExit("bench: cannot enable BPF run stats (bpf_enable_stats)")
        return self

    def __exit__(self, *a):
        os.close(self.fd)


def cpu_psi():
    """some avg60 of /proc/pressure/cpu: how busy others keep the machine."""
    try:
        with open("/proc/pressure/cpu") as f:
            return f.readline().split("avg60=")[1].split()[0]
    except (OSError, IndexError):
        return "?"


def stats_on_elsewhere():
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip() != "0"
    except OSError:
        return False


def prog_info():
    """id -> bpftool's JSON of every loaded program."""
    try:
        return {p["id"]: p for p in json.loads(sh(["bpftool", "-j", "prog", "show"]))}
    except ValueError:
        return {}


def perf_links(pid):
    """prog id -> tracepoint name, of the perf-event links of pid."""
    out = {}
    try:
        for e in json.loads(sh(["bpftool", "-j", "perf", "show"])):
            if e.get("pid") == pid and "tracepoint" in e:
                out[e["prog_id"]] = e["tracepoint"]
    except ValueError:
        pass
    return out


HOOK_TPS = ("netif_receive_skb", "tcp_probe", "sk_data_ready", "skb_copy_datagram_iovec")


def foreign_on_hooks(exclude=()):
    """BPF programs of other processes on the tracepoints measured here:
    they run in every arm, "none" included, and receive timestamps stay on
    while a netstacklat of theirs runs. Returns "name@tracepoint" strings."""
    info = prog_info()
    out = []
    try:
        for l in json.loads(sh(["bpftool", "-j", "link", "show"])):
            if l.get("tp_name") in HOOK_TPS and l.get("prog_id") not in exclude:
                out.append("%s@%s" % (info.get(l["prog_id"], {}).get("name", "?"),
                                      l["tp_name"]))
        for e in json.loads(sh(["bpftool", "-j", "perf", "show"])):
            if e.get("tracepoint") in HOOK_TPS and e.get("prog_id") not in exclude:
                out.append("%s@%s" % (info.get(e["prog_id"], {}).get("name", "?"),
                                      e["tracepoint"]))
    except ValueError:
        pass
    return sorted(out)


def tstamp_socket():
    """Hold one socket asking for software receive timestamps: the kernel
    then stamps every received skb (what the plugin does by itself)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, SOF_RX_SOFTWARE_AND_SOFTWARE)
    return s


def realtime_minus_monotonic():
    return time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def ensure_tracefs():
    if not os.path.exists("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                       stderr=subprocess.DEVNULL)


def measure_progs(progs, traffic):
    """ns per run of each program in progs during traffic()."""
    s0 = prog_info()
    traffic()
    s1 = prog_info()
    out = {}
    for i, hooks in progs.items():
        if i not in s0 or i not in s1:
            continue
        dc = s1[i].get("run_cnt", 0) - s0[i].get("run_cnt", 0)
        dt = s1[i].get("run_time_ns", 0) - s0[i].get("run_time_ns", 0)
        out[i] = {"hooks": hooks, "name": s1[i].get("name", ""), "runs": dc,
                  "ns": dt / dc if dc > 0 else None,
                  "insns": s1[i].get("bytes_xlated", 0) // 8,
                  "jited": s1[i].get("bytes_jited", 0)}
    return out


# ------------------------------------------------------------------- arms
# Each arm is a context manager; entering returns {prog id: [hooks]} of the
# BPF programs it put on the hooks (empty for no BPF).

class NoneArm:
    name = "none"

    def __enter__(self):
        return {}

    def __exit__(self, *a):
        pass


class TstampArm:
    """No BPF, only receive timestamps on: what the kernel pays for them."""
    name = "tstamp"

    def __enter__(self):
        self.s = tstamp_socket()
        time.sleep(0.2)
        return {}

    def __exit__(self, *a):
        self.s.close()


class FloorArm:
    name = "floor"

    def __init__(self, obj=EMPTY_OBJ, names=FLOOR, only=None):
        self.obj, self.names = obj, names
        self.args = ["only=" + only] if only else []

    def __enter__(self):
        self.s = tstamp_socket()
        self.p = subprocess.Popen([BPFLOAD, self.obj] + self.args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            raise SystemExit("bench: bpfload failed")
        self.init_ms = float(line[1])
        progs = {}
        for kv in line[2:]:
            n, i = kv.split("=")
            progs[int(i)] = [self.names[n]]
        time.sleep(0.2)
        return progs

    def __exit__(self, *a):
        self.p.stdin.close()
        self.p.wait(10)
        self.s.close()


class PktFloorArm:
    """bench/pkt_floor.bpf.c on the receive tracepoints: per tracepoint an
    empty program, then one that reads the clock once (or another object of
    floors: bench/drop_floor.bpf.c)."""
    name = "floors"

    def __init__(self, obj=PKT_FLOOR_OBJ):
        self.obj = obj

    def __enter__(self):
        self.p = subprocess.Popen([BPFLOAD, self.obj], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            raise SystemExit("bench: bpfload %s failed" % self.obj)
        return {int(i): n for n, i in (kv.split("=") for kv in line[2:])}

    def __exit__(self, *a):
        self.p.stdin.close()
        self.p.wait(10)


class OursArm:
    name = "ours"

    def __init__(self, conf, env=None, warm=None):
        self.conf, self.env, self.warm = conf, env, warm

    def __enter__(self):
        t0 = time.monotonic()
        self.cd = Collectd(self.conf, interval=10, env=self.env).start()
        ids = held_prog_ids(self.cd.proc.pid)
        info = prog_info()
        progs = {i: OURS[info[i]["name"]] for i in ids
                 if i in info and info[i].get("name") in OURS}
        time.sleep(0.3)  # the plugin's timestamp socket takes ~100 ms
        if self.warm:
            # GroupBy cgroup: a group's first events go to the group table;
            # the read after them names it and gives it its slot (the
            # steady state of a long-lived group). Traffic now, then wait
            # for the second read (Interval 10) before measuring.
            self.warm()
            time.sleep(max(0.0, t0 + 11.0 - time.monotonic()))
        return progs

    def __exit__(self, *a):
        self.cd.__exit__()


class BpftraceArm:
    name = "bpftrace"

    def __init__(self, mode=0, cgid=0):
        self.mode, self.cgid = mode, cgid

    def __enter__(self):
        self.s = tstamp_socket()
        self.p = subprocess.Popen(
            ["bpftrace", BT, str(realtime_minus_monotonic()), str(self.mode),
             str(self.cgid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        progs = {}
        end = time.time() + 60
        while time.time() < end:
            if self.p.poll() is not None:
                raise SystemExit("bench: bpftrace exited (%s)" % self.p.returncode)
            links = perf_links(self.p.pid)
            if len(links) >= len(BT_TP):
                progs = {i: BT_TP[tp] for i, tp in links.items() if tp in BT_TP}
                break
            time.sleep(0.2)
        else:
            raise SystemExit("bench: bpftrace did not attach in 60 s")
        time.sleep(0.3)
        return progs

    def __exit__(self, *a):
        self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.s.close()


def held_by_ours(ours, floors):
    """Every program of a floors arm and every one collectd holds (OursArm
    names only netstacklat's: tcp_window's and drops' too), as
    {prog id: (kind, name)} with kind "floor" or "ours"."""
    ids = dict((i, ("floor", n)) for i, n in floors.items())
    info = prog_info()
    for i in held_prog_ids(ours.cd.proc.pid):
        ids[i] = ("ours", info.get(i, {}).get("name", ""))
    return ids


# ---------------------------------------------------------------- traffic

NICE = int(os.environ.get("BENCH_NICE", "-10"))


def pin(cpu, cg=None):
    """preexec of a traffic process: into cgroup cg, onto one CPU, and at
    BENCH_NICE (default -10: about 90% of the CPU against other busy
    processes, without starving them as a real-time class would)."""
    def pre():
        if cg:
            cg.add(os.getpid())
        os.sched_setaffinity(0, {cpu})
        if NICE:
            os.nice(NICE)
    return pre


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sockperf_fields(line):
    """sockperf's "[...] Key=value; Key=value" summary line, as a dict."""
    return dict(kv.split("=") for kv in line.split("]")[1].replace(" ", "").strip(";").split(";"))


def stop_server(srv):
    """A sockperf sr ended as its user would (SIGINT), killed after 10 s."""
    srv.send_signal(signal.SIGINT)
    try:
        srv.wait(10)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.wait()


def sockperf_pp(proto, seconds, cpu, cg=None):
    """Ping-pong of 64-byte messages on 127.0.0.1, server and client on one
    CPU. Returns rate (msg/s, valid part), p50 and avg latency (us, half
    round trip as sockperf reports it) and CPU us per message of both."""
    port = next_port()
    tcp = ["--tcp"] if proto == "tcp" else []
    c0 = children_cpu()
    srv = subprocess.Popen(["sockperf", "sr", "-i", "127.0.0.1", "-p", str(port)] + tcp,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           preexec_fn=pin(cpu, cg))
    time.sleep(0.15)
    out = subprocess.run(["sockperf", "pp", "-i", "127.0.0.1", "-p", str(port),
                          # whole seconds: sockperf refuses "0.3" (and
                          # reads "1.5" as 1)
                          "-t", str(max(1, int(seconds))), "-m", "64"] + tcp,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=pin(cpu, cg)).stdout
    stop_server(srv)
    cpu_s = children_cpu() - c0
    res = {}
    for line in out.splitlines():
        if "[Valid Duration]" in line:
            f = sockperf_fields(line)
            res["rate"] = float(f["ReceivedMessages"]) / float(f["RunTime"].rstrip("sec"))
        elif "[Total Run]" in line:
            res["total_msgs"] = float(sockperf_fields(line)["ReceivedMessages"])
        elif "avg-latency=" in line:
            res["lat_avg_us"] = float(line.split("avg-latency=")[1].split()[0])
        elif "percentile 50.000" in line:
            res["lat_p50_us"] = float(line.split("=")[1])
    if "rate" not in res:
        log("bench: sockperf gave no result:\n" + out[-2000:])
        return None
    res["cpu_us_per_msg"] = cpu_s * 1e6 / max(res.get("total_msgs", 1), 1)
    return res


def iperf3(seconds, cpu):
    """Loopback TCP bulk throughput, server and client on one CPU."""
    port = next_port()
    c0 = children_cpu()
    srv = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           preexec_fn=pin(cpu))
    time.sleep(0.15)
    out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t",
                          str(seconds), "-J"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True,
                         preexec_fn=pin(cpu)).stdout
    try:
        srv.wait(10)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.wait()
    cpu_s = children_cpu() - c0
    try:
        j = json.loads(out)
        bps = j["end"]["sum_received"]["bits_per_second"]
        nbytes = j["end"]["sum_received"]["bytes"]
    except (ValueError, KeyError):
        log("bench: iperf3 gave no result:\n" + out[-2000:])
        return None
    return {"gbps": bps / 1e9, "cpu_s_per_gb": cpu_s / (nbytes / 1e9)}


# ------------------------------------------------------------------ output

def write_csv(path, rows):
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("%.4g" % v if isinstance(v, float) else v)
                        for k, v in r.items()})


def fmt(v, spec="%.0f"):
    return "-" if v is None else spec % v
