// SPDX-License-Identifier: GPL-2.0
/* netstacklat's handlers on a socket's read: tcp_socket_read (peeks told
 * apart from reads, each skb counted once, IncludeHOLBlocked) and
 * udp_socket_read. The receive path's programs (bpf/rx/read.h) call the
 * nsl_on_* functions at the end.
 *
 * Included by handlers.h after enqueued.h. */
#ifndef NSL_READ_H
#define NSL_READ_H

/* ===================================================== tcp_socket_read */

/* A recv(MSG_PEEK) is not a read: tcp_recvmsg calls tcp_recv_timestamp
 * (and copies skbs) for a peek as for a read, and gives no sign of the
 * flag. What tells them apart is the socket's copied_seq, which only a read
 * moves: after a read it is past the data read, after a peek where it was.
 * The last read seen of each socket is kept, in netstacklat_reads indexed
 * by the socket's skc_hash (no arithmetic on a pointer passes the
 * verifier): a call that finds copied_seq where the last one left it
 * consumed nothing. When the socket is not in the table (its first read,
 * or a slot another socket took), a socket that never had data consumed
 * (copied_seq still at the start of the stream: rcv_nxt - bytes_received)
 * was only peeked at. */
static __always_inline struct nsl_read_seen *read_seen(const struct sock *sk,
                                                       const bool probed) {
  __u32 h = RD(probed, sk, __sk_common.skc_hash);
  __u32 k = (h ^ (h >> 16)) & (NSL_READS - 1);
  return bpf_map_lookup_elem(&netstacklat_reads, &k);
}

static __always_inline bool never_consumed(const struct tcp_sock *tp,
                                           __u32 copied) {
  __u32 start = BPF_CORE_READ(tp, rcv_nxt) -
                (__u32)BPF_CORE_READ(tp, bytes_received);
  return copied == start;
}

/* fentry, kprobe: called after the read, copied its copied_seq; true for
 * a peek. */
static __always_inline bool tcp_peeked(const struct sock *sk, __u32 copied,
                                       const bool probed) {
  const struct tcp_sock *tp = (const void *)sk;
  struct nsl_read_seen *r = read_seen(sk, probed);
  if (!r)
    return false;
  if (r->sk == (__u64)sk) {
    if (r->seq == copied)
      return true;
  } else if (never_consumed(tp, copied)) {
    return true;
  }
  r->sk = (__u64)sk;
  r->seq = copied;
  return false;
}

/* tracepoint: called before each skb's copy, for a read and for a peek
 * alike (copied_seq has not moved yet in either): count each skb once, at
 * its first copy, so that a peek and the read after it (or a read of an
 * skb in two parts) count it once. True when the skb was counted. */
static __always_inline bool tcp_skb_seen(const struct sock *sk, __u32 end) {
  struct nsl_read_seen *r = read_seen(sk, false);
  if (!r)
    return false;
  if (r->sk == (__u64)sk && (__s32)(end - r->seq) <= 0)
    return true;
  r->sk = (__u64)sk;
  r->seq = end;
  return false;
}

/* tcp_recvmsg calls it once per read that returned timestamped data, with
 * the receive time of the last skb read in tss->ts[0]. No skb here: the
 * interface is the socket's cached input interface. */
static __always_inline void tcp_read(const struct sock *sk, __u64 t,
                                     const bool probed) {
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk,
                 sk_rx_ifindex(sk, probed), &group, probed))
    return;
  /* Called after the read: copied_seq is the end of the data read, and
   * the timestamp is that of the last skb read. */
  const struct tcp_sock *tp = (const void *)sk;
  __u32 copied = BPF_CORE_READ(tp, copied_seq);
  if (tcp_peeked(sk, copied, probed))
    return;
  if (!targ_include_hol) {
    /* kprobe programs have no socket storage: the loader does not use
     * this flavour with IncludeHOLBlocked false. */
    if (probed)
      return;
    if (hol_blocked(sk, copied)) {
      count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
      return;
    }
  }
  record(NSL_TCP_SOCKET_READ, t, 0, group, sk, NULL, 0);
}

/* ======================================================== the handlers */

/* tcp_socket_read at tcp_recv_timestamp (fentry, kprobe): t, the receive
 * time of the data read. */
static __always_inline void nsl_on_tcp_read(const struct sock *sk, __u64 t,
                                            const bool probed) {
  if (NSL_ON(NSL_TCP_SOCKET_READ))
    tcp_read(sk, t, probed);
}

/* tcp_socket_read at the skb_copy_datagram_iovec tracepoint: an skb of a
 * TCP socket copied to user space. One read can copy several skbs, and
 * each is counted, once (tcp_skb_seen()). */
static __always_inline void nsl_on_tcp_copied(const struct sock *sk,
                                              const struct sk_buff *skb) {
  if (!NSL_ON(NSL_TCP_SOCKET_READ))
    return;
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk, skb->skb_iif, &group, false))
    return;
  __u32 end = ((const struct tcp_skb_cb *)&skb->cb[0])->end_seq;
  if (tcp_skb_seen(sk, end))
    return;
  /* Before the copy, per skb: the skb's own end is the data measured. */
  if (!targ_include_hol && hol_blocked(sk, end)) {
    count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
    return;
  }
  __u64 t = skb->tstamp;
  record(NSL_TCP_SOCKET_READ, t, t ? tstamp_not_rx(skb, false) : 0, group,
         sk, skb, 0);
}

/* udp_socket_read at skb_consume_udp (fentry, kprobe): udp_recvmsg and
 * udpv6_recvmsg call it for reads and for recv(MSG_PEEK) alike, with len
 * the bytes copied, negated for a peek (every kernel since 4.13: "peeking
 * ? -err : err"). A peek is not a read: the datagram stays queued and its
 * read comes later (systemd peeks to size its buffer). */
static __always_inline void nsl_on_udp_read(const struct sock *sk,
                                            const struct sk_buff *skb, int len,
                                            const bool probed) {
  if (NSL_ON(NSL_UDP_SOCKET_READ) && len >= 0)
    socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, probed);
}

#endif /* NSL_READ_H */
