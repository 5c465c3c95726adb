// SPDX-License-Identifier: GPL-2.0
/* The floor of `make bench`: one empty program on each tracepoint the
 * netstacklat hooks use on this host, with the same attach type (tp_btf).
 * Its run time is what any BPF program on that hook costs before doing
 * anything (mostly the run-stats clock reads). Two programs on
 * sk_data_ready, like netstacklat's TCP and UDP enqueue hooks. Names are
 * short: the kernel keeps 15 characters. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(e_ip_start) { return 0; }

SEC("tp_btf/tcp_probe")
int BPF_PROG(e_tcp_start) { return 0; }

SEC("tp_btf/sk_data_ready")
int BPF_PROG(e_tcp_enq) { return 0; }

SEC("tp_btf/sk_data_ready")
int BPF_PROG(e_udp_enq) { return 0; }

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(e_tcp_read) { return 0; }

char LICENSE[] SEC("license") = "GPL";
