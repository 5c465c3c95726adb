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
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "drops/drops.h"
#include "common/rate_limit.h"
#include "common/sk_addr.h"

/* Set by user space before load. */
const volatile __u32 targ_netns = 0;     /* 0: every network namespace */
const volatile __u32 targ_nreasons = 1;  /* slots of drops_by_reason - 1 */
const volatile __s64 targ_consumed = -1; /* SKB_CONSUMED; -1: none */
const volatile bool targ_notify = false;  /* DropNotifications */
const volatile __u64 targ_drop_limit = 10; /* DropLimit, a second */

/* drops-<reason>/operations: one slot per value of the running kernel's
 * enum skb_drop_reason (user space sizes it from BTF), and a last one for
 * values the enum does not name (subsystem reasons). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} drops_by_reason SEC(".maps");

/* drops-at_<function>/operations: location -> drops, per CPU (summed by
 * user space): a drop storm at one site writes no line another CPU
 * writes. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
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

/* DropNotifications: the records (64 KiB; one page when off, set before
 * load), the rate limit (slot RATE_SHARE_SLOTS: the host's DropLimit; the
 * others: each reason's, or location's, share of it), the drops that were
 * not sent (over DropLimit or their share, or the ring buffer full), and
 * the reasons IgnoreReason leaves out (1: no record). */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 * 1024);
} drops_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, RATE_SHARE_SLOTS + 1);
  __type(key, __u32);
  __type(value, struct rate_window);
} drops_event_rate SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} drops_events_suppressed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8);
} drops_quiet SEC(".maps");

static __always_inline void add(void *map, __u32 slot) {
  __u64 *v = bpf_map_lookup_elem(map, &slot);
  if (v)
    *v += 1; /* per-CPU slot: no atomic needed */
}

static __always_inline void count_location(__u64 loc) {
  __u64 *v = bpf_map_lookup_elem(&drops_by_location, &loc);
  if (!v) {
    __u64 zero = 0;
    bpf_map_update_elem(&drops_by_location, &loc, &zero, BPF_NOEXIST);
    v = bpf_map_lookup_elem(&drops_by_location, &loc);
  }
  if (v)
    *v += 1; /* this CPU's value */
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

/* ---------------------------------------------------- notifications */

/* The socket a notification names: the receiving one the kernel gives
 * (rx_sk), else the packet's own when it is of the packet's namespace (a
 * packet that crossed a veth still carries its sender's socket). */
static __always_inline struct sock *event_sk(struct sk_buff *skb,
                                             struct sock *rx_sk) {
  if (rx_sk)
    return rx_sk;
  struct sock *sk = BPF_CORE_READ(skb, sk);
  if (!sk)
    return NULL;
  struct net_device *dev = BPF_CORE_READ(skb, dev);
  __u32 dev_ns = dev ? BPF_CORE_READ(dev, nd_net.net, ns.inum) : 0;
  if (dev_ns && dev_ns != BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum))
    return NULL;
  return sk;
}

/* Addresses and ports from the packet's IP header and the TCP/UDP header
 * after it, when they lie in the linear data. */
static __always_inline void event_headers(struct drops_event *e,
                                          struct sk_buff *skb) {
  unsigned char *head = BPF_CORE_READ(skb, head);
  __u32 nh = BPF_CORE_READ(skb, network_header);
  __u32 tail = BPF_CORE_READ(skb, tail), l4;
  __u8 v = 0;
  if (nh == (__u16)~0U || nh + 20 > tail) /* the smallest IP header */
    return;
  bpf_probe_read_kernel(&v, 1, head + nh);
  __u8 *l = e->received ? e->laddr : e->raddr;
  __u8 *r = e->received ? e->raddr : e->laddr;
  if (v >> 4 == 4) {
    struct iphdr ip;
    bpf_probe_read_kernel(&ip, sizeof(ip), head + nh);
    e->family = 2; /* AF_INET */
    e->proto = ip.protocol;
    __builtin_memcpy(l, &ip.daddr, 4);
    __builtin_memcpy(r, &ip.saddr, 4);
    l4 = nh + ip.ihl * 4;
  } else if (v >> 4 == 6 && nh + 40 <= tail) {
    struct ipv6hdr ip6;
    bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh);
    e->family = 10; /* AF_INET6 */
    e->proto = ip6.nexthdr; /* TCP/UDP right after the fixed header only */
    __builtin_memcpy(l, &ip6.daddr, 16);
    __builtin_memcpy(r, &ip6.saddr, 16);
    l4 = nh + 40;
  } else {
    return;
  }
  __be16 ports[2];
  if ((e->proto == 6 || e->proto == 17) && l4 + 4 <= tail &&
      bpf_probe_read_kernel(ports, sizeof(ports), head + l4) == 0) {
    __u16 src = bpf_ntohs(ports[0]), dst = bpf_ntohs(ports[1]);
    e->lport = e->received ? dst : src;
    e->rport = e->received ? src : dst;
    e->has_ports = 1;
  }
}

/* A socket whose struct sock may be read past its sock_common, or NULL:
 * a request socket (TCP_NEW_SYN_RECV: a SYN-ACK's, on transmit) is a
 * struct request_sock and a TCP_TIME_WAIT one an inet_timewait_sock, both
 * shorter (the kernel's sk_fullsock()); a request socket gives its
 * listener instead. */
static __always_inline struct sock *full_sk(struct sock *sk) {
  __u8 state = BPF_CORE_READ(sk, __sk_common.skc_state);
  if (state == TCP_NEW_SYN_RECV)
    return BPF_CORE_READ(sk, __sk_common.skc_listener);
  return state == TCP_TIME_WAIT ? NULL : sk;
}

/* The record's fields from the packet's headers and its socket: false
 * when neither names anything (no record). */
static __always_inline bool event_fill(struct drops_event *ev,
                                       struct sk_buff *skb,
                                       struct sock *rx_sk) {
  ev->received = BPF_CORE_READ(skb, skb_iif) != 0;
  event_headers(ev, skb);
  struct sock *sk = event_sk(skb, rx_sk);
  if (!sk && !ev->has_ports)
    return false; /* nothing to name */
  struct sock *full = sk ? full_sk(sk) : NULL;
  if (sk && !ev->has_ports) { /* sock_common's fields: every kind of sock */
    __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
    if (family == 2 || family == 10) {
      ev->family = family;
      /* Only TCP has sockets that are not full. */
      ev->proto = full == sk ? (__u8)BPF_CORE_READ(sk, sk_protocol) : 6;
      ev->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
      ev->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
      ev->has_ports = 1;
      sk_addrs(sk, family, ev->laddr, ev->raddr);
    }
  }
  struct net_device *dev = BPF_CORE_READ(skb, dev);
  if (dev)
    ev->ifindex = BPF_CORE_READ(dev, ifindex);
  if (sk) {
    if (full)
      ev->cgroup = BPF_CORE_READ(full, sk_cgrp_data.cgroup, kn, id);
    ev->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  } else if (dev) {
    ev->netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
  }
  return true;
}

/* One drop as a record to user space, if this second's DropLimit and its
 * reason's (or location's) share of it are not used up, it names a socket
 * or ports, and the ring buffer has room; else (over the limit, or the
 * ring full) it is counted as suppressed. The limit is read first, with
 * plain loads: a drop over it reads nothing else and writes no shared
 * line. Probe reads in every flavour: this runs only with
 * DropNotifications, for drops that will be sent. `share`: the share slot
 * (rate_limit.h). */
static __always_inline void notify(struct sk_buff *skb, struct sock *rx_sk,
                                   __u64 cause, __u32 slot, __u32 share) {
  __u32 host = RATE_SHARE_SLOTS;
  __u8 *quiet = bpf_map_lookup_elem(&drops_quiet, &slot);
  if (quiet && *quiet)
    return;
  struct rate_window *all = bpf_map_lookup_elem(&drops_event_rate, &host);
  struct rate_window *mine = bpf_map_lookup_elem(&drops_event_rate, &share);
  __u64 now = bpf_ktime_get_ns();
  if (!all || !mine || !rate_room_shared(all, mine, now, targ_drop_limit)) {
    add(&drops_events_suppressed, 0);
    return;
  }
  struct drops_event ev;
  __builtin_memset(&ev, 0, sizeof(ev));
  if (!event_fill(&ev, skb, rx_sk))
    return;
  struct drops_event *e = bpf_ringbuf_reserve(&drops_events, sizeof(*e), 0);
  if (!e) {
    add(&drops_events_suppressed, 0);
    return;
  }
  rate_take_shared(all, mine, now);
  __builtin_memcpy(e, &ev, sizeof(ev));
  e->time_ns = now;
  e->cause = cause;
  bpf_ringbuf_submit(e, 0);
}

static __always_inline void drop_reason(struct sk_buff *skb, struct sock *rx_sk,
                                        __u32 reason) {
  __u32 slot = reason < targ_nreasons ? reason : targ_nreasons;
  add(&drops_by_reason, slot);
  if (targ_notify)
    notify(skb, rx_sk, reason, slot, slot & (RATE_SHARE_SLOTS - 1));
}

static __always_inline void drop_location(struct sk_buff *skb, __u64 loc) {
  count_location(loc);
  if (targ_notify)
    notify(skb, NULL, loc, 0, rate_share_slot(loc));
}

/* ------------------------------------------------------ with reasons */

SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_tp, struct sk_buff *skb, void *location,
             enum skb_drop_reason reason) {
  if (netns_ok(skb, NULL))
    drop_reason(skb, NULL, (__u32)reason);
  return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_tp_sk, struct sk_buff *skb, void *location,
             enum skb_drop_reason reason, struct sock *rx_sk) {
  if (netns_ok(skb, rx_sk))
    drop_reason(skb, rx_sk, (__u32)reason);
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
    drop_reason(skb, NULL, (__u32)reason);
  return 0;
}

SEC("fentry/sk_skb_reason_drop")
int BPF_PROG(drops_fentry_sk, struct sock *sk, struct sk_buff *skb,
             enum skb_drop_reason reason) {
  if (entry_drops(skb, reason) && netns_ok(skb, sk))
    drop_reason(skb, sk, (__u32)reason);
  return 0;
}

static __always_inline void kprobe_reason(struct sk_buff *skb, __s64 reason,
                                          struct sock *rx_sk) {
  if (!skb || reason == targ_consumed ||
      BPF_CORE_READ(skb, users.refs.counter) != 1 ||
      !netns_ok_probe(skb, rx_sk))
    return;
  drop_reason(skb, rx_sk, (__u32)reason);
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
    drop_location(skb, (__u64)location);
  return 0;
}

SEC("kprobe/kfree_skb")
int BPF_KPROBE(drops_loc_kprobe, struct sk_buff *skb) {
  if (!skb || BPF_CORE_READ(skb, users.refs.counter) != 1 ||
      !netns_ok_probe(skb, NULL))
    return 0;
  __u64 ip = 0;
  BPF_KPROBE_READ_RET_IP(ip, ctx);
  drop_location(skb, ip);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
