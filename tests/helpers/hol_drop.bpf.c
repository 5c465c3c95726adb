// SPDX-License-Identifier: GPL-2.0
/* Test helper (XDP, attached in generic mode to the receiving device):
 * loses one chosen TCP data segment, and every retransmission of it for
 * hold_ns, as a lossy path would. The data sent after it arrives out of
 * order and waits behind the hole until a retransmission gets through.
 *
 * XDP rather than tc: generic XDP is built into every kernel the tests
 * run on (the VM matrix's Debian kernels have clsact and cls_bpf only as
 * modules, which its initramfs does not carry), and it drops on receive,
 * which the sender's TCP sees as real loss (a drop at the sender's egress
 * qdisc is reported back to TCP as a failed transmit and nothing gets
 * ahead of the hole).
 *
 * Only segments with a payload to dport count; the nth of them (from 1) is
 * lost, and any later one starting at the same sequence number while the
 * hold lasts. Read by tests/helpers/holtraffic.c through its skeleton. */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

const volatile __u16 targ_dport = 0;
const volatile __u32 targ_nth = 1;
const volatile __u64 targ_hold_ns = 300000000ULL;

__u64 data_segs = 0; /* data segments to dport seen (up to the loss) */
__u64 dropped = 0;   /* segments lost on purpose */
__u64 first_drop_ns = 0;
__u32 lost_seq = 0;

SEC("xdp")
int hol_drop(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end)
    return XDP_PASS;
  void *l4;
  __u32 l3len; /* IP header + TCP header + payload */
  if (eth->h_proto == bpf_htons(0x0800)) {
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->protocol != 6)
      return XDP_PASS;
    l4 = (void *)ip + ip->ihl * 4;
    l3len = bpf_ntohs(ip->tot_len) - ip->ihl * 4;
  } else if (eth->h_proto == bpf_htons(0x86DD)) {
    struct ipv6hdr *ip6 = (void *)(eth + 1);
    if ((void *)(ip6 + 1) > end || ip6->nexthdr != 6)
      return XDP_PASS;
    l4 = ip6 + 1;
    l3len = bpf_ntohs(ip6->payload_len);
  } else {
    return XDP_PASS;
  }
  struct tcphdr *th = l4;
  if ((void *)(th + 1) > end || bpf_ntohs(th->dest) != targ_dport)
    return XDP_PASS;
  if (l3len <= th->doff * 4u) /* no payload: handshake, ACK, FIN */
    return XDP_PASS;
  __u32 seq = bpf_ntohl(th->seq);
  __u64 now = bpf_ktime_get_ns();
  if (!first_drop_ns) {
    if (++data_segs != targ_nth)
      return XDP_PASS;
    first_drop_ns = now;
    lost_seq = seq;
    dropped++;
    return XDP_DROP;
  }
  if (seq == lost_seq && now - first_drop_ns < targ_hold_ns) {
    dropped++;
    return XDP_DROP;
  }
  return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
