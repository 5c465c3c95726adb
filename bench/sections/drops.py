# SPDX-License-Identifier: GPL-2.0-only
"""drops: its program on kfree_skb against the floors there, the per_packet
way (both attach orders, one event = one run of the empty program)."""
import os
import subprocess
import sys

from .common import BUILD, BpfStats, OursArm, PktFloorArm, fmt, held_by_ours, log, \
    measure_progs, median, next_port, pin, write_csv

DROP_FLOOR_OBJ = os.path.join(BUILD, "bench", "drop_floor.bpf.o")
DROPS_CONFIGS = [("drops", '<Drops>\n    NetworkNamespace "host"\n  </Drops>'),
                 ("drops_notify", '<Drops>\n    NetworkNamespace "host"\n'
                                  '    DropNotifications true\n  </Drops>')]
# Sends datagrams of 1 byte to a port nobody listens on, as fast as one
# process can for argv[2] seconds: one no_socket drop each.
DROP_SENDER = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a, end, n = ("127.0.0.1", int(sys.argv[1])), time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    for i in range(200):
        s.sendto(b"x", a)
    n += 200
print(n)
"""


def section_drops(rounds, cpu, out):
    """drops per event: datagrams to a closed port on one CPU (each one
    no_socket drop); ours (drops' program, alone on kfree_skb with the
    floors) and the floors attached together, both orders; per event =
    our program's run time / the empty program's runs. drops_notify adds
    DropNotifications (DropLimit 10: almost every drop is counted as
    suppressed, the path a flood takes)."""
    secs = float(os.environ.get("BENCH_EVENT_SECONDS", "1.5"))
    rows, summ = [], []
    with BpfStats():
        for cname, conf in DROPS_CONFIGS:
            for r in range(rounds):
                for order in (("floors", "ours"), ("ours", "floors")):
                    log("  drops round %d/%d %s, %s first" % (r + 1, rounds, cname, order[0]))
                    arms = {"floors": PktFloorArm(DROP_FLOOR_OBJ), "ours": OursArm(conf)}
                    with arms[order[0]] as first, arms[order[1]] as second:
                        floors = first if order[0] == "floors" else second
                        ids = held_by_ours(arms["ours"], floors)
                        port = next_port()

                        def traffic():
                            subprocess.run([sys.executable, "-c", DROP_SENDER, str(port),
                                            str(secs)], stdout=subprocess.DEVNULL,
                                           preexec_fn=pin(cpu), check=True)
                        res = measure_progs({i: [v[1]] for i, v in ids.items()}, traffic)
                    rows.append(round_row(cname, r, order[0], ids, res, secs))
            summ.append(summary(cname, [x for x in rows if x["config"] == cname]))
    write_csv(os.path.join(out, "drops_raw.csv"), rows)
    write_csv(os.path.join(out, "drops.csv"), summ)
    return summ


def round_row(cname, r, first, ids, res, secs):
    row = {"config": cname, "round": r, "first": first}
    ours_t = 0.0
    for i, m in res.items():
        kind, n = ids[i]
        if kind == "floor":
            row[n + "_runs"] = m["runs"]
            row[n + "_ns"] = m["ns"]
        else:
            ours_t += (m["ns"] or 0) * m["runs"]
            row["ours_runs"] = row.get("ours_runs", 0) + m["runs"]
    ev = row.get("pe_drop_runs")
    row["events_per_s"] = ev / secs if ev else None
    row["ours_per_event"] = ours_t / ev if ev else None
    return row


def summary(cname, xs):
    """xs: the configuration's rows."""
    per_round = {}
    for x in xs:
        per_round.setdefault(x["round"], []).append(x)

    def med(k):
        vals = []
        for rs in per_round.values():
            v = [x[k] for x in rs if x.get(k) is not None]
            if len(v) == 2:
                vals.append(sum(v) / 2)
        return median(vals)
    sm = {"config": cname}
    for k in ("ours_per_event", "pe_drop_ns", "pc_drop_ns", "events_per_s"):
        sm[k] = med(k)
    for first in ("floors", "ours"):
        sm["ours_per_event_%s_first" % first] = median(
            [x["ours_per_event"] for x in xs if x["first"] == first])
    if sm["ours_per_event"] is not None and sm["pc_drop_ns"] is not None:
        sm["ours_minus_clock"] = sm["ours_per_event"] - sm["pc_drop_ns"]
    return sm


def table(dr):
    if not dr:
        return []
    L = ["", "drops per drop event (kfree_skb; ours and the floors attached together, "
         "both orders averaged; ns)",
         "%-14s %8s %8s %8s %9s %12s   %s" % ("config", "ours/ev", "clock", "empty",
                                             "ours-clk", "drops/s", "floors first / ours first")]
    for s in dr:
        L.append("%-14s %8s %8s %8s %9s %12s   %s / %s" % (
            s["config"], fmt(s.get("ours_per_event")), fmt(s.get("pc_drop_ns")),
            fmt(s.get("pe_drop_ns")), fmt(s.get("ours_minus_clock")),
            fmt(s.get("events_per_s")), fmt(s.get("ours_per_event_floors_first")),
            fmt(s.get("ours_per_event_ours_first"))))
    return L
