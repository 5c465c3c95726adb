// SPDX-License-Identifier: GPL-2.0
/* The floor of a BPF iterator over TCP sockets: a program that does
 * nothing, so that what the kernel's walk costs per socket (bucket locks,
 * a reference and lock_sock() per full socket) shows apart from what
 * tcp_window's scan program adds (bench/socketscan --floor). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("iter/tcp")
int iter_floor(struct bpf_iter__tcp *ctx) { return 0; }

char LICENSE[] SEC("license") = "GPL";
