// SPDX-License-Identifier: GPL-2.0
/* The receive path's programs on a socket's enqueue: tcp_socket_enqueued
 * (netstacklat's histogram, tcp_window's marks and clamped wakeups) and
 * udp_socket_enqueued (netstacklat's), one sk_data_ready program serving
 * both hooks and every handler.
 *
 * Included by rx.bpf.c after start.h, in hook order. */
#ifndef RX_ENQUEUED_H
#define RX_ENQUEUED_H

/* Which enqueue hooks the one sk_data_ready program (enqueued_tp) serves:
 * those whose tracepoint flavour the loader chose (plugin/rx/rx.c). */
const volatile bool rx_tcp_enqueued_tp = true;
const volatile bool rx_udp_enqueued_tp = true;

/* ===================================================== tcp_socket_enqueued */

/* fexit, not fentry: the segment is on the receive queue when it returns.
 * (Upstream netstacklat left fexit/tcp_data_queue: the skb may be freed by
 * then. tcp_queue_rcv's caller frees a coalesced skb only after it returns.) */
SEC("fexit/tcp_queue_rcv")
int BPF_PROG(tcp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             bool *fragstolen, int ret) {
  nsl_on_tcp_enqueued(sk, skb, false);
  tcpw_on_tcp_enqueued(sk, false);
  return 0;
}

/* kprobe at entry: the skb is about to be queued (a few ns earlier than
 * the fexit point). */
SEC("kprobe/tcp_queue_rcv")
int BPF_KPROBE(tcp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  nsl_on_tcp_enqueued(sk, skb, true);
  tcpw_on_tcp_enqueued(sk, true);
  return 0;
}

/* ===================================================== udp_socket_enqueued */

SEC("fentry/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fentry, struct sock *sk, struct sk_buff *skb) {
  nsl_on_udp_enqueue(sk, skb, false);
  return 0;
}

SEC("fexit/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             int ret) {
  nsl_on_udp_enqueued(ret, sk, false);
  return 0;
}

/* sk_data_ready fires when a socket is told it has data: right after a
 * TCP segment or a UDP datagram was queued. One program serves both
 * enqueue hooks and every feature's handler there, so the tracepoint's
 * entry and the socket's protocol and family loads are paid once per
 * event; the loader keeps it when either hook chose the tracepoint
 * flavour, and the part sets which of the two it serves
 * (rx_*_enqueued_tp: the other's path is pruned). */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(enqueued_tp, const struct sock *sk) {
  /* Each setting tested on its own branch, before the protocol: the
   * verifier then drops the path of a hook not served. */
  __u16 proto = sk->sk_protocol;
  if (rx_tcp_enqueued_tp && proto == 6 /* IPPROTO_TCP */) {
    if (is_inet(sk))
      nsl_on_tcp_data_ready(sk);
    tcpw_on_tcp_data_ready(sk);
  } else if (rx_udp_enqueued_tp && proto == 17 /* IPPROTO_UDP */) {
    if (is_inet(sk))
      nsl_on_udp_data_ready(sk);
  }
  return 0;
}

SEC("kprobe/__udp_enqueue_schedule_skb")
int BPF_KPROBE(udp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  nsl_on_udp_enqueue(sk, skb, true);
  return 0;
}

SEC("kretprobe/__udp_enqueue_schedule_skb")
int BPF_KRETPROBE(udp_enqueued_kretprobe, int ret) {
  nsl_on_udp_enqueued(ret, NULL, true);
  return 0;
}

#endif /* RX_ENQUEUED_H */
