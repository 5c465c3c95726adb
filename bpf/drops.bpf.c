// SPDX-License-Identifier: GPL-2.0
/* drops: received (and sent) packets the kernel dropped, counted by the
 * reason the kernel gives (enum skb_drop_reason, 5.17+) or, on kernels
 * without reasons, by the drop's location (the caller of kfree_skb).
 * Programs run only when a packet is freed as a drop: consume_skb() has
 * its own tracepoint, which nothing here attaches to.
 *
 * One hook (kfree_skb), three generations of the kernel's interface; user
 * space picks the generation from the kernel's BTF and gives the loader
 * only that generation's programs:
 *   reason, 6.11+   tp_btf/kfree_skb (skb, location, reason, rx_sk)
 *                   fentry and kprobe on sk_skb_reason_drop(sk, skb, reason)
 *   reason, 5.17+   tp_btf/kfree_skb (skb, location, reason)
 *                   fentry and kprobe on kfree_skb_reason(skb, reason)
 *   location        tp_btf/kfree_skb (skb, location)
 *                   kprobe on kfree_skb(skb), the location being its return
 *                   address (an fentry program cannot see it)
 * The tracepoint fires where the last reference goes and never for
 * SKB_CONSUMED; the function entries see every call, so they count only a
 * call that drops the last reference (users == 1) with another reason. The
 * functions miss what kfree_skb_list() frees (docs/drops.md). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "drops.h"

/* Set by user space before load. */
const volatile __u32 targ_netns = 0;     /* 0: every network namespace */
const volatile __u32 targ_nreasons = 1;  /* slots of drops_by_reason - 1 */
const volatile __s64 targ_consumed = -1; /* SKB_CONSUMED; -1: none */

/* drops-<reason>/operations: one slot per value of the running kernel's
 * enum skb_drop_reason (user space sizes it from BTF), and a last one for
 * values the enum does not name (subsystem reasons). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} drops_by_reason SEC(".maps");

/* drops-at_<function>/operations: location -> drops (shared by the CPUs:
 * a drop site is rare enough for an atomic add). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, DROPS_LOCATIONS_MAX);
  __type(key, __u64);
  __type(value, __u64);
} drops_by_location SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} drops_location_overflow SEC(".maps");

static __always_inline void add(void *map, __u32 slot) {
  __u64 *v = bpf_map_lookup_elem(map, &slot);
  if (v)
    *v += 1; /* per-CPU slot: no atomic needed */
}

static __always_inline void count_reason(__u32 reason) {
  add(&drops_by_reason, reason < targ_nreasons ? reason : targ_nreasons);
}

static __always_inline void count_location(__u64 loc) {
  __u64 *v = bpf_map_lookup_elem(&drops_by_location, &loc);
  if (!v) {
    __u64 zero = 0;
    bpf_map_update_elem(&drops_by_location, &loc, &zero, BPF_NOEXIST);
    v = bpf_map_lookup_elem(&drops_by_location, &loc);
  }
  if (v)
    __sync_fetch_and_add(v, 1);
  else
    add(&drops_location_overflow, 0);
}

/* The namespace the packet was dropped in: the receiving socket's when the
 * kernel names it (rx_sk, 6.11+); else the device's; else, with no device
 * or one that does not read (a queued skb's dev field is reused: UDP's
 * dev_scratch, TCP's out-of-order rbtree), the socket's that owns the skb.
 * The device comes before skb->sk, which for a packet that crossed a veth
 * is still the sender's socket in the other namespace. Typed-pointer loads
 * (tracing programs): a stale pointer reads as 0. */
static __always_inline bool netns_ok(struct sk_buff *skb, struct sock *rx_sk) {
  if (!targ_netns)
    return true;
  __u32 inum = 0;
  if (rx_sk) {
    inum = rx_sk->__sk_common.skc_net.net->ns.inum;
  } else {
    struct net_device *dev = skb->dev;
    if (dev)
      inum = dev->nd_net.net->ns.inum;
    struct sock *sk = skb->sk;
    if (!inum && sk)
      inum = sk->__sk_common.skc_net.net->ns.inum;
  }
  return inum == targ_netns;
}

/* The same through probe reads (kprobe programs: untyped pointers). */
static __always_inline bool netns_ok_probe(struct sk_buff *skb,
                                           struct sock *rx_sk) {
  if (!targ_netns)
    return true;
  __u32 inum = 0;
  if (rx_sk) {
    inum = BPF_CORE_READ(rx_sk, __sk_common.skc_net.net, ns.inum);
  } else {
    struct net_device *dev = BPF_CORE_READ(skb, dev);
    if (dev)
      inum = BPF_CORE_READ(dev, nd_net.net, ns.inum);
    struct sock *sk = BPF_CORE_READ(skb, sk);
    if (!inum && sk)
      inum = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  }
  return inum == targ_netns;
}

/* ------------------------------------------------------ with reasons */

SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_tp, struct sk_buff *skb, void *location,
             enum skb_drop_reason reason) {
  if (netns_ok(skb, NULL))
    count_reason((__u32)reason);
  return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_tp_sk, struct sk_buff *skb, void *location,
             enum skb_drop_reason reason, struct sock *rx_sk) {
  if (netns_ok(skb, rx_sk))
    count_reason((__u32)reason);
  return 0;
}

/* A function entry: the call drops the packet when it holds the last
 * reference, and the tracepoint's own SKB_CONSUMED test. */
static __always_inline bool entry_drops(struct sk_buff *skb, __s64 reason) {
  return skb && reason != targ_consumed && skb->users.refs.counter == 1;
}

SEC("fentry/kfree_skb_reason")
int BPF_PROG(drops_fentry, struct sk_buff *skb, enum skb_drop_reason reason) {
  if (entry_drops(skb, reason) && netns_ok(skb, NULL))
    count_reason((__u32)reason);
  return 0;
}

SEC("fentry/sk_skb_reason_drop")
int BPF_PROG(drops_fentry_sk, struct sock *sk, struct sk_buff *skb,
             enum skb_drop_reason reason) {
  if (entry_drops(skb, reason) && netns_ok(skb, sk))
    count_reason((__u32)reason);
  return 0;
}

static __always_inline void kprobe_reason(struct sk_buff *skb, __s64 reason,
                                          struct sock *rx_sk) {
  if (!skb || reason == targ_consumed ||
      BPF_CORE_READ(skb, users.refs.counter) != 1 ||
      !netns_ok_probe(skb, rx_sk))
    return;
  count_reason((__u32)reason);
}

SEC("kprobe/kfree_skb_reason")
int BPF_KPROBE(drops_kprobe, struct sk_buff *skb, unsigned int reason) {
  kprobe_reason(skb, reason, NULL);
  return 0;
}

SEC("kprobe/sk_skb_reason_drop")
int BPF_KPROBE(drops_kprobe_sk, struct sock *sk, struct sk_buff *skb,
               unsigned int reason) {
  kprobe_reason(skb, reason, sk);
  return 0;
}

/* ---------------------------------------------------- by location */

SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_loc_tp, struct sk_buff *skb, void *location) {
  if (netns_ok(skb, NULL))
    count_location((__u64)location);
  return 0;
}

SEC("kprobe/kfree_skb")
int BPF_KPROBE(drops_loc_kprobe, struct sk_buff *skb) {
  if (!skb || BPF_CORE_READ(skb, users.refs.counter) != 1 ||
      !netns_ok_probe(skb, NULL))
    return 0;
  __u64 ip = 0;
  BPF_KPROBE_READ_RET_IP(ip, ctx);
  count_location(ip);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
