# SPDX-License-Identifier: GPL-2.0-only
"""per_event: kernel BPF run stats (ns per program run) of ours, the floor
and bpftrace for the netstacklat configurations of BENCH_CONFIGS."""
import os
import shutil
import subprocess

from .common import COLLECTD, HOOKS, SKDR, BpfStats, BpftraceArm, Cgroup, Collectd, \
    FloorArm, OursArm, fmt, log, measure_progs, median, sockperf_pp, write_csv

# per_event's configurations: name, <Plugin ebpf> body, bpftrace mode (None:
# no bpftrace twin), extra environment of collectd.
HTAB = {"EBPF_TEST_CGROUP_FILTER": "hash"}  # the cgroup hash path, forced


SOCKET_HOOKS = ["tcp_socket_enqueued", "udp_socket_enqueued", "tcp_socket_read",
                "udp_socket_read"]


def per_event_configs(cgrel):
    cg = '<Netstacklat>\n Buckets false\n Cgroup "%s"\n</Netstacklat>' % cgrel
    gb = "<Netstacklat>\n Buckets false\n GroupBy cgroup\n</Netstacklat>"
    return [
        ("filters_off", "<Netstacklat>\n Buckets false\n</Netstacklat>", 0, None),
        # The baseline of the cgroup options: they load only the socket
        # hooks, so the enqueue program is then the first of ours on a
        # packet's path and pays the cold caches (the clock read, the
        # maps' lines) that ip_start and tcp_start pay in filters_off.
        # Against filters_off that moved cost read as the option's
        # (+60-90 ns on sk_data_ready).
        ("filters_off_sockets", "<Netstacklat>\n Buckets false\n Hooks %s\n</Netstacklat>"
         % " ".join(SOCKET_HOOKS), None, None),
        # Time one event in 16 (issue 13; an option from branch sample).
        ("sample16", "<Netstacklat>\n Buckets false\n SampleEvery 16\n</Netstacklat>",
         None, None),
        # The way chosen by default for one path without globs: ancestors.
        ("cgroup_filter", cg, 1, None),
        ("cgroup_filter_storage", cg, None, {"EBPF_TEST_CGROUP_FILTER": "storage"}),
        ("cgroup_filter_htab", cg, None, HTAB),
        ("groupby_cgroup", gb, 2, None),
        # (GroupBy cgroup has one way since the group index: no _htab twin.)
        # Latency outliers on, with a threshold no loopback event reaches:
        # the price of the check itself (the off case is filters_off).
        # (no bpftrace arm: it would repeat filters_off's)
        ("outliers_on", "<Netstacklat>\n Buckets false\n OutlierThreshold 10\n</Netstacklat>",
         None, None),
        # IncludeHOLBlocked false: one more program on tcp_probe (the
        # out-of-order arrivals) and the range check of tcp_socket_read.
        # (no bpftrace arm)
        ("hol_false", "<Netstacklat>\n Buckets false\n IncludeHOLBlocked false\n</Netstacklat>",
         None, None),
    ]


PER_EVENT_CONFIGS = [c[0] for c in per_event_configs("x")]
SKIPPED = {}  # configuration -> why it was not measured


def config_refused(conf, env):
    """collectd -T on conf: None if it takes it, else the reason (the log's
    first error line): an option this build does not have yet."""
    cd = Collectd(conf, env=env)
    try:
        # Collectd.test_run would not pass env.
        r = subprocess.run([COLLECTD, "-T", "-C", cd.conf], timeout=60, env=cd.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        rc, text = r.returncode, cd.log() + r.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "collectd -T timed out"
    finally:
        shutil.rmtree(cd.dir, ignore_errors=True)
    if rc == 0:
        for k in (env or {}):
            if k.startswith("EBPF_TEST_") and k not in text:
                return ("this build does not honour %s=%s (the log never names it)"
                        % (k, env[k]))
        return None
    lines = [x.split("] ", 1)[-1].strip() for x in text.splitlines()]
    for line in [x for x in lines if x.startswith("ebpf plugin:")] + \
            [x for x in lines if "error" in x.lower()]:
        return line[:160]
    return "collectd -T exited %d" % rc


def warm_up(cpu, cg):
    """Traffic before the second read gives the group its slot. (sockperf
    takes whole seconds: with -t 0.3 it printed its usage and sent
    nothing, so the GroupBy arm measured the group table's path.)"""
    if sockperf_pp("udp", 1, cpu, cg) is None:
        raise SystemExit("bench: the GroupBy warm-up's traffic failed")


def kept_configs(configs):
    """The configurations of BENCH_CONFIGS (default all) that collectd -T
    takes; the others go to SKIPPED with the reason."""
    only = os.environ.get("BENCH_CONFIGS")
    if only:
        configs = [c for c in configs if c[0] in only.split(",")]
    kept = []
    for c in configs:
        why = config_refused(c[1], c[3])
        if why:
            SKIPPED[c[0]] = why
            log("  per_event: skipping %s: collectd -T refuses it: %s" % (c[0], why))
        else:
            kept.append(c)
    return kept


def section_per_event(rounds, cpu, out):
    cg = Cgroup("bench%d" % os.getpid())
    cgid = os.stat(cg.path).st_ino
    configs = kept_configs(per_event_configs(cg.rel))
    secs = float(os.environ.get("BENCH_EVENT_SECONDS", "1.5"))
    try:
        rows = measure_rounds(configs, rounds, cpu, cg, cgid, secs)
    finally:
        cg.remove()
    write_csv(os.path.join(out, "per_event_raw.csv"), rows)
    summ = summary(configs, rounds, rows)
    write_csv(os.path.join(out, "per_event.csv"), summ)
    return summ


def measure_rounds(configs, rounds, cpu, cg, cgid, secs):
    """Every configuration's arms, alternated within a round, the order
    rotated per round: one row per program and hook each time."""
    def traffic():
        sockperf_pp("udp", secs, cpu, cg)
        sockperf_pp("tcp", secs, cpu, cg)

    rows = []
    with BpfStats():
        for r in range(rounds):
            for ci, (cname, conf, mode, env) in enumerate(configs):
                warm = (lambda: warm_up(cpu, cg)) if "GroupBy cgroup" in conf else None
                arms = [OursArm(conf, env, warm), FloorArm()]
                if mode is not None:
                    arms.append(BpftraceArm(mode, cgid))
                k = (r + ci) % len(arms)
                for arm in arms[k:] + arms[:k]:
                    log("  per_event round %d/%d %s %s" % (r + 1, rounds, cname, arm.name))
                    with arm as progs:
                        res = measure_progs(progs, traffic)
                    for i, m in res.items():
                        for h in m["hooks"]:
                            rows.append({"config": cname, "round": r, "arm": arm.name,
                                         "hook": h, "prog": m["name"], "prog_id": i,
                                         "runs": m["runs"], "ns_per_run": m["ns"],
                                         "insns_xlated": m["insns"],
                                         "bytes_jited": m["jited"]})
    return rows


def arm_figures(sel, h):
    """(ns, insns, runs) of one arm's rows sel on hook h in one round, or
    None if a program of the hook has no figure."""
    if h == SKDR:
        hs = ("tcp_socket_enqueued", "udp_socket_enqueued")
        # Every program on the tracepoint once: one may
        # serve both hooks (bpftrace's, our enqueued_tp).
        xs = list({x["prog_id"]: x for x in sel
                   if x["hook"] in hs}.values())
        if {x["hook"] for x in sel if x["hook"] in hs} != set(hs) or \
                any(x["ns_per_run"] is None for x in xs):
            return None
        return (sum(x["ns_per_run"] for x in xs),
                sum(x["insns_xlated"] for x in xs),
                sum(x["runs"] for x in xs) // len(xs))
    # Every program of the hook: a packet pays each
    # (IncludeHOLBlocked false puts a second one on
    # tcp_probe).
    xs = [x for x in sel if x["hook"] == h]
    if xs and all(x["ns_per_run"] is not None for x in xs):
        return (sum(x["ns_per_run"] for x in xs),
                sum(x["insns_xlated"] for x in xs), xs[0]["runs"])
    return None


def summary(configs, rounds, rows):
    """Medians over rounds; ratios per round first."""
    summ = []
    for cname, _, _, _ in configs:
        for h in HOOKS + [SKDR]:
            per = {}
            for r in range(rounds):
                v = {}
                for arm in ("ours", "floor", "bpftrace"):
                    sel = [x for x in rows if x["config"] == cname and x["round"] == r
                           and x["arm"] == arm]
                    f = arm_figures(sel, h)
                    if f is not None:
                        v[arm] = f
                per[r] = v
            if not any("ours" in v for v in per.values()):
                continue  # not loaded in this configuration
            summ.append(summary_row(cname, h, per))
    return summ


def summary_row(cname, h, per):
    def med(arm, j=0):
        return median([v[arm][j] for v in per.values() if arm in v])

    def ratio(a, b):
        return median([v[a][0] / v[b][0] for v in per.values()
                       if a in v and b in v and v[b][0]])

    def diff(a, b):
        return median([v[a][0] - v[b][0] for v in per.values() if a in v and b in v])
    return {"config": cname, "hook": h,
            "ours_ns": med("ours"), "floor_ns": med("floor"),
            "bpftrace_ns": med("bpftrace"),
            "ours_over_floor": ratio("ours", "floor"),
            "ours_minus_floor": diff("ours", "floor"),
            "ours_over_bpftrace": ratio("ours", "bpftrace"),
            "ours_insns": med("ours", 1), "bpftrace_insns": med("bpftrace", 1),
            "runs_per_round": med("ours", 2)}


def table(per_event, clock):
    """clock: the ladder's clock read of this run, or None."""
    if not (per_event or SKIPPED):
        return []
    L = [""]
    L.append("Per event: ns per program run (kernel BPF run stats; medians; ratios and differences per round, then median)")
    L.append("ours-fl: ours - floor; left: ours - floor - one clock read (the ladder's, this run; '-' without the ladder)")
    L.append("%-19s %-21s %7s %7s %9s %8s %10s %7s %6s %6s %6s" % (
        "config", "hook", "ours", "floor", "bpftrace", "ours/fl", "ours/bpft",
        "ours-fl", "left", "insns", "bt-ins"))
    for s in per_event or []:
        left = (s["ours_minus_floor"] - clock
                if clock is not None and s.get("ours_minus_floor") is not None else None)
        L.append("%-19s %-21s %7s %7s %9s %8s %10s %7s %6s %6s %6s" % (
            s["config"], s["hook"], fmt(s["ours_ns"]), fmt(s["floor_ns"]),
            fmt(s["bpftrace_ns"]), fmt(s["ours_over_floor"], "%.2f"),
            fmt(s["ours_over_bpftrace"], "%.2f"), fmt(s.get("ours_minus_floor")),
            fmt(left), fmt(s["ours_insns"]), fmt(s["bpftrace_insns"])))
    for c, why in SKIPPED.items():
        L.append("%-19s skipped: %s" % (c, why))
    return L
