// SPDX-License-Identifier: GPL-2.0
/* The floors of bench/run's drops section, on the kfree_skb tracepoint
 * drops' tracepoint flavour uses: one empty program (pe_drop: the price of
 * any program there; its runs count the events) and one that reads the
 * clock once (pc_drop), as bench/pkt_floor.bpf.c for the receive
 * tracepoints. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/kfree_skb")
int BPF_PROG(pe_drop) { return 0; }

SEC("tp_btf/kfree_skb")
int BPF_PROG(pc_drop) {
  bpf_ktime_get_ns();
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
