// SPDX-License-Identifier: GPL-2.0
/* Test helpers of test_drops: losses the test makes, each with its own
 * count to hold the plugin's drops against.
 * - xdp_drop_udp (generic XDP, attached by `ip link set ... xdpgeneric
 *   obj`): drops every IPv4 UDP datagram to port XDP_DROP_PORT; built into
 *   every kernel the tests run on (tests/helpers/hol_drop.bpf.c says why).
 * - tc_drop_udp (tcx ingress, 6.6+, attached by tests/helpers/tcx_drop.c,
 *   no tc module needed): the same for port TC_DROP_PORT, where the kernel
 *   gives the drop a reason of its own (tc_ingress).
 * - tc_drop_synack (tcx egress, the same way): drops every SYN-ACK sent
 *   from port TC_SYNACK_PORT, a packet whose socket is the listener's
 *   request socket (tc_egress). */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define XDP_DROP_PORT 40999
#define TC_DROP_PORT 40998
#define TC_SYNACK_PORT 40997

__u64 dropped = 0;
__u64 tc_dropped = 0;

/* The header after the IPv4 header of a frame in [data, end), when that
 * header is of protocol proto; else NULL. */
static __always_inline void *ipv4_next(void *data, void *end, __u8 proto) {
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(0x0800))
    return NULL;
  struct iphdr *ip = (void *)(eth + 1);
  if ((void *)(ip + 1) > end || ip->protocol != proto || ip->ihl != 5)
    return NULL;
  return ip + 1;
}

/* The UDP destination port of an IPv4 datagram in [data, end), or 0. */
static __always_inline __u16 udp_dport(void *data, void *end) {
  struct udphdr *udp = ipv4_next(data, end, 17);
  if (!udp || (void *)(udp + 1) > end)
    return 0;
  return bpf_ntohs(udp->dest);
}

SEC("xdp")
int xdp_drop_udp(struct xdp_md *ctx) {
  if (udp_dport((void *)(long)ctx->data, (void *)(long)ctx->data_end) !=
      XDP_DROP_PORT)
    return XDP_PASS;
  __sync_fetch_and_add(&dropped, 1);
  return XDP_DROP;
}

SEC("tc")
int tc_drop_udp(struct __sk_buff *skb) {
  if (udp_dport((void *)(long)skb->data, (void *)(long)skb->data_end) !=
      TC_DROP_PORT)
    return 0; /* TC_ACT_OK */
  __sync_fetch_and_add(&tc_dropped, 1);
  return 2; /* TC_ACT_SHOT */
}

SEC("tc")
int tc_drop_synack(struct __sk_buff *skb) {
  void *end = (void *)(long)skb->data_end;
  struct tcphdr *tcp = ipv4_next((void *)(long)skb->data, end, 6);
  if (!tcp || (void *)(tcp + 1) > end || bpf_ntohs(tcp->source) != TC_SYNACK_PORT ||
      !tcp->syn || !tcp->ack)
    return 0;
  __sync_fetch_and_add(&tc_dropped, 1);
  return 2; /* TC_ACT_SHOT */
}

char LICENSE[] SEC("license") = "GPL";
