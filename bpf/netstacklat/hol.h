// SPDX-License-Identifier: GPL-2.0
/* netstacklat's head-of-line tracking, for IncludeHOLBlocked false: per TCP
 * socket, the sequence ranges of data that arrived out of order
 * (hol_arrival(), on the receive path), and whether a read's data sat
 * behind a hole (hol_blocked(), for tcp_socket_read).
 *
 * Included by netstacklat.bpf.c; needs nothing from it but vmlinux.h and
 * libbpf's headers (its callers test targ_include_hol). */
#ifndef NSL_HOL_H
#define NSL_HOL_H

/* IncludeHOLBlocked false: per TCP socket that ever received data out of
 * order, the sequence ranges of that data (see hol_arrival()). Two ranges:
 * a lagging reader may still have one hole's data to read when the next
 * hole opens. Socket storage is freed with the socket; kprobe programs
 * cannot use it, so the loader refuses that flavour of tcp_socket_read
 * with this setting. */
struct nsl_hol_range {
  __u32 start[2]; /* the lowest sequence number that arrived out of order */
  __u32 end[2];   /* the sequence number after the highest */
  __u8 active[2]; /* reads of this range are still to come */
  __u8 cur;       /* the range of the newest hole */
};

struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct nsl_hol_range);
} netstacklat_hol_range SEC(".maps");

/* Reads that waited behind a hole (data that arrived out of order and sat
 * in the out-of-order queue until a retransmission filled the hole) measure
 * the loss recovery, not the host: IncludeHOLBlocked false leaves them out.
 * By the time they are read the queue is usually merged and empty again,
 * so the receive path keeps the history: hol_arrival() runs on each
 * segment of an established connection (tcp_rcv_established) and, for one
 * that starts after rcv_nxt (it goes to the out-of-order queue), widens the
 * socket's range of such data. A read is left out when the data it
 * measures ends inside that range: it sat behind the hole. Data before the
 * hole, and the retransmission that fills it, only waited for the reader:
 * counted. Only compiled in with IncludeHOLBlocked false.
 *
 * The tcp_sock fields are probe reads in every flavour: the verifier types
 * sk as struct sock, so no tcp_sock field is reachable by a direct load.
 * The receive path holds the socket lock; tcp_recv_timestamp runs after
 * release_sock(), so a read may race with an arrival and see a range half
 * written: at worst one read is counted or left out wrongly. */
/* An out-of-order arrival [seq, end) on a socket whose newest hole's range
 * is k. empty: the out-of-order queue was empty, so this opens a new hole,
 * with a range of its own unless both are still to be read (then it joins
 * the newest). */
static __always_inline void hol_arrive_at(struct nsl_hol_range *r, const int k,
                                          __u32 seq, __u32 end, bool empty) {
  const int o = 1 - k;
  if (empty && r->active[k] && !r->active[o]) {
    r->start[o] = seq;
    r->end[o] = end;
    r->active[o] = 1;
    r->cur = o;
    return;
  }
  if (!r->active[k]) {
    r->start[k] = seq;
    r->end[k] = end;
    r->active[k] = 1;
    return;
  }
  if ((__s32)(seq - r->start[k]) < 0)
    r->start[k] = seq;
  if ((__s32)(end - r->end[k]) > 0)
    r->end[k] = end;
}

static __always_inline void hol_arrival(const struct sock *sk,
                                        const struct sk_buff *skb) {
  const struct tcp_skb_cb *cb = (const void *)&skb->cb[0];
  __u32 seq = cb->seq, end = cb->end_seq;
  const struct tcp_sock *tp = (const void *)sk;
  __u32 rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
  /* In order, a retransmission of old data, or no data: nothing to do. */
  if ((__s32)(seq - rcv_nxt) <= 0 || (__s32)(end - seq) <= 0)
    return;
  struct nsl_hol_range *r = bpf_sk_storage_get(
      &netstacklat_hol_range, (void *)sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
  if (!r) /* no memory: this hole's reads will be counted */
    return;
  /* Constant indices only: the 6.1 verifier loses the bounds of a
   * variable one. */
  bool empty = !BPF_CORE_READ(tp, out_of_order_queue.rb_node);
  if (r->cur & 1)
    hol_arrive_at(r, 1, seq, end, empty);
  else
    hol_arrive_at(r, 0, seq, end, empty);
}

/* read_end: the sequence number after the data whose receive time is
 * measured. True when that data arrived out of order: it ends after a
 * range's start and not after its end. A range the reader has gone past is
 * done with. */
static __always_inline bool hol_in(struct nsl_hol_range *r, __u32 i,
                                   __u32 read_end) {
  if (!r->active[i])
    return false;
  if ((__s32)(read_end - r->end[i]) > 0) {
    r->active[i] = 0;
    return false;
  }
  return (__s32)(read_end - r->start[i]) > 0;
}

static __always_inline bool hol_blocked(const struct sock *sk,
                                        __u32 read_end) {
  const struct tcp_sock *tp = (const void *)sk;
  /* Never out of order on this socket (5.4+): no storage either. */
  if (!BPF_CORE_READ(tp, rcv_ooopack))
    return false;
  struct nsl_hol_range *r =
      bpf_sk_storage_get(&netstacklat_hol_range, (void *)sk, NULL, 0);
  if (!r)
    return false;
  bool b0 = hol_in(r, 0, read_end);
  bool b1 = hol_in(r, 1, read_end);
  return b0 || b1;
}

#endif /* NSL_HOL_H */
