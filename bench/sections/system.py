# SPDX-License-Identifier: GPL-2.0-only
"""system: bench/slices, the plugin's own programs and the floor attached
and detached in slices inside one process under a pinned ping-pong."""
import os
import shutil
import subprocess
import tempfile

from .common import BUILD, DEFAULT_NSL, EMPTY_OBJ, PLUGIN_SO, fmt, log, median, quantile, \
    write_csv

SLICES = os.path.join(BUILD, "bench", "slices")


def section_system(rounds, cpu, out):
    """bench/slices: none, floor and ours (the plugin's own programs, default
    settings) attached and detached in ~1 s slices inside one process while a
    pinned ping-pong runs; each arm slice as a ratio to the mean of the two
    "none" slices around it."""
    cycles = int(os.environ.get("BENCH_SLICES", str(8 * rounds)))
    ms = int(float(os.environ.get("BENCH_SLICE_SECONDS", "1")) * 1000)
    tmp = tempfile.mkdtemp(prefix="bench-")
    conf = os.path.join(tmp, "ebpf.conf")
    with open(conf, "w") as f:
        f.write(DEFAULT_NSL)
    raw, summ = [], []
    try:
        for proto in ("udp", "tcp"):
            sl = slices(proto, conf, cycles, ms, cpu)
            if sl is None:
                continue
            raw += sl
            summ.append(summary(proto, sl, cycles, ms))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_csv(os.path.join(out, "system_raw.csv"), raw)
    write_csv(os.path.join(out, "system.csv"), summ)
    return summ


def slices(proto, conf, cycles, ms, cpu):
    """One bench/slices run: its slices, each arm slice with its ratio to
    the "none" slices around it; None if it failed."""
    log("  system %s: %d cycles of none/floor/none/ours, %d ms slices (~%.0f s)" % (
        proto, cycles, ms, cycles * 4 * (ms + 60) / 1000))
    p = subprocess.run([SLICES, PLUGIN_SO, conf, EMPTY_OBJ, proto, str(cycles),
                        str(ms), str(cpu)], stdout=subprocess.PIPE, text=True)
    sl = []
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "ready":
            log("  " + line)
        elif f and f[0] == "slice":
            sl.append({"proto": proto, "slice": int(f[1]), "arm": f[2],
                       "rate": float(f[3]), "attach_ms": float(f[4])})
    if p.returncode != 0 or not sl:
        log("bench: bench/slices failed (%s)" % p.returncode)
        return None
    for i, x in enumerate(sl):
        if x["arm"] != "none" and 0 < i < len(sl) - 1:
            ref = (sl[i - 1]["rate"] + sl[i + 1]["rate"]) / 2
            x["ratio"] = x["rate"] / ref if ref else None
    return sl


def summary(proto, sl, cycles, ms):
    row = {"proto": proto, "slices": cycles, "slice_ms": ms,
           "none_rate": median([x["rate"] for x in sl if x["arm"] == "none"])}
    for arm in ("floor", "ours"):
        rs = [x["ratio"] for x in sl if x["arm"] == arm and x.get("ratio")]
        row[arm + "_rate"] = median([x["rate"] for x in sl if x["arm"] == arm])
        row[arm + "_ratio"] = median(rs)
        row[arm + "_loss"] = 1 - row[arm + "_ratio"] if rs else None
        row[arm + "_p25"], row[arm + "_p75"] = quantile(rs, .25), quantile(rs, .75)
        row[arm + "_min"] = min(rs) if rs else None
        row[arm + "_max"] = max(rs) if rs else None
        row[arm + "_iqr"] = (row[arm + "_p75"] - row[arm + "_p25"]) if rs else None
    return row


def table(system):
    if not system:
        return []
    L = [""]
    L.append("System level (bench/slices): one process, a %s-byte ping-pong on loopback pinned to one CPU runs throughout; the plugin's own"
             % 64)
    L.append("programs (default settings) and the empty floor are attached/detached in slices of %s ms, none/floor/none/ours x %s;"
             % (system[0]["slice_ms"], system[0]["slices"]))
    L.append("each arm slice / mean of the two 'none' slices around it. Receive timestamps are on in every slice (the plugin's socket).")
    L.append("%-5s %11s %10s %10s %8s %8s %-17s %-17s" % (
        "proto", "none rt/s", "floor rt/s", "ours rt/s", "floor", "ours",
        "floor[p25-p75]", "ours[p25-p75]"))
    for s in system:
        L.append("%-5s %11s %10s %10s %8s %8s %-17s %-17s  min-max floor %s-%s ours %s-%s" % (
            s["proto"], fmt(s["none_rate"]), fmt(s["floor_rate"]), fmt(s["ours_rate"]),
            fmt(s["floor_ratio"], "%.4f"), fmt(s["ours_ratio"], "%.4f"),
            "%s-%s" % (fmt(s["floor_p25"], "%.4f"), fmt(s["floor_p75"], "%.4f")),
            "%s-%s" % (fmt(s["ours_p25"], "%.4f"), fmt(s["ours_p75"], "%.4f")),
            fmt(s["floor_min"], "%.3f"), fmt(s["floor_max"], "%.3f"),
            fmt(s["ours_min"], "%.3f"), fmt(s["ours_max"], "%.3f")))
    return L
