// SPDX-License-Identifier: GPL-2.0
/* The receive path's programs before any socket: ip_start, tcp_start
 * (with the out-of-order arrivals of netstacklat's IncludeHOLBlocked
 * false, in the flavour of tcp_socket_read's program) and udp_start, each
 * flavour reading the skb and its device once and calling the handlers.
 *
 * Included by rx.bpf.c after the features' handlers, in hook order: the
 * programs keep their order in the object. */
#ifndef RX_START_H
#define RX_START_H

/* ===================================================== ip_start */

SEC("fentry/ip_rcv_core")
int BPF_PROG(ip_start_fentry_v4, struct sk_buff *skb) {
  nsl_on_packet(RX_IP_START, skb, skb->dev->ifindex, false);
  return 0;
}

SEC("fentry/ip6_rcv_core")
int BPF_PROG(ip_start_fentry_v6, struct sk_buff *skb) {
  nsl_on_packet(RX_IP_START, skb, skb->dev->ifindex, false);
  return 0;
}

/* Fires in __netif_receive_skb_core before the protocol handler, so it
 * sees every received packet: keep only IPv4 and IPv6, in a VLAN tag or
 * not (vlan_of_ip). skb_iif is not set yet there; the device is.
 * It fires once per call, not per device: a bond, team, VLAN, macvlan or
 * ipvlan hands the packet to its upper device inside the same call. A
 * bridge port does not: the bridge receives the packet again
 * (br_pass_frame_up, a new netif_receive_skb on the bridge device), and an
 * Open vSwitch port's packet comes back on the internal port. So a port's
 * pass is left out, and a container's packet that crossed a veth and a
 * bridge is counted once, on the bridge, the device the IP layer sees (as
 * the fentry and kprobe flavours count it, at ip_rcv_core). Frames a bridge
 * forwards never reach this host's IP layer and are not counted. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(ip_start_tp, struct sk_buff *skb) {
  __be16 proto = skb->protocol;
  if (proto != bpf_htons(0x0800) && proto != bpf_htons(0x86DD) &&
      !vlan_of_ip(skb, proto))
    return 0;
  const struct net_device *dev = skb->dev;
  if (BPF_CORE_READ_BITFIELD(dev, priv_flags) &
      (bpf_core_enum_value(enum netdev_priv_flags, IFF_BRIDGE_PORT) |
       bpf_core_enum_value(enum netdev_priv_flags, IFF_OVS_DATAPATH)))
    return 0;
  nsl_on_packet(RX_IP_START, skb, dev->ifindex, false);
  return 0;
}

SEC("kprobe/ip_rcv_core")
int BPF_KPROBE(ip_start_kprobe_v4, struct sk_buff *skb) {
  nsl_on_packet(RX_IP_START, skb, BPF_CORE_READ(skb, dev, ifindex), true);
  return 0;
}

SEC("kprobe/ip6_rcv_core")
int BPF_KPROBE(ip_start_kprobe_v6, struct sk_buff *skb) {
  nsl_on_packet(RX_IP_START, skb, BPF_CORE_READ(skb, dev, ifindex), true);
  return 0;
}

/* ===================================================== tcp_start */

SEC("fentry/tcp_v4_rcv")
int BPF_PROG(tcp_start_fentry_v4, struct sk_buff *skb) {
  nsl_on_packet(RX_TCP_START, skb, skb->skb_iif, false);
  return 0;
}

SEC("fentry/tcp_v6_rcv")
int BPF_PROG(tcp_start_fentry_v6, struct sk_buff *skb) {
  nsl_on_packet(RX_TCP_START, skb, skb->skb_iif, false);
  return 0;
}

/* tcp_probe fires at the top of tcp_rcv_established: segments of
 * established connections only, after socket lookup (and after the socket
 * backlog when the owner held the lock). */
SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_start_tp, struct sock *sk, struct sk_buff *skb) {
  nsl_on_tcp_probe(sk, skb);
  return 0;
}

SEC("kprobe/tcp_v4_rcv")
int BPF_KPROBE(tcp_start_kprobe_v4, struct sk_buff *skb) {
  nsl_on_packet(RX_TCP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

SEC("kprobe/tcp_v6_rcv")
int BPF_KPROBE(tcp_start_kprobe_v6, struct sk_buff *skb) {
  nsl_on_packet(RX_TCP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

/* tcp_socket_read with netstacklat's IncludeHOLBlocked false: the
 * out-of-order arrivals, in the flavour of the read program. */
SEC("fentry/tcp_rcv_established")
int BPF_PROG(hol_arrival_fentry, struct sock *sk, struct sk_buff *skb) {
  nsl_on_hol_arrival(sk, skb);
  return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(hol_arrival_tp, struct sock *sk, struct sk_buff *skb) {
  nsl_on_hol_arrival(sk, skb);
  return 0;
}

/* ===================================================== udp_start */

SEC("fentry/udp_rcv")
int BPF_PROG(udp_start_fentry_v4, struct sk_buff *skb) {
  nsl_on_packet(RX_UDP_START, skb, skb->skb_iif, false);
  return 0;
}

SEC("fentry/udpv6_rcv")
int BPF_PROG(udp_start_fentry_v6, struct sk_buff *skb) {
  nsl_on_packet(RX_UDP_START, skb, skb->skb_iif, false);
  return 0;
}

SEC("kprobe/udp_rcv")
int BPF_KPROBE(udp_start_kprobe_v4, struct sk_buff *skb) {
  nsl_on_packet(RX_UDP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

SEC("kprobe/udpv6_rcv")
int BPF_KPROBE(udp_start_kprobe_v6, struct sk_buff *skb) {
  nsl_on_packet(RX_UDP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

#endif /* RX_START_H */
