# SPDX-License-Identifier: GPL-2.0-only
"""stripes: GroupBy's cost per event when two CPUs hit one group at once,
against the same group hit by one CPU (issue 34 asks for within 10 %):
without the CPUs' ways (EBPF_TEST_NO_WAYS) with a stripe each (plain
adds, as on a host of at most 16 CPUs) and with one stripe for both
(EBPF_TEST_STRIPES=1: atomic adds, as the CPUs that share a stripe on a
host past 16 CPUs), and in the CPUs' ways (the default; one stripe for
both beyond them)."""
import os
import subprocess
import time

from .common import BpfStats, OursArm, PktFloorArm, fmt, log, measure_progs, median, \
    next_port, pin, quantile, stop_server, write_csv

CONF = ('<Netstacklat>\n EnableTimestamps true\n GroupBy "interface"\n'
        ' Hooks "udp_socket_enqueued"\n</Netstacklat>\n')
MODES = [("stripe each", {"EBPF_TEST_NO_WAYS": "1"}),
         ("one stripe", {"EBPF_TEST_NO_WAYS": "1", "EBPF_TEST_STRIPES": "1"}),
         ("ways", {"EBPF_TEST_STRIPES": "1"})]


def blast(cpus, secs):
    """sockperf tp (64-byte UDP datagrams, as fast as it can) to sockperf sr
    on 127.0.0.1, both ends pinned to each CPU of cpus, all at once:
    loopback queues a datagram on the sender's CPU, so each CPU's events
    are its own and all of them land in one group (lo)."""
    procs = []
    for c in cpus:
        port = next_port()
        srv = subprocess.Popen(["sockperf", "sr", "-i", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=pin(c))
        procs.append((c, port, srv))
    time.sleep(0.15)
    clis = [subprocess.Popen(["sockperf", "tp", "-i", "127.0.0.1", "-p", str(port),
                              "-t", str(secs), "-m", "64"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=pin(c)) for c, port, _ in procs]
    for p in clis:
        p.wait()
    for _, _, srv in procs:
        stop_server(srv)


def window(ids, cpus, secs):
    """ns per run of enqueued_tp and of the empty sk_data_ready floor over
    one traffic window on cpus."""
    res = measure_progs({i: [n] for i, n in ids.items()}, lambda: blast(cpus, secs))
    out = {"runs": 0}
    for i, m in res.items():
        n = ids[i]
        if n == "enqueued_tp":
            out["ours_ns"], out["runs"] = m["ns"], m["runs"]
        elif n == "pe_skdr":
            out["empty_ns"] = m["ns"]
    return out


def section_stripes(rounds, cpu, out):
    """Per round, each mode (order reversed every round) in its own collectd
    with the floors on sk_data_ready beside it: BENCH_STRIPE_PAIRS (6)
    pairs of traffic windows of BENCH_STRIPE_SECONDS (2), one CPU (cpu)
    then both CPUs at once, or the other way round (swapped every pair).
    The figure is the ratio of enqueued_tp's ns per run on two CPUs to one
    CPU within each pair (the machine's speed moves between minutes, much
    less between two neighbouring windows), and the same ratio over the
    empty program's ns per run of each window; medians and the 25th-75th
    percentiles over all pairs of all rounds."""
    secs = int(os.environ.get("BENCH_STRIPE_SECONDS", "2"))
    pairs = int(os.environ.get("BENCH_STRIPE_PAIRS", "6"))
    other = 1 - cpu if cpu in (0, 1) else 0
    if os.cpu_count() < 2:
        log("  stripes: needs two CPUs, skipped")
        return None
    rows = []
    with BpfStats():
        for r in range(rounds):
            for mname, env in (MODES if r % 2 == 0 else MODES[::-1]):
                log("  stripes round %d/%d, %s stripes" % (r + 1, rounds, mname))
                with PktFloorArm() as floors, OursArm(CONF, env=env) as ours:
                    ids = {i: n for i, n in floors.items() if n == "pe_skdr"}
                    ids.update({i: "enqueued_tp" for i, hooks in ours.items()
                                if "udp_socket_enqueued" in hooks})
                    if len(ids) != 2:
                        log("  stripes: enqueued_tp or the floor did not load, skipped")
                        return None
                    blast([cpu], 1)  # the group's entry made, lines warm
                    for p in range(pairs):
                        order = ("one", "two") if p % 2 == 0 else ("two", "one")
                        w = {}
                        for k in order:
                            w[k] = window(ids, [cpu] if k == "one" else [cpu, other], secs)
                        rows.append(pair_row(mname, r, p, order[0], w))
    write_csv(os.path.join(out, "stripes_raw.csv"), rows)
    summ = [summary(m, [x for x in rows if x["mode"] == m]) for m, _ in MODES]
    write_csv(os.path.join(out, "stripes.csv"), summ)
    return summ


def pair_row(mname, r, p, first, w):
    row = {"mode": mname, "round": r, "pair": p, "first": first}
    for k in ("one", "two"):
        row["%s_runs" % k] = w[k]["runs"]
        row["%s_ns" % k] = w[k].get("ours_ns")
        row["%s_empty_ns" % k] = w[k].get("empty_ns")
    ok = all(row.get(k) for k in ("one_ns", "two_ns", "one_empty_ns", "two_empty_ns"))
    row["ratio"] = row["two_ns"] / row["one_ns"] if ok else None
    row["ratio_floor"] = ((row["two_ns"] / row["two_empty_ns"]) /
                          (row["one_ns"] / row["one_empty_ns"]) if ok else None)
    return row


def summary(mname, rows):
    rs = [x["ratio"] for x in rows if x["ratio"]]
    fs = [x["ratio_floor"] for x in rows if x["ratio_floor"]]
    return {"mode": mname, "pairs": len(rs),
            "one_ns": median([x["one_ns"] for x in rows]),
            "two_ns": median([x["two_ns"] for x in rows]),
            "one_runs": median([x["one_runs"] for x in rows]),
            "two_runs": median([x["two_runs"] for x in rows]),
            "ratio": median(rs), "ratio_q25": quantile(rs, 0.25),
            "ratio_q75": quantile(rs, 0.75),
            "ratio_floor": median(fs), "ratio_floor_q25": quantile(fs, 0.25),
            "ratio_floor_q75": quantile(fs, 0.75)}


def pct(v):
    return "-" if v is None else "%+.1f %%" % (100 * (v - 1))


def table(st):
    if not st:
        return []
    L = ["", "GroupBy, one group hit by two CPUs at once against one CPU (enqueued_tp, "
         "ns per run; medians over pairs of neighbouring windows; issue 34: within 10 %):",
         "| GroupBy's values | pairs | one CPU ns | two CPUs ns | two against one (25-75th) "
         "| over the empty program (25-75th) |",
         "|---|---|---|---|---|---|"]
    for s in st:
        L.append("| %s | %d | %s | %s | %s (%s to %s) | %s (%s to %s) |" % (
            s["mode"], s["pairs"], fmt(s["one_ns"], "%.1f"), fmt(s["two_ns"], "%.1f"),
            pct(s["ratio"]), pct(s["ratio_q25"]), pct(s["ratio_q75"]),
            pct(s["ratio_floor"]), pct(s["ratio_floor_q25"]), pct(s["ratio_floor_q75"])))
    return L
