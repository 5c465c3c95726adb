// SPDX-License-Identifier: GPL-2.0
/* netstacklat's handlers on a socket's enqueue: tcp_socket_enqueued and
 * udp_socket_enqueued. The receive path's programs (bpf/rx/enqueued.h)
 * call the nsl_on_* functions at the end.
 *
 * Included by handlers.h after start.h. */
#ifndef NSL_ENQUEUED_H
#define NSL_ENQUEUED_H

/* ===================================================== tcp_socket_enqueued */

/* The last skb on the receive queue is the one just queued (or the one it
 * was coalesced into). */
static __always_inline void enqueued_tail(__u32 hook, const struct sock *sk) {
  const struct sk_buff *skb = sk->sk_receive_queue.prev;
  if (!sk->sk_receive_queue.qlen || !skb)
    return;
  socket_skb_hook(hook, sk, skb, false);
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

/* ======================================================== the handlers */

/* tcp_socket_enqueued at tcp_queue_rcv (fexit, kprobe): the skb queued. */
static __always_inline void nsl_on_tcp_enqueued(const struct sock *sk,
                                                const struct sk_buff *skb,
                                                const bool probed) {
  if (NSL_ON(NSL_TCP_SOCKET_ENQUEUED))
    socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, probed);
}

/* tcp_socket_enqueued at the sk_data_ready tracepoint (an inet socket). */
static __always_inline void nsl_on_tcp_data_ready(const struct sock *sk) {
  if (NSL_ON(NSL_TCP_SOCKET_ENQUEUED))
    enqueued_tail(NSL_TCP_SOCKET_ENQUEUED, sk);
}

/* udp_socket_enqueued at __udp_enqueue_schedule_skb's entry and return
 * (fentry and fexit, kprobe and kretprobe). */
static __always_inline void nsl_on_udp_enqueue(const struct sock *sk,
                                               const struct sk_buff *skb,
                                               const bool probed) {
  if (NSL_ON(NSL_UDP_SOCKET_ENQUEUED))
    udp_enqueue_entry(sk, skb, probed);
}

static __always_inline void nsl_on_udp_enqueued(int ret, const struct sock *sk,
                                                const bool probed) {
  if (NSL_ON(NSL_UDP_SOCKET_ENQUEUED))
    udp_enqueue_return(ret, sk, probed);
}

/* udp_socket_enqueued at the sk_data_ready tracepoint (an inet socket). */
static __always_inline void nsl_on_udp_data_ready(const struct sock *sk) {
  if (NSL_ON(NSL_UDP_SOCKET_ENQUEUED))
    udp_enqueued_tail(sk);
}

#endif /* NSL_ENQUEUED_H */
