// SPDX-License-Identifier: GPL-2.0
/* Empty programs of every attach type. The loader loads one of them at a
 * time, pointed at a hook's real target, to learn before loading a feature
 * whether that flavour can load and attach on this kernel (the same idea as
 * bcc libbpf-tools' fentry_can_attach()). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("fentry")
int probe_fentry(void *ctx) { return 0; }

SEC("fexit")
int probe_fexit(void *ctx) { return 0; }

SEC("tp_btf")
int probe_tp_btf(void *ctx) { return 0; }

SEC("raw_tp")
int probe_raw_tp(void *ctx) { return 0; }

SEC("kprobe")
int probe_kprobe(void *ctx) { return 0; }

char LICENSE[] SEC("license") = "GPL";
