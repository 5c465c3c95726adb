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
 * hold lasts, and while data behind the hole got through less than
 * QUIET_NS ago (see below). Read by tests/helpers/holtraffic.c through its
 * skeleton.
 *
 * It is also the witness of what arrived out of order: the data segments it
 * let through from the loss on, in the order they came (segs; isn, the
 * SYN's sequence number, tells their stream offsets), from which
 * holtraffic tells the data that arrived beyond a hole (it waited there)
 * from the data that arrived in order. Not all of the data sent behind the
 * lost segment waited: a sender descheduled for longer than the hold (seen
 * in a loaded TCG guest) sends the rest after the hole was filled. */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

const volatile __u16 targ_dport = 0;
const volatile __u32 targ_nth = 1;
const volatile __u64 targ_hold_ns = 300000000ULL;

/* A retransmission of the lost segment gets through only once no data
 * behind the hole got through for this long: the data that passed here
 * before it has then reached TCP before it too (on lo each packet is
 * received on the CPU that sent it, and a CPU of a loaded TCG guest can
 * stall between this program and TCP), so the witness's order is TCP's. */
#define QUIET_NS 50000000ULL

__u64 data_segs = 0; /* data segments to dport seen (up to the loss) */
__u64 dropped = 0;   /* segments lost on purpose */
__u64 first_drop_ns = 0;
__u32 lost_seq = 0;
__u32 isn = 0; /* the SYN's sequence number: stream offset 0 is isn + 1 */
__u64 last_ofo_ns = 0; /* when data behind the hole last got through */
__u64 filled_ns = 0;   /* when a retransmission filled the hole */
/* The data segments let through from the loss on, in their order here (a
 * queue: pushed under its lock, from any CPU); lost_segs, those that did
 * not fit. */
struct hol_seg {
  __u32 seq, len;
};
struct {
  __uint(type, BPF_MAP_TYPE_QUEUE);
  __uint(max_entries, 256);
  __type(value, struct hol_seg);
} segs SEC(".maps");
__u64 lost_segs = 0;

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
  __u32 seq = bpf_ntohl(th->seq);
  if (th->syn && !th->ack)
    isn = seq;
  if (l3len <= th->doff * 4u) /* no payload: handshake, ACK, FIN */
    return XDP_PASS;
  __u32 len = l3len - th->doff * 4u;
  __u64 now = bpf_ktime_get_ns();
  if (!first_drop_ns) {
    if (++data_segs != targ_nth)
      return XDP_PASS;
    first_drop_ns = now;
    lost_seq = seq;
    dropped++;
    return XDP_DROP;
  }
  if (!filled_ns) {
    if (seq == lost_seq) {
      if (now - first_drop_ns < targ_hold_ns ||
          (last_ofo_ns && (__s64)(now - last_ofo_ns) < (__s64)QUIET_NS)) {
        dropped++;
        return XDP_DROP;
      }
      filled_ns = now;
    } else {
      last_ofo_ns = now;
    }
  }
  struct hol_seg sg = {seq, len};
  if (bpf_map_push_elem(&segs, &sg, 0))
    lost_segs++;
  return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
