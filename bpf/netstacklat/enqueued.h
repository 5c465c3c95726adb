// SPDX-License-Identifier: GPL-2.0
/* netstacklat's programs on a socket's enqueue: tcp_socket_enqueued and
 * udp_socket_enqueued (one sk_data_ready program serving both), with what
 * they do for tcp_window when it lets them (its stalled receivers' marks,
 * its clamped wakeups): the two features then share one program entry.
 *
 * Included by netstacklat.bpf.c after start.h, in hook order: the
 * programs, maps and variables keep their order in the object. */
#ifndef NSL_ENQUEUED_H
#define NSL_ENQUEUED_H

/* tcp_window's stalled receivers by marked sockets (bpf/tcp_window/tcp_window.h): each
 * TCP socket given data is announced once per epoch on a ring buffer, so
 * that tcp_window asks about those sockets only instead of walking every
 * socket. Set by user space (netstacklat_serve_stalled()): tcpw_epoch, 0
 * while off; tcpw_mark_netns, the namespace tcp_window scans (0: all). */
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
} netstacklat_tcpw_marks_lost SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, TCPW_MARK_BUCKETS);
  __type(key, __u32);
  __type(value, struct tcpw_mark_bucket);
} netstacklat_tcpw_slots SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, TCPW_MARK_RB_BYTES);
} netstacklat_tcpw_marks SEC(".maps");

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
      bpf_map_lookup_elem(&netstacklat_tcpw_slots, &k);
  if (!b)
    return;
  __u64 id = (__u64)(unsigned long)sk;
  __u32 ports = RD(probed, sk, __sk_common.skc_portpair);
  __u32 w = tcpw_way(b, id, ports, epoch, h);
  if (w >= TCPW_MARK_WAYS)
    return;
  __u32 zero = 0;
  struct tcpw_mark_cpu *cpu =
      bpf_map_lookup_elem(&netstacklat_tcpw_marks_lost, &zero);
  if (!cpu)
    return;
  struct tcpw_mark_rec *r = NULL;
  if (cpu->full_epoch != epoch)
    r = bpf_ringbuf_reserve(&netstacklat_tcpw_marks, sizeof(*r), 0);
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

/* ===================================================== tcp_socket_enqueued */

/* fexit, not fentry: the segment is on the receive queue when it returns.
 * (Upstream netstacklat left fexit/tcp_data_queue: the skb may be freed by
 * then. tcp_queue_rcv's caller frees a coalesced skb only after it returns.) */
SEC("fexit/tcp_queue_rcv")
int BPF_PROG(tcp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             bool *fragstolen, int ret) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, false);
  __u32 epoch = tcpw_epoch;
  if (epoch)
    tcpw_mark(sk, epoch, false);
  return 0;
}

/* The last skb on the receive queue is the one just queued (or the one it
 * was coalesced into). */
static __always_inline void enqueued_tail(__u32 hook, const struct sock *sk) {
  const struct sk_buff *skb = sk->sk_receive_queue.prev;
  if (!sk->sk_receive_queue.qlen || !skb)
    return;
  socket_skb_hook(hook, sk, skb, false);
}

/* kprobe at entry: the skb is about to be queued (a few ns earlier than
 * the fexit point). */
SEC("kprobe/tcp_queue_rcv")
int BPF_KPROBE(tcp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, true);
  __u32 epoch = tcpw_epoch;
  if (epoch)
    tcpw_mark(sk, epoch, true);
  return 0;
}

/* ===================================================== udp_socket_enqueued */

/* Entry of __udp_enqueue_schedule_skb (fentry or kprobe): save the skb's
 * receive time, kind and input interface while the skb is still owned, and
 * the socket (held by the caller until after the return). Pushed for every
 * call, so that returns pop their own frame. */
static __always_inline void udp_enqueue_entry(const struct sock *sk,
                                              const struct sk_buff *skb,
                                              const bool probed) {
  struct estack_frame *f = estack_push(&netstacklat_udp_enqueue_stack, probed);
  if (!f)
    return;
  __u64 t = RD(probed, skb, tstamp);
  __u64 not_rx = t ? tstamp_not_rx(skb, probed) : 0;
  f->arg[UDPQ_SK] = (__u64)sk;
  f->arg[UDPQ_TSTAMP] = t;
  f->arg[UDPQ_IIF_NOTRX] = (__u64)RD(probed, skb, skb_iif) | not_rx << 32;
}

/* Return: ret 0 means queued. The skb is not touched here. sk: the
 * fexit's typed argument; the kretprobe has none and uses the one saved at
 * entry (an untyped value, read with probes). (From 6.18, "udp: remove
 * busylock and add per NUMA queues", a call that only added the skb to the
 * per-NUMA list returns 0, and the skb can still be dropped when another CPU
 * moves the list to the queue under memory pressure: such a datagram is
 * counted though it was dropped.) */
static __always_inline void udp_enqueue_return(int ret, const struct sock *sk,
                                               const bool probed) {
  struct estack_frame f;
  if (!estack_pop(&netstacklat_udp_enqueue_stack, &f, probed) || ret != 0)
    return;
  if (probed)
    sk = (const void *)f.arg[UDPQ_SK];
  __u64 group;
  if (!socket_ok(NSL_UDP_SOCKET_ENQUEUED, sk, (__u32)f.arg[UDPQ_IIF_NOTRX],
                 &group, probed))
    return;
  record(NSL_UDP_SOCKET_ENQUEUED, f.arg[UDPQ_TSTAMP],
         f.arg[UDPQ_IIF_NOTRX] >> 32, group, sk, NULL,
         (__u32)f.arg[UDPQ_IIF_NOTRX]);
}

SEC("fentry/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fentry, struct sock *sk, struct sk_buff *skb) {
  udp_enqueue_entry(sk, skb, false);
  return 0;
}

SEC("fexit/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             int ret) {
  udp_enqueue_return(ret, sk, false);
  return 0;
}

/* sk_data_ready runs after __udp_enqueue_schedule_skb has queued the
 * datagram and released the queue lock (6.3 to 6.17: one call per
 * datagram; 6.18: the CPU that moves the per-NUMA list to the queue calls
 * it once per datagram moved). The skb is no longer ours: a reader on
 * another CPU may already have taken and freed it, or another datagram may
 * have been queued behind it. So: read the queue's tail, read its fields,
 * and read the tail again; if the queue was empty or the tail changed, what
 * was read may belong to a freed skb, and the event is counted as
 * skipped-raced instead of measured. Loads through the typed pointers
 * cannot fault (a freed skb reads as garbage, never a crash). Remaining
 * window: the skb freed and its memory queued again as the same socket's
 * tail between the two reads (the ABA case), and on weakly ordered CPUs
 * (arm64) the loads are not ordered (BPF has no read barrier). With several
 * datagrams queued at once (6.18 batches, or producers on two CPUs) each
 * event measures the newest datagram on the queue. */
static __always_inline void udp_enqueued_tail(const struct sock *sk) {
  const struct sk_buff_head *q = &sk->sk_receive_queue;
  const struct sk_buff *skb = q->prev;
  bool raced = (unsigned long)skb == (unsigned long)q || !skb;
  __u64 t = 0, not_rx = 0;
  __u32 iif = 0;
  if (!raced) {
    t = skb->tstamp;
    not_rx = t ? tstamp_not_rx(skb, false) : 0;
    iif = skb->skb_iif;
    asm volatile("" ::: "memory"); /* load q->prev again, after the fields */
    raced = q->prev != skb;
  }
  if (raced) {
    /* The datagram's interface is unknown: with an Interface filter or
     * GroupBy interface it cannot be attributed, so it is not counted. */
    if (targ_filter_ifindex || targ_groupby == NSL_GROUP_INTERFACE)
      return;
    __u64 group;
    if (!socket_ok(NSL_UDP_SOCKET_ENQUEUED, sk, 0, &group, false))
      return;
    count_skip(NSL_UDP_SOCKET_ENQUEUED, group, NSL_SKIP_RACED);
    return;
  }
  __u64 group;
  if (!socket_ok(NSL_UDP_SOCKET_ENQUEUED, sk, iif, &group, false))
    return;
  record(NSL_UDP_SOCKET_ENQUEUED, t, not_rx, group, sk, NULL, iif);
}

/* tcp_window's clamped wakeups, counted here when tcp_window's clamps
 * hook runs in the tracepoint flavour too: one program on sk_data_ready
 * instead of two, so a packet pays one program entry there (issue 23).
 * User space (plugin/netstacklat/netstacklat.c, netstacklat_serve_tcp_window()) sets
 * these after load, once tcp_window has chosen that flavour; 0: off, and
 * tcp_window's own program (bpf/tcp_window/tcp_window.bpf.c, the same logic) runs
 * instead. tcpw_netns: the namespace tcp_window counts (0: all). */
__u32 tcpw_threshold = 0;
__u32 tcpw_netns = 0;

/* tcp_window/operations-clamped_wakeups, when served here. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} netstacklat_tcpw_wakeups SEC(".maps");

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
  __u64 *v = bpf_map_lookup_elem(&netstacklat_tcpw_wakeups, &zero);
  if (v)
    *v += 1; /* per-CPU slot: no atomic needed */
}

/* sk_data_ready fires when a socket is told it has data: right after a
 * TCP segment or a UDP datagram was queued. One program serves both
 * enqueue hooks, so the tracepoint's entry and the socket's protocol and
 * family loads are paid once per event; the loader keeps it when either
 * hook chose the tracepoint flavour, and the plugin sets which of the two
 * it serves (targ_*_enqueued_tp: the other's path is pruned). */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(enqueued_tp, const struct sock *sk) {
  /* Each setting tested on its own branch, before the protocol: the
   * verifier then drops the path of a hook not served. */
  __u16 proto = sk->sk_protocol;
  if (targ_tcp_enqueued_tp && proto == 6 /* IPPROTO_TCP */) {
    if (is_inet(sk))
      enqueued_tail(NSL_TCP_SOCKET_ENQUEUED, sk);
    __u32 threshold = tcpw_threshold;
    if (threshold)
      tcpw_wakeup(sk, threshold);
    __u32 epoch = tcpw_epoch;
    if (epoch)
      tcpw_mark(sk, epoch, false);
  } else if (targ_udp_enqueued_tp && proto == 17 /* IPPROTO_UDP */) {
    if (is_inet(sk))
      udp_enqueued_tail(sk);
  }
  return 0;
}

SEC("kprobe/__udp_enqueue_schedule_skb")
int BPF_KPROBE(udp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  udp_enqueue_entry(sk, skb, true);
  return 0;
}

SEC("kretprobe/__udp_enqueue_schedule_skb")
int BPF_KRETPROBE(udp_enqueued_kretprobe, int ret) {
  udp_enqueue_return(ret, NULL, true);
  return 0;
}

#endif /* NSL_ENQUEUED_H */
