// SPDX-License-Identifier: GPL-2.0
/* What the receive path's programs ask of a packet or a socket before
 * handing it to the features' handlers (which may ask it too). Included
 * by rx.bpf.c before the handlers. */
#ifndef RX_PACKET_H
#define RX_PACKET_H

/* ip_start's tracepoint flavour fires before __netif_receive_skb_core
 * takes a VLAN tag out of the packet: a frame whose 802.1Q or 802.1ad tag
 * is still in it (no VLAN offload: virtio-net, a NIC with rxvlan off, the
 * inner tag of QinQ) has skb->protocol 0x8100 or 0x88A8 there. Called only
 * for a protocol other than IPv4 and IPv6, so IP packets pay nothing: the
 * protocol each tag encapsulates (at most two tags, one read of the first
 * 8 bytes after the Ethernet header, where skb->data points) is IPv4 or
 * IPv6. The other flavours hook ip_rcv_core, after the tags are gone. */
static __always_inline bool vlan_of_ip(const struct sk_buff *skb,
                                       __be16 proto) {
  if (proto != bpf_htons(0x8100) && proto != bpf_htons(0x88A8))
    return false;
  __be16 tag[4]; /* TCI, encapsulated protocol, twice */
  if (bpf_probe_read_kernel(tag, sizeof(tag), skb->data))
    return false;
  proto = tag[1];
  if (proto == bpf_htons(0x8100) || proto == bpf_htons(0x88A8))
    proto = tag[3];
  return proto == bpf_htons(0x0800) || proto == bpf_htons(0x86DD);
}

static __always_inline bool is_inet(const struct sock *sk) {
  __u16 family = sk->__sk_common.skc_family;
  return family == 2 /* AF_INET */ || family == 10 /* AF_INET6 */;
}

static __always_inline bool is_proto(const struct sock *sk, __u16 proto) {
  return sk->sk_protocol == proto && is_inet(sk);
}

#endif /* RX_PACKET_H */
