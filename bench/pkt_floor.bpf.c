// SPDX-License-Identifier: GPL-2.0
/* The floors of bench/run's per_packet section: on each receive tracepoint
 * the tracepoint flavours use, one empty program (pe_*: the price of any
 * program there, and its runs count the events) and one that reads the
 * clock once and does nothing else (pc_*: the least a program that times
 * an event can cost). The clock is the one netstacklat reads: TAI where
 * the kernel has it (6.1+), else MONOTONIC. Names are short: the kernel
 * keeps 15 characters. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

static __always_inline void clock_once(void) {
  if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_ktime_get_tai_ns))
    bpf_ktime_get_tai_ns();
  else
    bpf_ktime_get_ns();
}

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(pe_ip) { return 0; }
SEC("tp_btf/tcp_probe")
int BPF_PROG(pe_tcp) { return 0; }
SEC("tp_btf/sk_data_ready")
int BPF_PROG(pe_skdr) { return 0; }
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(pe_read) { return 0; }

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(pc_ip) { clock_once(); return 0; }
SEC("tp_btf/tcp_probe")
int BPF_PROG(pc_tcp) { clock_once(); return 0; }
SEC("tp_btf/sk_data_ready")
int BPF_PROG(pc_skdr) { clock_once(); return 0; }
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(pc_read) { clock_once(); return 0; }

char LICENSE[] SEC("license") = "GPL";
