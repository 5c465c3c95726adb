# SPDX-License-Identifier: GPL-2.0-only
"""system_arms: the former system level, each arm (none, tstamp, floor,
ours, bpftrace) its own processes: sockperf and iperf3 rates, latency, CPU
(BENCH_ONLY=system_arms; not run by default)."""
import os

from .common import DEFAULT_NSL, BpftraceArm, FloorArm, NoneArm, OursArm, TstampArm, fmt, \
    iperf3, log, median, sockperf_pp, write_csv

SYSTEM_TESTS = ["udp_pp", "tcp_pp", "iperf3"]


def section_system_arms(rounds, cpu, out):
    """The former system level: each arm its own processes, one after the
    other (per-round ratios spread 0.4-2.8 on a shared VM). Kept for the
    bpftrace, tstamp, latency and iperf3 columns; BENCH_ONLY=system_arms."""
    secs = float(os.environ.get("BENCH_SYSTEM_SECONDS", "1.5"))
    arms = [NoneArm(), TstampArm(), FloorArm(),
            OursArm(DEFAULT_NSL), BpftraceArm(0, 0)]
    rows = []
    for r in range(rounds):
        k = r % len(arms)
        for arm in arms[k:] + arms[:k]:
            log("  system round %d/%d %s" % (r + 1, rounds, arm.name))
            with arm:
                for t in SYSTEM_TESTS:
                    if t == "iperf3":
                        res = iperf3(secs, cpu)
                    else:
                        res = sockperf_pp(t[:3], secs, cpu)
                    if res:
                        for metric, v in res.items():
                            if metric != "total_msgs":
                                rows.append({"round": r, "arm": arm.name, "test": t,
                                             "metric": metric, "value": v})
    write_csv(os.path.join(out, "system_arms_raw.csv"), rows)
    summ = summary(rounds, rows)
    write_csv(os.path.join(out, "system_arms.csv"), summ)
    return summ


def summary(rounds, rows):
    summ = []
    metrics = {"udp_pp": ["rate", "lat_p50_us", "lat_avg_us", "cpu_us_per_msg"],
               "tcp_pp": ["rate", "lat_p50_us", "lat_avg_us", "cpu_us_per_msg"],
               "iperf3": ["gbps", "cpu_s_per_gb"]}
    for t in SYSTEM_TESTS:
        for m in metrics[t]:
            val = {}
            for r in range(rounds):
                for x in rows:
                    if x["round"] == r and x["test"] == t and x["metric"] == m:
                        val[(r, x["arm"])] = x["value"]
            row = {"test": t, "metric": m,
                   "none": median([v for (r, a), v in val.items() if a == "none"])}
            for a in ("tstamp", "floor", "ours", "bpftrace"):
                rs = [val[(r, a)] / val[(r, "none")] for r in range(rounds)
                      if (r, a) in val and val.get((r, "none"))]
                row[a + "_ratio"] = median(rs)
                row[a + "_ratio_min"] = min(rs) if rs else None
                row[a + "_ratio_max"] = max(rs) if rs else None
            summ.append(row)
    return summ


def table(system_arms):
    if not system_arms:
        return []
    L = [""]
    L.append("System level, one process per arm (system_arms): sockperf/iperf3 on loopback pinned to one CPU; ratio to no plugin (median of per-round ratios)")
    L.append("(tstamp: no BPF, receive timestamps on; floor/ours/bpftrace all run with timestamps on; [min-max] of the per-round ratios shows the noise)")
    L.append("%-7s %-15s %10s %8s %8s %8s %9s  %-13s %-13s" % (
        "test", "metric", "none", "tstamp", "floor", "ours", "bpftrace",
        "floor[min-max]", "ours[min-max]"))
    for s in system_arms:
        L.append("%-7s %-15s %10s %8s %8s %8s %9s  %-14s %-13s" % (
            s["test"], s["metric"], fmt(s["none"], "%.4g"),
            fmt(s["tstamp_ratio"], "%.3f"), fmt(s["floor_ratio"], "%.3f"),
            fmt(s["ours_ratio"], "%.3f"), fmt(s["bpftrace_ratio"], "%.3f"),
            "%s-%s" % (fmt(s["floor_ratio_min"], "%.2f"), fmt(s["floor_ratio_max"], "%.2f")),
            "%s-%s" % (fmt(s["ours_ratio_min"], "%.2f"), fmt(s["ours_ratio_max"], "%.2f"))))
    return L
