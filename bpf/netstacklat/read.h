// SPDX-License-Identifier: GPL-2.0
/* netstacklat's programs on a socket's read: tcp_socket_read (peeks told
 * apart from reads, each skb counted once, IncludeHOLBlocked) and
 * udp_socket_read.
 *
 * Included by netstacklat.bpf.c after enqueued.h, in hook order: the
 * programs keep their order in the object. */
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

/* The receive time in tss->ts[0]: a struct timespec64 in the kernels of
 * Debian 11 to 13, a ktime_t (nanoseconds, CLOCK_REALTIME like skb->tstamp)
 * in newer ones (seen in trixie-backports' 7.3: the struct is 24 bytes
 * there). CO-RE picks the layout at load: the other branch's relocation
 * fails and the verifier drops it as dead code. */
struct scm_timestamping_internal___ktime {
  ktime_t ts[3];
} __attribute__((preserve_access_index));

static __always_inline __u64 tss_ns(struct scm_timestamping_internal *tss) {
  if (bpf_core_field_exists(tss->ts[0].tv_nsec))
    return tss->ts[0].tv_sec * 1000000000ULL + tss->ts[0].tv_nsec;
  return ((struct scm_timestamping_internal___ktime *)tss)->ts[0];
}

static __always_inline __u64 tss_ns_probed(struct scm_timestamping_internal *tss) {
  if (bpf_core_field_exists(tss->ts[0].tv_nsec)) {
    struct timespec64 ts;
    bpf_probe_read_kernel(&ts, sizeof(ts), &tss->ts[0]);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
  }
  return BPF_CORE_READ((struct scm_timestamping_internal___ktime *)tss, ts[0]);
}

SEC("fentry/tcp_recv_timestamp")
int BPF_PROG(tcp_read_fentry, struct msghdr *msg, const struct sock *sk,
             struct scm_timestamping_internal *tss) {
  tcp_read(sk, tss_ns(tss), false);
  return 0;
}

/* Fires for every skb (or part of one) copied to user space, by any
 * protocol: keep TCP. One read can copy several skbs, and each is counted,
 * once (tcp_skb_seen()). */
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(tcp_read_tp, const struct sk_buff *skb, int len) {
  const struct sock *sk = skb->sk;
  if (!sk || !is_proto(sk, 6))
    return 0;
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk, skb->skb_iif, &group, false))
    return 0;
  __u32 end = ((const struct tcp_skb_cb *)&skb->cb[0])->end_seq;
  if (tcp_skb_seen(sk, end))
    return 0;
  /* Before the copy, per skb: the skb's own end is the data measured. */
  if (!targ_include_hol && hol_blocked(sk, end)) {
    count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
    return 0;
  }
  __u64 t = skb->tstamp;
  record(NSL_TCP_SOCKET_READ, t, t ? tstamp_not_rx(skb, false) : 0, group,
         sk, skb, 0);
  return 0;
}

SEC("kprobe/tcp_recv_timestamp")
int BPF_KPROBE(tcp_read_kprobe, struct msghdr *msg, const struct sock *sk,
               struct scm_timestamping_internal *tss) {
  tcp_read(sk, tss_ns_probed(tss), true);
  return 0;
}

/* ===================================================== udp_socket_read */

/* udp_recvmsg and udpv6_recvmsg call it for reads and for recv(MSG_PEEK)
 * alike, with len the bytes copied, negated for a peek (every kernel since
 * 4.13: "peeking ? -err : err"). A peek is not a read: the datagram stays
 * queued and its read comes later (systemd peeks to size its buffer). */
SEC("fentry/skb_consume_udp")
int BPF_PROG(udp_read_fentry, struct sock *sk, struct sk_buff *skb, int len) {
  if (len < 0)
    return 0;
  socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, false);
  return 0;
}

SEC("kprobe/skb_consume_udp")
int BPF_KPROBE(udp_read_kprobe, struct sock *sk, struct sk_buff *skb, int len) {
  if (len < 0)
    return 0;
  socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, true);
  return 0;
}

#endif /* NSL_READ_H */
