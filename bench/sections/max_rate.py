# SPDX-License-Identifier: GPL-2.0-only
"""max_rate: the highest UDP packet rate this machine makes, from a network
namespace over a veth pair, with no BPF, the floor and ours."""
import os
import re
import subprocess
import time

from .common import FloorArm, NoneArm, OursArm, fmt, log, median, next_port, pin, \
    snippet_body, stop_server, write_csv


def proc_stat_busy():
    """(busy CPU seconds of all CPUs, monotonic time): user, nice, system,
    irq and softirq of /proc/stat. Not from the idle column: on this
    machine (a VM) it grew faster than the wall clock on a busy CPU."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK"), time.monotonic()


def udp_snmp():
    """Udp InDatagrams, RcvbufErrors and InErrors of this namespace."""
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Udp:")]
    d = dict(zip(rows[0][1:], (int(x) for x in rows[1][1:])))
    return d["InDatagrams"], d.get("RcvbufErrors", 0), d.get("InErrors", 0)


def run(argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def veth_up(ns, host_if, ns_if):
    """The veth pair: 10.203.0.1 on the host, 10.203.0.2 in ns."""
    run(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if])
    run(["ip", "link", "set", ns_if, "netns", ns])
    run(["ip", "addr", "add", "10.203.0.1/24", "dev", host_if])
    run(["ip", "link", "set", host_if, "up"])
    run(["ip", "netns", "exec", ns, "ip", "addr", "add", "10.203.0.2/24", "dev", ns_if])
    run(["ip", "netns", "exec", ns, "ip", "link", "set", ns_if, "up"])
    run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])


def section_max_rate(rounds, cpu, out):
    """The highest UDP packet rate this machine makes: sockperf tp (64-byte
    datagrams, as fast as it can) from a network namespace over a veth pair
    to sockperf sr on the host, the sender on one CPU (its packets are
    received there too: veth hands them to that CPU's backlog), the reader
    on the other. Arms none, floor (empty programs and receive timestamps)
    and ours (the shipped snippet + Buckets true), order rotated per round.
    Per arm: datagrams sent and delivered per second, lost (sent - UDP
    InDatagrams: the receive buffer's overflows and anything dropped before
    UDP), and the machine's busy CPU time (user, system, irq, softirq of
    /proc/stat, from before the sender started to its end) per million
    delivered, as % of a CPU at one million per second."""
    secs = int(os.environ.get("BENCH_RATE_SECONDS", "3"))
    ns = "benchrate%d" % os.getpid()
    host_if, ns_if = "vbr%d" % (os.getpid() % 10000), "vbn%d" % (os.getpid() % 10000)
    tx_cpu = 0 if cpu != 0 else 1
    ours_conf = snippet_body().replace("<Netstacklat>\n", "<Netstacklat>\n    Buckets true\n", 1)
    run(["ip", "netns", "add", ns])
    rows = []
    try:
        veth_up(ns, host_if, ns_if)
        arms = [("none", NoneArm), ("floor", FloorArm), ("ours", lambda: OursArm(ours_conf))]
        for r in range(rounds):
            k = r % len(arms)
            for name, mk in arms[k:] + arms[:k]:
                log("  max_rate round %d/%d %s" % (r + 1, rounds, name))
                with mk():
                    raw = one_arm(ns, secs, cpu, tx_cpu)
                got = arm_figures(*raw)
                if got:
                    rows.append(dict({"round": r, "arm": name}, **got))
    finally:
        subprocess.run(["ip", "link", "del", host_if], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
    write_csv(os.path.join(out, "max_rate_raw.csv"), rows)
    summ = []
    for name, _ in [(a[0], None) for a in arms]:
        xs = [x for x in rows if x["arm"] == name]
        summ.append({"arm": name, **{k: median([x[k] for x in xs]) for k in
                                     ("sent_pps", "delivered_pps", "lost_pct", "busy_cpus",
                                      "cpu_pct_per_mpps")}})
    write_csv(os.path.join(out, "max_rate.csv"), summ)
    return summ


def one_arm(ns, secs, cpu, tx_cpu):
    """sockperf tp from ns for secs seconds against sockperf sr on the host:
    its output, UDP's counters and the busy CPU time before and after."""
    port = next_port()
    srv = subprocess.Popen(["sockperf", "sr", "-i", "10.203.0.1", "-p", str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, preexec_fn=pin(cpu))
    time.sleep(0.3)
    u0, b0 = udp_snmp(), proc_stat_busy()
    cli = subprocess.run(["ip", "netns", "exec", ns, "sockperf", "tp", "-i",
                          "10.203.0.1", "-p", str(port), "-m", "64",
                          "-t", str(secs)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, preexec_fn=pin(tx_cpu)).stdout
    b1 = proc_stat_busy()
    time.sleep(0.3)  # the reader drains its buffer
    u1 = udp_snmp()
    stop_server(srv)
    return cli, u0, u1, b0, b1


def arm_figures(cli, u0, u1, b0, b1):
    """The figures of one arm's run, or None if sockperf gave none."""
    m = re.search(r"Total of (\d+) messages sent in ([0-9.]+) sec", cli)
    if not m:
        log("bench: sockperf tp gave no result:\n" + cli[-1500:])
        return None
    sent, took = int(m.group(1)), float(m.group(2))
    got = u1[0] - u0[0]
    busy_s = b1[0] - b0[0]
    busy = busy_s / max(b1[1] - b0[1], 1e-3)
    return {"sent_pps": sent / took,
            "delivered_pps": got / took, "lost": sent - got,
            "lost_pct": 100.0 * (sent - got) / sent if sent else None,
            "rcvbuf_errors": u1[1] - u0[1], "in_errors": u1[2] - u0[2],
            "busy_cpus": busy,
            # CPU seconds per million datagrams, x 100:
            # % of a CPU at one million per second.
            "cpu_pct_per_mpps": 100 * busy_s / (got / 1e6) if got else None}


def table(mr):
    if not mr:
        return []
    L = ["", "Highest packet rate (UDP 64 B from a namespace over a veth; medians over rounds)",
         "%-6s %12s %14s %8s %16s" % ("arm", "sent/s", "delivered/s", "lost %",
                                      "CPU % per Mpps")]
    for s in mr:
        L.append("%-6s %12s %14s %8s %16s" % (
            s["arm"], fmt(s["sent_pps"]), fmt(s["delivered_pps"]), fmt(s["lost_pct"], "%.1f"),
            fmt(s["cpu_pct_per_mpps"], "%.1f")))
    return L
