// SPDX-License-Identifier: GPL-2.0
/* netstacklat's handlers on the packet path, before any socket: ip_start,
 * tcp_start (and the out-of-order arrivals of IncludeHOLBlocked false) and
 * udp_start. The receive path's programs (bpf/rx/start.h) call them.
 *
 * Included by handlers.h after the concerns' headers. */
#ifndef NSL_START_H
#define NSL_START_H

/* A packet at ip_start, tcp_start or udp_start (fentry, kprobe and the
 * netif_receive_skb tracepoint): ifindex is the device the hook reads. */
static __always_inline void nsl_on_packet(__u32 hook,
                                          const struct sk_buff *skb,
                                          __u32 ifindex, const bool probed) {
  if (NSL_ON(hook))
    packet_hook(hook, skb, ifindex, probed);
}

/* tcp_start at the tcp_probe tracepoint: established connections only,
 * after socket lookup, so the socket's namespace and route are known. */
static __always_inline void nsl_on_tcp_probe(const struct sock *sk,
                                             const struct sk_buff *skb) {
  if (!NSL_ON(NSL_TCP_START))
    return;
  if (!netns_ok_sk(sk, false) || !ifindex_ok_sk(sk, skb->skb_iif, false))
    return;
  __u64 t = skb->tstamp;
  record(NSL_TCP_START, t, t ? tstamp_not_rx(skb, false) : 0,
         targ_groupby == NSL_GROUP_INTERFACE
             ? if_group(skb->skb_iif,
                        targ_netns ? 0 : sk->__sk_common.skc_net.net->ns.inum)
             : 0,
         sk, skb, 0);
}

/* tcp_socket_read with IncludeHOLBlocked false: an out-of-order arrival
 * (hol_arrival()), in the flavour of the read program. */
static __always_inline void nsl_on_hol_arrival(const struct sock *sk,
                                               const struct sk_buff *skb) {
  if (NSL_ON(NSL_TCP_SOCKET_READ) && !targ_include_hol)
    hol_arrival(sk, skb);
}

#endif /* NSL_START_H */
