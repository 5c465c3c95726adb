# SPDX-License-Identifier: GPL-2.0-only
"""ladder: bench/ladder.bpf.c, the parts of one event, each program alone on
tcp_socket_read's hook; gives the clock read cost of this run."""
import os

from .common import BUILD, BpfStats, FloorArm, fmt, log, measure_progs, median, \
    sockperf_pp, write_csv

LADDER_OBJ = os.path.join(BUILD, "bench", "ladder.bpf.o")
LADDER = ["l_empty", "l_loads", "l_clock", "l_clk_mono", "l_hist", "l_cg_htab", "l_cg_stor",
          "l_grp_htab", "l_grp_stor"]


def section_ladder(rounds, cpu, out):
    """bench/ladder.bpf.c: the parts of one event on tcp_socket_read's
    tracepoint under TCP ping-pong, each program alone on the hook (all
    loaded, one attached), order rotated per round."""
    secs = float(os.environ.get("BENCH_EVENT_SECONDS", "1.5"))
    rows = []
    with BpfStats():
        for r in range(rounds):
            k = r % len(LADDER)
            for n in LADDER[k:] + LADDER[:k]:
                log("  ladder round %d/%d %s" % (r + 1, rounds, n))
                with FloorArm(LADDER_OBJ, {n: n}, only=n) as progs:
                    res = measure_progs(progs, lambda: sockperf_pp("tcp", secs, cpu))
                for m in res.values():
                    rows.append({"round": r, "prog": m["hooks"][0], "runs": m["runs"],
                                 "ns_per_run": m["ns"], "insns_xlated": m["insns"]})
    write_csv(os.path.join(out, "ladder_raw.csv"), rows)
    summ = []
    for n in LADDER:
        xs = [x for x in rows if x["prog"] == n]
        summ.append({"prog": n, "ns_per_run": median([x["ns_per_run"] for x in xs]),
                     "over_empty": median([
                         x["ns_per_run"] / e["ns_per_run"] for x in xs for e in rows
                         if e["prog"] == "l_empty" and e["round"] == x["round"]
                         and x["ns_per_run"] and e["ns_per_run"]]),
                     "insns_xlated": median([x["insns_xlated"] for x in xs])})
    write_csv(os.path.join(out, "ladder.csv"), summ)
    return summ


def ladder_clock(ladder):
    """One clock read, from the ladder of this run: l_clock - l_loads."""
    ns = {x["prog"]: x["ns_per_run"] for x in ladder or []}
    if ns.get("l_clock") is None or ns.get("l_loads") is None:
        return None
    return ns["l_clock"] - ns["l_loads"]


def table(ladder):
    if not ladder:
        return []
    L = [""]
    L.append("What one event is made of (bench/ladder.bpf.c on tp_btf/skb_copy_datagram_iovec, TCP ping-pong, each program alone on the hook)")
    L.append("%-12s %8s %9s %6s" % ("program", "ns/run", "x empty", "insns"))
    for s in ladder:
        L.append("%-12s %8s %9s %6s" % (s["prog"], fmt(s["ns_per_run"]),
                                         fmt(s["over_empty"], "%.2f"),
                                         fmt(s["insns_xlated"])))
    L.append("clock read (l_clock - l_loads): %s ns" % fmt(ladder_clock(ladder), "%.1f"))
    return L
