// SPDX-License-Identifier: GPL-2.0
/* tcp_window's handlers on the receive path (bpf/rx/rx.bpf.c includes
 * this header; plugin/tcp_window/rx.c sets what is below): its stalled
 * receivers' marks, on tcp_socket_enqueued in every flavour, and its
 * clamped wakeups, on the sk_data_ready tracepoint. Each is compiled in
 * by its .rodata switch and turned on at run time by a variable. */
#ifndef TCPW_RX_H
#define TCPW_RX_H

#include "common/field.h"
#include "common/sk_addr.h"
#include "tcp_window/tcp_window.h"

/* The stalled receivers by marked sockets (tcp_window.h): each TCP socket
 * given data is announced once per epoch on a ring buffer, so that
 * tcp_window asks about those sockets only instead of walking every
 * socket. tcpw_rx_marks: compiled in (StalledReceivers true; else pruned).
 * Set by user space (plugin/tcp_window/rx.c): tcpw_epoch, 0 while off;
 * tcpw_mark_netns, the namespace tcp_window scans (0: all). */
const volatile bool tcpw_rx_marks = true;
__u32 tcpw_epoch = 0;
__u32 tcpw_mark_netns = 0;

/* Marks lost to a full ring buffer (a rescan is due), and the epoch in
 * which this CPU found the ring full: per CPU, so that a storm of them
 * writes no line shared with the variables above, which every event reads,
 * and a CPU that found the ring full does not reserve again (the ring's
 * spinlock, IRQs off) before the next epoch. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct tcpw_mark_cpu);
} tcpw_marks_lost SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, TCPW_MARK_BUCKETS);
  __type(key, __u32);
  __type(value, struct tcpw_mark_bucket);
} tcpw_mark_slots SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, TCPW_MARK_RB_BYTES);
} tcpw_marks SEC(".maps");

/* The way of bucket b that sk takes: its own, else one not announced in
 * this epoch, else one picked by the hash (that socket is announced again
 * at its next data). TCPW_MARK_WAYS when sk is announced in this epoch
 * already. */
static __always_inline __u32 tcpw_way(const struct tcpw_mark_bucket *b,
                                      __u64 id, __u32 ports, __u32 epoch,
                                      __u32 h) {
  __u32 free = TCPW_MARK_WAYS;
#pragma unroll
  for (__u32 i = 0; i < TCPW_MARK_WAYS; i++) {
    if (b->way[i].sk == id && b->way[i].ports == ports)
      return b->way[i].epoch == epoch ? TCPW_MARK_WAYS : i;
    if (free == TCPW_MARK_WAYS && b->way[i].epoch != epoch)
      free = i;
  }
  return free < TCPW_MARK_WAYS ? free : (h >> 16) & (TCPW_MARK_WAYS - 1);
}

/* The socket is remembered in its hash's bucket with the epoch; the
 * bucket's line is the only one an event touches beyond what the program
 * reads anyway, until the socket is announced (once per epoch). A
 * listener's data_ready is a new connection, not data. */
static __always_inline void tcpw_mark(const struct sock *sk, __u32 epoch,
                                      const bool probed) {
  if (RD(probed, sk, __sk_common.skc_state) == TCP_LISTEN)
    return;
  __u32 ns = tcpw_mark_netns;
  if (ns && RD(probed, sk, __sk_common.skc_net.net, ns.inum) != ns)
    return;
  __u32 h = RD(probed, sk, __sk_common.skc_hash);
  __u32 k = (h ^ (h >> 16)) & (TCPW_MARK_BUCKETS - 1);
  struct tcpw_mark_bucket *b =
      bpf_map_lookup_elem(&tcpw_mark_slots, &k);
  if (!b)
    return;
  __u64 id = (__u64)(unsigned long)sk;
  __u32 ports = RD(probed, sk, __sk_common.skc_portpair);
  __u32 w = tcpw_way(b, id, ports, epoch, h);
  if (w >= TCPW_MARK_WAYS)
    return;
  __u32 zero = 0;
  struct tcpw_mark_cpu *cpu =
      bpf_map_lookup_elem(&tcpw_marks_lost, &zero);
  if (!cpu)
    return;
  struct tcpw_mark_rec *r = NULL;
  if (cpu->full_epoch != epoch)
    r = bpf_ringbuf_reserve(&tcpw_marks, sizeof(*r), 0);
  if (!r) {
    /* Not remembered: user space walks every socket at its next scan
     * (the lost count grew), and this CPU reserves no more in this epoch:
     * a full ring's spinlock is not taken for every later segment. */
    cpu->full_epoch = epoch;
    cpu->lost += 1;
    return;
  }
  b->way[w].sk = id;
  b->way[w].epoch = epoch;
  b->way[w].ports = ports;
  __u16 family = RD(probed, sk, __sk_common.skc_family);
  __builtin_memset(r, 0, sizeof(*r));
  r->family = (__u8)family;
  /* In the line of skc_state and skc_hash, read above. */
  r->bound_dev_if = RD(probed, sk, __sk_common.skc_bound_dev_if);
  r->epoch = epoch;
  r->sport = RD(probed, sk, __sk_common.skc_num);
  r->dport = bpf_ntohs(RD(probed, sk, __sk_common.skc_dport));
  sk_addrs(sk, family, r->src, r->dst);
  /* User space reads the ring at its scans, never waits on it. */
  bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* The clamped wakeups, counted here when the clamps hook runs in the
 * tracepoint flavour and the receive path has a program on sk_data_ready
 * anyway: one program there instead of two, so a packet pays one program
 * entry (issue 23). tcpw_rx_wakeups: compiled in (Clamps true, and
 * ClampTransitions false: the transitions' socket storage is the clamps
 * object's). User space (plugin/tcp_window/rx.c) sets tcpw_threshold once
 * it knows the programs run there; 0: off, and tcp_window's own program
 * (tcp_window.bpf.c, the same logic) runs instead. tcpw_netns: the
 * namespace tcp_window counts (0: all). */
const volatile bool tcpw_rx_wakeups = true;
__u32 tcpw_threshold = 0;
__u32 tcpw_netns = 0;

/* tcp_window/operations-clamped_wakeups, when counted here. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} tcpw_rx_wakeups_total SEC(".maps");

static __always_inline void tcpw_wakeup(const struct sock *sk,
                                        __u32 threshold) {
  /* A listener's data_ready is a new connection, not data. */
  if (sk->__sk_common.skc_state == TCP_LISTEN)
    return;
  __u32 ns = tcpw_netns;
  if (ns && sk->__sk_common.skc_net.net->ns.inum != ns)
    return;
  struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
  if (!tp || tp->rcv_ssthresh >= threshold)
    return;
  __u32 zero = 0;
  __u64 *v = bpf_map_lookup_elem(&tcpw_rx_wakeups_total, &zero);
  if (v)
    *v += 1; /* per-CPU slot: no atomic needed */
}

/* ============================================================= handlers */

/* A TCP segment queued (fexit or kprobe of tcp_queue_rcv). */
static __always_inline void tcpw_on_tcp_enqueued(const struct sock *sk,
                                                 const bool probed) {
  if (!tcpw_rx_marks)
    return;
  __u32 epoch = tcpw_epoch;
  if (epoch)
    tcpw_mark(sk, epoch, probed);
}

/* A TCP socket told it has data (the sk_data_ready tracepoint). */
static __always_inline void tcpw_on_tcp_data_ready(const struct sock *sk) {
  if (tcpw_rx_wakeups) {
    __u32 threshold = tcpw_threshold;
    if (threshold)
      tcpw_wakeup(sk, threshold);
  }
  tcpw_on_tcp_enqueued(sk, false);
}

#endif /* TCPW_RX_H */
