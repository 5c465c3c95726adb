# SPDX-License-Identifier: GPL-2.0-only
"""plugin: the plugin's own read-callback CPU, init time, RSS and BPF map
memory (bench/readcost on build/ebpf.so, and real collectd)."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from .common import BENCH, DEFAULT_NSL, DEFAULT_PRESSURE, PLUGIN_SO, READCOST, Cgroup, \
    Collectd, cgroup2_root, fmt, log, median, snippet_body, write_csv


def cgtraffic_main(rels):
    """bench/run --cgtraffic REL...: one TCP and one UDP socket pair made
    from inside each cgroup, then a message on each pair every 50 ms."""
    root = cgroup2_root()
    pairs = []
    for i, rel in enumerate(rels):
        with open(os.path.join(root, rel, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        c = socket.create_connection(ls.getsockname())
        a, _ = ls.accept()
        ls.close()
        u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u1.bind(("127.0.0.1", 0))
        u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u2.bind(("127.0.0.1", 0))
        u2.connect(u1.getsockname())
        pairs.append((c, a, u2, u1))
    print("ready", flush=True)
    while True:
        for c, a, u2, u1 in pairs:
            c.send(b"x")
            a.recv(16)
            a.send(b"y")
            c.recv(16)
            u2.send(b"z")
            u1.recv(16)
        time.sleep(0.05)


class CgTraffic:
    def __init__(self, rels):
        self.rels = rels

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, os.path.join(BENCH, "run"),
                                   "--cgtraffic"] + self.rels,
                                  stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            raise SystemExit("bench: cgroup traffic did not start")
        return self

    def __exit__(self, *a):
        self.p.kill()
        self.p.wait()


def task_ctxsw(pid):
    """Context switches of every thread of pid, voluntary + involuntary."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for line in f:
                    if "ctxt_switches:" in line:
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def task_cpu_ns(pid):
    """CPU time of every thread of pid, ns (schedstat: not tick-sampled)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def vm_rss(pid):
    """VmRSS of pid, KiB (0 if not found)."""
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss


def map_memlock(pid):
    """(memlock in bytes, number) of the BPF maps pid holds, by fdinfo."""
    ml = nmaps = 0
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                txt = f.read()
        except OSError:
            continue
        if "map_type:" in txt:
            for line in txt.splitlines():
                if line.startswith("memlock:"):
                    ml += int(line.split()[1])
                    nmaps += 1
    return ml, nmaps


def collectd_cost(conf, load_ebpf, seconds, extra=""):
    """A real collectd at Interval 1 without any writer (values stop in
    collectd's cache): its CPU per interval over `seconds`, all threads,
    after two warm-up intervals; then its VmRSS (KiB) and the memlock (KiB)
    of the BPF maps it holds."""
    cd = Collectd(conf, interval=1, load_ebpf=load_ebpf, extra=extra)
    with open(cd.conf) as f:
        text = f.read()
    with open(cd.conf, "w") as f:
        f.write(text.replace("LoadPlugin csv\n", "").replace("LogLevel debug", "LogLevel info"))
    with cd:
        time.sleep(2.5)
        c0, x0 = task_cpu_ns(cd.proc.pid), task_ctxsw(cd.proc.pid)
        t0 = time.monotonic()
        time.sleep(seconds)
        el = time.monotonic() - t0
        cpu_us = (task_cpu_ns(cd.proc.pid) - c0) / 1e3 / el
        ctxsw = (task_ctxsw(cd.proc.pid) - x0) / el
        rss = vm_rss(cd.proc.pid)
        ml, nmaps = map_memlock(cd.proc.pid)
        if load_ebpf and "ebpf plugin" in cd.log() and nmaps == 0 and "Netstacklat" in conf:
            log("bench: collectd loaded no BPF map:\n" + cd.log()[-2000:])
    return cpu_us, ctxsw, rss, ml // 1024, nmaps


def plugin_configs(rels):
    """(readcost and collectd's configurations, collectd's only)."""
    configs = [
        ("defaults", DEFAULT_PRESSURE + DEFAULT_NSL),
        ("pressure_50cg", "<Pressure>\n Host true\n" +
         "".join(' Cgroup "%s"\n' % r for r in rels) + "</Pressure>\n" + DEFAULT_NSL),
        ("groupby_cgroup_50cg", DEFAULT_PRESSURE +
         "<Netstacklat>\n GroupBy cgroup\n</Netstacklat>\n"),
        # The shipped snippet, as installed (its <Plugin ebpf> body).
        ("snippet", snippet_body()),
    ]
    # Real collectd only: the snippet with collectd's global WriteThreads 1
    # (fewer threads woken per dispatched value).
    collectd_only = [("snippet_writethreads1", snippet_body(), "WriteThreads 1")]
    return configs, collectd_only


def section_plugin(rounds, cpu, out):
    cgroup2_root()
    base = "bench%d" % os.getpid()
    top = Cgroup(base)
    cgs = [Cgroup("%s/cg%02d" % (base, i)) for i in range(50)]
    rels = [c.rel for c in cgs]
    configs, collectd_only = plugin_configs(rels)
    nreads = int(os.environ.get("BENCH_READS", "20"))
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench-")
    try:
        with CgTraffic(rels):
            rows += readcost_rows(rounds, configs, nreads, tmp)
            rows += collectd_rows(rounds, configs, collectd_only)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for c in cgs:
            c.remove()
        top.remove()
    write_csv(os.path.join(out, "plugin_raw.csv"), rows)
    summ = summary(rows, configs, collectd_only)
    write_csv(os.path.join(out, "plugin.csv"), summ)
    return summ


def readcost_rows(rounds, configs, nreads, tmp):
    rows = []
    for r in range(rounds):
        for name, conf in configs:
            path = os.path.join(tmp, name + ".conf")
            with open(path, "w") as f:
                f.write(conf)
            log("  plugin round %d/%d %s" % (r + 1, rounds, name))
            o = subprocess.run([READCOST, PLUGIN_SO, path, str(nreads), "250"],
                               stdout=subprocess.PIPE, text=True).stdout
            kv = dict(x.split("=") for x in o.split())
            row = {"config": name, "round": r}
            row.update({k: float(v) for k, v in kv.items()})
            rows.append(row)
    return rows


def collectd_rows(rounds, configs, collectd_only):
    """RSS added to collectd and map memory, with real collectd."""
    rows = []
    for r in range(min(rounds, 2)):
        for name, conf, extra in ([("collectd_baseline", None, "")] +
                                  [c + ("",) for c in configs] + collectd_only):
            log("  plugin collectd %s" % name)
            cpu_us, ctxsw, rss, ml, nm = collectd_cost(conf or "", conf is not None, 5,
                                                       extra)
            rows.append({"config": "collectd:" + name, "round": r,
                         "cpu_us_per_interval": cpu_us,
                         "ctxsw_per_interval": ctxsw,
                         "rss_kib": rss, "map_memlock_kib": ml, "nmaps": nm})
    return rows


def summary(rows, configs, collectd_only):
    summ = []
    for name, _ in configs:
        xs = [x for x in rows if x["config"] == name]
        if not xs:
            continue
        summ.append({"config": name, **{k: median([x.get(k) for x in xs]) for k in
                     ("read_cpu_us_med", "read_cpu_us_p90", "read_wall_us_med",
                      "values_per_read", "init_ms", "init_cpu_ms", "rss_kib_added",
                      "rss_anon_kib_added", "rss_file_kib_added",
                      "rss_anon_kib_added_after_trim", "map_memlock_kib", "nmaps")}})
    base = [x for x in rows if x["config"] == "collectd:collectd_baseline"]
    base_rss = median([x["rss_kib"] for x in base])
    base_cpu = median([x["cpu_us_per_interval"] for x in base])
    for name in [c[0] for c in configs + collectd_only]:
        xs = [x for x in rows if x["config"] == "collectd:" + name]
        if xs and base_rss:
            summ.append({"config": "collectd_" + name,
                         "collectd_cpu_us_added": median([x["cpu_us_per_interval"]
                                                          for x in xs]) - base_cpu,
                         "collectd_ctxsw_added": median([x["ctxsw_per_interval"] for x in xs])
                         - median([x["ctxsw_per_interval"] for x in base]),
                         "collectd_rss_added_kib": median([x["rss_kib"] for x in xs]) - base_rss,
                         "map_memlock_kib": median([x["map_memlock_kib"] for x in xs]),
                         "nmaps": median([x["nmaps"] for x in xs])})
    return summ


def table(plugin):
    if not plugin:
        return []
    L = [""]
    L.append("The plugin itself. Plain rows: bench/readcost on build/ebpf.so (read-us: CPU of the read callback alone, per interval).")
    L.append("collectd_* rows: real collectd (Interval 1, no writer) minus collectd without the plugin: read-us is all of collectd's added CPU per")
    L.append("interval, values is its added context switches per interval. trim-KiB: anonymous RSS left after malloc_trim(0).")
    L.append("%-30s %9s %9s %8s %8s %9s %9s %8s %7s %5s" % (
        "config", "read-us", "read-p90", "values", "init-ms", "init-cpu",
        "rss-KiB", "trim-KiB", "maps-KiB", "maps"))
    for s in plugin:
        L.append("%-30s %9s %9s %8s %8s %9s %9s %8s %7s %5s" % (
            s["config"], fmt(s.get("read_cpu_us_med", s.get("collectd_cpu_us_added")), "%.0f"),
            fmt(s.get("read_cpu_us_p90"), "%.0f"),
            fmt(s.get("values_per_read", s.get("collectd_ctxsw_added"))),
            fmt(s.get("init_ms"), "%.0f"), fmt(s.get("init_cpu_ms"), "%.0f"),
            fmt(s.get("rss_kib_added", s.get("collectd_rss_added_kib"))),
            fmt(s.get("rss_anon_kib_added_after_trim")),
            fmt(s.get("map_memlock_kib")), fmt(s.get("nmaps"))))
    return L
