#!/usr/bin/env python3
"""Writes the two Grafana dashboards of collectd-ebpf: one for the
write_graphite path, one for write_prometheus. The metric names are the
contract of collectd-ebpf(5); tests/integration/test_backends evaluates every
query below with real Graphite and Prometheus servers fed by real collectd
and fails on one that returns no data. Run after changing a panel:
    contrib/grafana/make-dashboards.py"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# The tcp_window counters the clamps panels graph: type_instances of
# tcp_window/operations-<name> (README, metric reference). Both dashboards
# build their clamps queries from this one list: clamps from the
# fexit/kprobe flavours, clamped_wakeups from the tracepoint flavour.
CLAMP_COUNTERS = ["clamps", "clamped_wakeups"]

# ebpf/<feature>-<hook>/gauge-flavour: code -> (name, colour) of the flavour
# panel's value mappings (README, "ebpf"; plugin/common/loader.c flavour_code()).
FLAVOURS = {0: ("unavailable", "red"), 1: ("fentry/fexit", "green"),
            2: ("tracepoint", "blue"), 3: ("kprobe", "purple")}

# The counters of latency outlier notifications: type_instances of
# netstacklat/operations-<name> (empty plugin_instance). Dispatched only
# with OutlierThreshold set, so their panel stays empty without it.
OUTLIER_COUNTERS = [("outliers", "notified"), ("outliers_suppressed", "suppressed")]


def panel(pid, title, targets, unit, x, y, w=12, h=8, kind="timeseries",
          desc="", log=False, extra=None):
    p = {"id": pid, "type": kind, "title": title, "description": desc,
         "gridPos": {"x": x, "y": y, "w": w, "h": h},
         "datasource": {"uid": "${datasource}"},
         "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit, "custom": {}}, "overrides": []},
         "options": {"legend": {"displayMode": "list", "placement": "bottom"}}}
    if log:
        p["fieldConfig"]["defaults"]["custom"]["scaleDistribution"] = {"type": "log", "log": 10}
    if extra:
        p.update(extra)
    return p


def by_ref(ref, props):
    """A field override for the series of one query (refId)."""
    return {"matcher": {"id": "byFrameRefID", "options": ref},
            "properties": [{"id": k, "value": v} for k, v in props]}


def thresholds(*steps):
    """Threshold steps [(value or None for the base, colour)], drawn as lines."""
    return {"mode": "absolute",
            "steps": [{"value": v, "color": c} for v, c in steps]}


def with_overrides(p, overrides=(), steps=None):
    if overrides:
        p["fieldConfig"]["overrides"] = list(overrides)
    if steps:
        p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*steps)
        p["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"] = {"mode": "line"}
    return p


# The tcp_mem limits as dashed threshold-like lines beside the memory in use.
LIMIT_LINES = [("custom.lineStyle", {"fill": "dash", "dash": [10, 10]}),
               ("custom.fillOpacity", 0)]
# The alert examples' limits on tcp_mem_pressure_percent, as lines.
TCP_MEM_STEPS = [(None, "green"), (80, "orange"), (100, "red")]
# The second query of a panel on the right axis, in bytes.
RIGHT_BYTES = [("unit", "bytes"), ("custom.axisPlacement", "right")]


def flavour_panel(pid, targets, x, y):
    """A stat per hook: the attach flavour by name (value mappings)."""
    p = panel(pid, "ebpf: attach flavour of each hook", targets, "none", x, y, w=24, h=5,
              kind="stat",
              desc="Which flavour feeds each hook's values (ebpf/<feature>-<hook>/"
              "gauge-flavour): 1 fentry/fexit, 2 tracepoint, 3 kprobe, 0 unavailable "
              "on this kernel (no values). It decides what some values mean (clamps "
              "against clamped_wakeups): alert on a change.")
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "textMode": "value_and_name", "colorMode": "background",
                    "graphMode": "none", "orientation": "vertical", "justifyMode": "center"}
    p["fieldConfig"]["defaults"]["mappings"] = [
        {"type": "value", "options": {str(code): {"text": name, "color": colour, "index": i}
                                      for i, (code, (name, colour))
                                      in enumerate(sorted(FLAVOURS.items()))}}]
    return p


HEATMAP = {"options": {"calculate": False, "yAxis": {"unit": "ns"},
                       "cellGap": 0, "color": {"scheme": "Oranges", "mode": "scheme"},
                       "rowsFrame": {"layout": "le"}}}


def dashboard(uid, title, ds_type, variables, panels):
    return {"uid": uid, "title": title, "tags": ["collectd", "ebpf"],
            "schemaVersion": 38, "version": 1, "editable": True,
            "time": {"from": "now-1h", "to": "now"}, "refresh": "30s",
            "templating": {"list": [{"name": "datasource", "type": "datasource",
                                     "query": ds_type, "label": "Data source"}] + variables},
            "panels": panels}


def var(name, query, regex="", label=None):
    return {"name": name, "label": label or name, "type": "query",
            "datasource": {"uid": "${datasource}"}, "query": query, "regex": regex,
            "refresh": 2, "includeAll": False, "multi": False, "sort": 1}


TCP_MEM_DESC = ("TCP memory in use (all sockets of the host) and the net.ipv4.tcp_mem "
                "limits, dashed: above pressure the kernel enters TCP memory pressure "
                "and shrinks receive buffers until use falls below low; above max it "
                "refuses sockets more memory (tcp_window feature, TcpMemory true).")
TCP_MEM_PCT_DESC = ("100 x in use / tcp_mem pressure (above 100: under pressure), and "
                    "/ max. The shipped alert examples (ebpf-thresholds.conf, "
                    "collectd-ebpf.rules.yml) warn on the pressure one above 80, "
                    "fail above 100: the lines.")
STALLED_DESC = ("TCP sockets with unread data and nothing received for longer than "
                "StalledAfter, and the unread bytes they pin (right axis). The "
                "notifications name each socket and its process (README, "
                "Notifications); ss -tnpi shows them.")
SLO_DESC = ("Share of the hook's events within 10 ms, in percent: the SLO panel. "
            "Needs BucketBounds 0.01 in <Netstacklat> (counted at 9961472 ns, the "
            "nearest fine bucket edge); for another bound change both (README, "
            "BucketBounds). Exact at the bound, and it adds up across hosts.")
OUTLIERS_DESC = ("Latency outlier notifications per second: notified, and suppressed "
                 "by the kernel's rate limit (OutlierLimit). Empty unless "
                 "OutlierThreshold is set in <Netstacklat> (off by default).")
DROPS_DESC = ("Packets the kernel dropped per second, one series per reason "
              "(drops-<reason>/operations: no_socket, socket_rcvbuff, not_specified...; "
              "docs/drops.md says what each means). Kernels without drop reasons "
              "(before 5.17) count by the kernel function that dropped the packet "
              "instead: at_<function>, and at_other past MaxLocations. A reason "
              "appears from its first drop on. Empty without a <Drops> block.")


def graphite():
    def t(ref, q):
        return {"refId": ref, "target": q}
    h = "$host.netstacklat-$hook"
    r = "$host.pressure-$resource"
    panels = [
        panel(1, "netstacklat $hook: latency quantiles", [
            t("A", "aliasByNode(%s.latency-{p50,p90,p99,p999,max,avg}, 2)" % h)],
            "s", 0, 0, log=True,
            desc="Quantiles of the last interval's packets, seconds (collectd-ebpf(5))."),
        panel(2, "netstacklat $hook: buckets (events/s)", [
            t("A", "sortByName(aliasSub(%s.bucket-*, '^.*bucket-[0-9]+_', ''), true)" % h)],
            "short", 12, 0, kind="heatmap", extra=HEATMAP,
            desc="Events per second per log2 bucket, labelled by the bucket's upper bound in ns. "
                 "Needs Buckets true in <Netstacklat> (off by default)."),
        panel(3, "netstacklat $hook: packets/s", [
            t("A", "alias(%s.operations, 'measured')" % h),
            t("B", "aliasByNode(%s.operations-skipped-*, 2)" % h)],
            "pps", 0, 8,
            desc="write_graphite's StoreRates (default true) already sends DERIVE values as rates."),
        panel(4, "pressure $resource: share of time stalled", [
            t("A", "aliasByNode(%s.percent-{some,full}-avg10, 2)" % r),
            t("B", "aliasByNode(scale(%s.total_time_in_ms-{some,full}, 0.1), 2)" % r)],
            "percent", 12, 8,
            desc="Kernel avg10, and the rate of the stall totals (ms/s / 10 = %)."),
        panel(5, "tcp_window: receive window clamps/s", [
            t("A", "aliasByNode($host.tcp_window.operations-{%s}, 2)" % ",".join(CLAMP_COUNTERS))],
            "short", 0, 16, desc="Empty until the tcp_window feature is enabled. "
            "clamps (fexit/kprobe flavours) and clamped_wakeups (tracepoint flavour) "
            "count different events; ebpf-tcp_window-clamps.gauge-flavour says which runs."),
        with_overrides(panel(7, "tcp_window: TCP memory against tcp_mem", [
            t("A", "alias($host.tcp_window.memory-tcp_in_use, 'in use')"),
            t("B", "aliasSub($host.tcp_window.memory-tcp_mem_{low,pressure,max}, "
                   "'^.*memory-tcp_mem_', 'tcp_mem ')")],
            "bytes", 0, 24, log=True, desc=TCP_MEM_DESC), [by_ref("B", LIMIT_LINES)]),
        with_overrides(panel(8, "tcp_window: TCP memory, % of tcp_mem limits", [
            t("A", "aliasSub($host.tcp_window.gauge-tcp_mem_{pressure,max}_percent, "
                   "'^.*gauge-tcp_mem_(.*)_percent', '% of \\1')")],
            "percent", 12, 24, desc=TCP_MEM_PCT_DESC), steps=TCP_MEM_STEPS),
        with_overrides(panel(9, "tcp_window: stalled receivers", [
            t("A", "alias($host.tcp_window.count-stalled_receivers, 'sockets')"),
            t("B", "alias($host.tcp_window.bytes-stalled_receivers, 'unread bytes')")],
            "short", 0, 32, desc=STALLED_DESC), [by_ref("B", RIGHT_BYTES)]),
        panel(10, "netstacklat: latency outliers notified/s", [
            t(chr(65 + i), "alias($host.netstacklat.operations-%s, '%s')" % (c, legend))
            for i, (c, legend) in enumerate(OUTLIER_COUNTERS)],
            "short", 12, 32, desc=OUTLIERS_DESC),
        panel(6, "ebpf: CPU time in our BPF programs", [
            t("A", "aliasByNode($host.ebpf-*.derive-run_time_ns, 1)")],
            "ns", 12, 16, desc="ns of CPU per second, per program (BPFStats true)."),
        flavour_panel(11, [t("A", "aliasSub($host.ebpf-*.gauge-flavour, "
                                  "'^.*ebpf-([^.]+)\\..*', '\\1')")], 0, 40),
        panel(12, "netstacklat $hook: share within 10 ms (SLO)", [
            t("A", "alias(asPercent(%s.operations-le_9961472, %s.operations), "
                   "'within 10 ms')" % (h, h))],
            "percent", 0, 45, desc=SLO_DESC),
        panel(13, "drops: packets dropped/s by reason", [
            t("A", "aliasSub($host.drops-*.operations, '^.*drops-([^.]+)\\..*', '\\1')")],
            "pps", 12, 45, desc=DROPS_DESC + " write_graphite's StoreRates (default true) "
            "already sends these counters as rates."),
    ]
    return dashboard("collectd-ebpf-graphite", "collectd-ebpf (Graphite)", "graphite",
                     [var("host", "*", label="Host"),
                      var("hook", "$host.netstacklat-*", "/netstacklat-([^.]+)/", "Hook"),
                      var("resource", "$host.pressure-*", "/pressure-([^.]+)/", "Resource")],
                     panels)


def prometheus():
    def t(ref, q, legend="{{type}}", fmt="time_series"):
        return {"refId": ref, "expr": q, "legendFormat": legend, "format": fmt}
    sel = 'instance="$instance",netstacklat="$hook"'
    rsel = 'instance="$instance",pressure="$resource"'
    tsel = 'instance="$instance"'
    panels = [
        panel(1, "netstacklat $hook: latency quantiles", [
            t("A", "collectd_netstacklat_latency{%s}" % sel)], "s", 0, 0, log=True,
            desc="Quantiles of the last interval's packets, seconds (collectd-ebpf(5))."),
        # Each series is one bucket's own rate, not a cumulative `le` count:
        # a time series per bucket, named by its upper bound, as the
        # Graphite panel's (the "heatmap" format would de-accumulate them).
        panel(2, "netstacklat $hook: buckets (events/s)", [
            # (the last bucket, 17179869184_inf, is le="+Inf")
            t("A", 'label_replace(label_replace(collectd_netstacklat_bucket{%s}, "le", "$1", '
                   '"type", "[0-9]+_(.*)"), "le", "+Inf", "le", "inf")' % sel,
              legend="{{le}}")],
            "short", 12, 0, kind="heatmap", extra=HEATMAP,
            desc="Events per second per log2 bucket, labelled by the bucket's upper bound in ns "
                 "(each bucket's own rate, not cumulative). "
                 "Needs Buckets true in <Netstacklat> (off by default)."),
        panel(3, "netstacklat $hook: packets/s", [
            t("A", 'rate(collectd_netstacklat_operations_total{%s,type=""}[1m])' % sel, "measured"),
            t("B", 'rate(collectd_netstacklat_operations_total{%s,type=~"skipped-.*"}[1m])' % sel)],
            "pps", 0, 8),
        panel(4, "pressure $resource: share of time stalled", [
            t("A", 'collectd_pressure_percent{%s,type=~"(some|full)-avg10"}' % rsel),
            t("B", "rate(collectd_pressure_total_time_in_ms_total{%s}[1m]) / 10" % rsel,
              "{{type}} (from total)")],
            "percent", 12, 8,
            desc="Kernel avg10, and the rate of the stall totals (ms/s / 10 = %)."),
        # tcp_window dispatches with an empty plugin_instance: write_prometheus
        # then puts the type_instance in a label named after the plugin
        # (tcp_window="clamps"), not in "type".
        panel(5, "tcp_window: receive window clamps/s", [
            t("A", 'rate(collectd_tcp_window_operations_total{instance="$instance",'
                   'tcp_window=~"%s"}[1m])' % "|".join(CLAMP_COUNTERS), "{{tcp_window}}")],
            "short", 0, 16, desc="Empty until the tcp_window feature is enabled. "
            "clamps (fexit/kprobe flavours) and clamped_wakeups (tracepoint flavour) "
            "count different events; collectd_ebpf_gauge{ebpf=\"tcp_window-clamps\",type=\"flavour\"} says which runs."),
        with_overrides(panel(7, "tcp_window: TCP memory against tcp_mem", [
            t("A", 'collectd_tcp_window_memory{%s,tcp_window="tcp_in_use"}' % tsel, "in use"),
            t("B", 'collectd_tcp_window_memory{%s,tcp_window=~"tcp_mem_.*"}' % tsel,
              "{{tcp_window}}")],
            "bytes", 0, 24, log=True, desc=TCP_MEM_DESC), [by_ref("B", LIMIT_LINES)]),
        with_overrides(panel(8, "tcp_window: TCP memory, % of tcp_mem limits", [
            t("A", 'collectd_tcp_window_gauge{%s,tcp_window=~"tcp_mem_(pressure|max)_percent"}'
              % tsel, "{{tcp_window}}")],
            "percent", 12, 24, desc=TCP_MEM_PCT_DESC), steps=TCP_MEM_STEPS),
        with_overrides(panel(9, "tcp_window: stalled receivers", [
            t("A", 'collectd_tcp_window_count{%s,tcp_window="stalled_receivers"}' % tsel,
              "sockets"),
            t("B", 'collectd_tcp_window_bytes{%s,tcp_window="stalled_receivers"}' % tsel,
              "unread bytes")],
            "short", 0, 32, desc=STALLED_DESC), [by_ref("B", RIGHT_BYTES)]),
        # Like tcp_window: an empty plugin_instance, so the counter's name is
        # in the label netstacklat, where the hooks' instances are too.
        panel(10, "netstacklat: latency outliers notified/s", [
            t(chr(65 + i), 'rate(collectd_netstacklat_operations_total{instance="$instance",'
                           'netstacklat="%s"}[1m])' % c, legend)
            for i, (c, legend) in enumerate(OUTLIER_COUNTERS)],
            "short", 12, 32, desc=OUTLIERS_DESC),
        panel(6, "ebpf: ns per BPF program run", [
            t("A", 'rate(collectd_ebpf_derive_total{instance="$instance",type="run_time_ns"}[1m])'
                   ' / ignoring(type) rate(collectd_ebpf_derive_total{instance="$instance",'
                   'type="run_count"}[1m])', "{{ebpf}}")],
            "ns", 12, 16, desc="Needs BPFStats true."),
        flavour_panel(11, [t("A", 'collectd_ebpf_gauge{instance="$instance",type="flavour"}',
                             "{{ebpf}}")], 0, 40),
        panel(12, "netstacklat $hook: share within 10 ms (SLO)", [
            t("A", '100 * rate(collectd_netstacklat_operations_total{%s,type="le_9961472"}[1m])'
                   ' / ignoring(type) rate(collectd_netstacklat_operations_total{%s,type=""}[1m])'
                   % (sel, sel), "within 10 ms")],
            "percent", 0, 45, desc=SLO_DESC),
        # Every reason (or drop location) is a value of the label drops.
        panel(13, "drops: packets dropped/s by reason", [
            t("A", 'rate(collectd_drops_operations_total{%s}[1m])' % tsel, "{{drops}}")],
            "pps", 12, 45, desc=DROPS_DESC),
    ]
    return dashboard("collectd-ebpf-prometheus", "collectd-ebpf (Prometheus)", "prometheus",
                     [var("instance", "label_values(collectd_pressure_percent, instance)",
                          label="Instance"),
                      var("hook", 'label_values(collectd_netstacklat_latency{instance="$instance"}, netstacklat)',
                          label="Hook"),
                      var("resource", 'label_values(collectd_pressure_percent{instance="$instance"}, pressure)',
                          label="Resource")],
                     panels)


if __name__ == "__main__":
    for name, d in (("collectd-ebpf-graphite.json", graphite()),
                    ("collectd-ebpf-prometheus.json", prometheus())):
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(d, f, indent=2)
            f.write("\n")
