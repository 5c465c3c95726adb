// SPDX-License-Identifier: GPL-2.0
/* tcp_window: the stalled-receiver scan as a BPF iterator over the TCP
 * sockets of one network namespace (the one of the process that creates
 * the iterator's file, as with a sock_diag socket). It hands user space
 * only the sockets that can matter: those with unread data, and those user
 * space tracks as stalled (to tell "resumed" from "closed"), so the cost of
 * a read follows them and not every socket of the host; what it reports
 * is what sock_diag would (idiag_rqueue, tcpi_last_data_recv, cookie,
 * inode, addresses). Needs iter/tcp and bpf_seq_write (5.9),
 * bpf_get_socket_cookie in tracing programs (5.12), and the kernel's
 * CONFIG_HZ; without them plugin/tcp_window/ uses sock_diag (sockdiag.c). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "tcp_window/tcp_window.h"

#define AF_INET 2
#define AF_INET6 10

extern int CONFIG_HZ __kconfig;

/* Set by user space: the number of entries of tcpw_tracked, so that no
 * socket pays a lookup while nothing is tracked. */
__u32 tcpw_ntracked = 0;

/* Cookies of the sockets user space has notified as stalled. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, TCPW_TRACK_MAX);
  __type(key, __u64);
  __type(value, __u8);
} tcpw_tracked SEC(".maps");

SEC("iter/tcp")
int tcp_window_scan(struct bpf_iter__tcp *ctx) {
  struct sock_common *skc = ctx->sk_common;
  if (!skc)
    return 0;
  /* Listening sockets (their rqueue is the accept backlog), TIME_WAIT
   * and request sockets: not in sock_diag's request either. */
  if (!((1u << skc->skc_state) & TCPW_SCAN_STATES))
    return 0;
  /* Unread data sits in the receive queue: its length is in the cache
   * line the walk's reference count already brought in, while the
   * tcp_sock fields below (and bpf_skc_to_tcp_sock's sk_protocol) mostly
   * cost a cache miss each; an idle socket stops here. */
  struct sock *sk = (void *)skc;
  __u32 qlen = BPF_CORE_READ(sk, sk_receive_queue.qlen);
  struct tcp_sock *tp = qlen ? bpf_skc_to_tcp_sock(skc) : NULL;
  __s32 unread = tp ? (__s32)(tp->rcv_nxt - tp->copied_seq) : 0;
  __u64 cookie;
  if (unread <= 0) {
    if (!tcpw_ntracked)
      return 0;
    cookie = bpf_get_socket_cookie(skc);
    if (!bpf_map_lookup_elem(&tcpw_tracked, &cookie))
      return 0;
    /* Tracked, nothing unread: user space only needs to see it. */
    struct tcpw_scan_rec t = {.cookie = cookie, .family = skc->skc_family};
    bpf_seq_write(ctx->meta->seq, &t, sizeof(t));
    return 0;
  }
  cookie = bpf_get_socket_cookie(skc);

  struct tcpw_scan_rec r = {};
  r.cookie = cookie;
  r.rqueue = (__u32)unread;
  /* tcp_get_info(): jiffies_to_msecs(tcp_jiffies32 - lrcvtime) */
  __u32 idle = (__u32)bpf_jiffies64() - tp->inet_conn.icsk_ack.lrcvtime;
  __u64 hz = (__u64)CONFIG_HZ;
  if (!hz)
    return 0;
  r.last_data_recv = (__u32)(((__u64)idle * 1000 + hz - 1) / hz);
  struct socket *sock = tp->inet_conn.icsk_inet.sk.sk_socket;
  if (sock) {
    /* SOCK_INODE(): the inode that follows the socket in socket_alloc */
    struct socket_alloc *sa = (void *)sock;
    r.inode = (__u32)BPF_CORE_READ(sa, vfs_inode.i_ino);
  }
  r.bound_dev_if = (__u32)skc->skc_bound_dev_if;
  r.cgroup = BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
  r.sport = skc->skc_num;
  r.dport = bpf_ntohs(skc->skc_dport);
  r.family = skc->skc_family;
  if (r.family == AF_INET6) {
    if (bpf_core_field_exists(skc->skc_v6_daddr)) {
      BPF_CORE_READ_INTO(&r.src, skc, skc_v6_rcv_saddr);
      BPF_CORE_READ_INTO(&r.dst, skc, skc_v6_daddr);
    }
  } else {
    __builtin_memcpy(r.src, &skc->skc_rcv_saddr, 4);
    __builtin_memcpy(r.dst, &skc->skc_daddr, 4);
  }
  bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
