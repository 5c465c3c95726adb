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
            desc="Events per second per log2 bucket, labelled by the bucket's upper bound in ns."),
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
        panel(7, "tcp_window: TCP memory", [
            t("A", "aliasByNode($host.tcp_window.memory-tcp_*, 2)")],
            "bytes", 0, 24, desc="In use against the tcp_mem limits (tcp_window feature)."),
        panel(6, "ebpf: CPU time in our BPF programs", [
            t("A", "aliasByNode($host.ebpf-*.derive-run_time_ns, 1)")],
            "ns", 12, 16, desc="ns of CPU per second, per program (BPFStats true)."),
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
    panels = [
        panel(1, "netstacklat $hook: latency quantiles", [
            t("A", "collectd_netstacklat_latency{%s}" % sel)], "s", 0, 0, log=True,
            desc="Quantiles of the last interval's packets, seconds (collectd-ebpf(5))."),
        panel(2, "netstacklat $hook: buckets (events/s)", [
            t("A", "collectd_netstacklat_bucket{%s}" % sel, fmt="heatmap")],
            "short", 12, 0, kind="heatmap", extra=HEATMAP,
            desc="Events per second per log2 bucket (label type = lo_hi ns)."),
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
        panel(7, "tcp_window: TCP memory", [
            t("A", 'collectd_tcp_window_memory{instance="$instance",tcp_window=~"tcp_.*"}',
              "{{tcp_window}}")],
            "bytes", 0, 24, desc="In use against the tcp_mem limits (tcp_window feature)."),
        panel(6, "ebpf: ns per BPF program run", [
            t("A", 'rate(collectd_ebpf_derive_total{instance="$instance",type="run_time_ns"}[1m])'
                   ' / ignoring(type) rate(collectd_ebpf_derive_total{instance="$instance",'
                   'type="run_count"}[1m])', "{{ebpf}}")],
            "ns", 12, 16, desc="Needs BPFStats true."),
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
