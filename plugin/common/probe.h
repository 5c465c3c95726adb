// SPDX-License-Identifier: GPL-2.0-only
/* Whether a flavour can load and attach on this kernel: an empty program of
 * the section's kind (bpf/common/probe.bpf.c), pointed at the section's
 * target, is loaded and attached once per (section kind, target) and
 * loader_run() call, since hooks share targets. Used by the loader's files
 * only. */
#ifndef EBPF_PROBE_H
#define EBPF_PROBE_H

/* 0 when a program of section sec loads and attaches here, else a negative
 * errno, and *why says why (valid until loader_probes_reset()). libbpf's
 * messages are quieted meanwhile. */
int loader_probe(const char *sec, const char **why);

/* Forget every result: the end of a loader_run(). */
void loader_probes_reset(void);

#endif
