# SPDX-License-Identifier: GPL-2.0-only
"""Issue 13's targets, each met, MISSED or not measured, from the summaries
of the sections of this run (None: the section did not run)."""
from .common import SKDR
from .per_event import SKIPPED


def pe_row(per_event, config, hook):
    for s in per_event or []:
        if s["config"] == config and s["hook"] == hook:
            return s
    return None


def verdict(ok):
    return "not measured" if ok is None else "met" if ok else "MISSED"


# The targets' hooks: per tracepoint, so that one program serving both
# enqueue hooks is set against both empty programs on sk_data_ready.
TARGET_HOOKS = ["ip_start", "tcp_start", SKDR, "tcp_socket_read"]


def worst(per_event, config, f):
    """max over TARGET_HOOKS of f(row) -> (value, hook) or None."""
    vals = []
    for h in TARGET_HOOKS:
        s = pe_row(per_event, config, h)
        v = f(s) if s else None
        if v is not None:
            vals.append((v, h))
    return max(vals) if vals else None


def not_measured(config):
    if config in SKIPPED:
        return "skipped: " + SKIPPED[config]
    return "not in this run (BENCH_ONLY/BENCH_CONFIGS)"


def targets(pe, sy, pl, clock, sockets):
    """[(target, measured, verdict)]"""
    return (event_targets(pe, clock) + [system_target(sy)] + plugin_targets(pl)
            + socket_targets(sockets))


def event_targets(pe, clock):
    out = []
    # 1. ours - floor - clock per event, filters_off, worst hook.
    t = "ours - floor - clock <= 20 ns per event (filters_off, worst hook)"
    w = worst(pe, "filters_off", lambda s: s.get("ours_minus_floor"))
    if w and clock is not None:
        out.append((t, "%.1f ns (%s; clock %.1f ns)" % (w[0] - clock, w[1], clock),
                    verdict(w[0] - clock <= 20)))
    else:
        out.append((t, "no ladder in this run" if w else not_measured("filters_off"),
                    verdict(None)))
    # 2. SampleEvery 16 against the floor.
    t = "SampleEvery 16: ours <= 1.3x floor (worst hook)"
    w = worst(pe, "sample16", lambda s: s.get("ours_over_floor"))
    out.append((t, "%.2fx (%s)" % w if w else not_measured("sample16"),
                verdict(w[0] <= 1.3 if w else None)))

    # 3, 4. A cgroup filter / GroupBy against the same hooks without it
    # (filters_off_sockets), both as ours - floor.
    def added(config):
        def f(s):
            base = pe_row(pe, "filters_off_sockets", s["hook"])
            if base and base.get("ours_minus_floor") is not None and \
                    s.get("ours_minus_floor") is not None:
                return s["ours_minus_floor"] - base["ours_minus_floor"]
            return None
        return worst(pe, config, f)
    for config, t, lim in (("cgroup_filter", "a cgroup filter adds <= 30 ns (worst hook)", 30),
                           ("groupby_cgroup", "GroupBy cgroup adds <= 40 ns (worst hook)", 40)):
        w, ws, wh = added(config), added(config + "_storage"), added(config + "_htab")
        m = "+%.1f ns (%s)" % w if w else \
            not_measured(config if pe_row(pe, "filters_off_sockets", SKDR) else
                         "filters_off_sockets")
        if ws:
            m += "; storage way +%.1f ns (%s)" % ws
        if wh:
            m += "; hash way +%.1f ns (%s)" % wh
        out.append((t, m, verdict(w[0] <= lim if w else None)))
    return out


def system_target(sy):
    # 5. System level.
    t = "system loss <= 2x floor's, spread < difference"
    if not sy:
        return (t, "not in this run" if sy is None else
                "bench/slices gave no figures (its error is in the log above)",
                verdict(None))
    ms, oks = [], []
    for s in sy:
        if s.get("ours_loss") is None or s.get("floor_loss") is None:
            continue
        spread = max(s["ours_iqr"], s["floor_iqr"])
        diff = abs(s["ours_loss"] - s["floor_loss"])
        ok = s["ours_loss"] <= 2 * s["floor_loss"] and spread < diff
        oks.append(ok)
        ms.append("%s ours %.2f%% floor %.2f%% IQR %.2f%% diff %.2f%%" % (
            s["proto"], 100 * s["ours_loss"], 100 * s["floor_loss"], 100 * spread,
            100 * diff))
    return (t, "; ".join(ms), verdict(all(oks) if oks else None))


def plugin_targets(pl):
    # 6-8. The plugin itself.
    def plrow(config, key):
        for s in pl or []:
            if s["config"] == config and s.get(key) is not None:
                return s[key]
        return None
    out = []
    rss = plrow("collectd_defaults", "collectd_rss_added_kib")
    out.append(("RSS added to collectd <= 4 MiB (defaults)",
                "%.0f KiB" % rss if rss is not None else "not in this run",
                verdict(rss <= 4096 if rss is not None else None)))
    for config, t in (("defaults", "read callback <= 1 ms (defaults)"),
                      ("pressure_50cg", "read callback <= 1 ms (PSI of 50 cgroups)"),
                      ("groupby_cgroup_50cg", "read callback <= 1 ms (GroupBy, 50 cgroups)")):
        v = plrow(config, "read_cpu_us_med")
        out.append((t, "%.0f us CPU" % v if v is not None else "not in this run",
                    verdict(v <= 1000 if v is not None else None)))
    for config, t in (("collectd_defaults", "collectd's added CPU per interval <= 1 ms (defaults)"),
                      ("collectd_snippet", "collectd's added CPU per interval <= 1 ms (shipped snippet)"),
                      ("collectd_snippet_writethreads1",
                       "  the same with collectd's WriteThreads 1")):
        v = plrow(config, "collectd_cpu_us_added")
        out.append((t, "%.0f us" % v if v is not None else "not in this run",
                    verdict(v <= 1000 if v is not None else None)))
    return out


def socket_targets(sockets):
    out = []
    # 9. Idle sockets: measured by a tool of its own (see sockets.py).
    t = "read cost per 10k idle sockets <= 0.2 ms"
    if sockets and sockets.get("ms_per_10k_idle") is not None:
        v = sockets["ms_per_10k_idle"]
        floor = sockets.get("pinned_floor_us_per_10k")
        out.append((t, "%.3f ms (iterator)%s" % (v, "; an empty iter/tcp alone %.3f ms"
                                               % (floor / 1000) if floor else ""),
                    verdict(v <= 0.2)))
        at = sockets.get("ms_at_100k")
        if at is not None:
            out.append(("read cost at 100k sockets <= 2 ms (extrapolated)",
                        "%.1f ms" % at, verdict(at <= 2)))
    else:
        out.append((t, (sockets or {}).get("why", "not in this run"), verdict(None)))
    t = "issue 23: 18k idle sockets add <= 0.4 ms per read (marked scans)"
    v = (sockets or {}).get("marks_added_us_at_most")
    out.append((t, "%.3f ms (marks %.3f ms, netstacklat alone %.3f)"
                % (v / 1000, sockets["marks_us_at_most"] / 1000,
                   (sockets["marks_us_at_most"] - v) / 1000)
                if v is not None else "not in this run",
                verdict(v <= 400 if v is not None else None)))
    return out


def table(per_event, system, plugin, clock, sockets):
    L = ["", "Targets of issue 13 (met / MISSED / not measured)"]
    for t, m, v in targets(per_event, system, plugin, clock, sockets):
        L.append("  %-62s %-13s %s" % (t, v, m))
    return L
