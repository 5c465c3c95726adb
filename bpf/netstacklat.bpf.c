// SPDX-License-Identifier: GPL-2.0
/* netstacklat: how long a received packet has waited, from its receive
 * timestamp (skb->tstamp, CLOCK_REALTIME) to a point in the network stack.
 *
 * Each hook has one handler; every attach flavour (fentry/fexit, tp_btf,
 * kprobe) is a thin wrapper that finds the skb and socket and calls it. The
 * loader (plugin/loader.c) keeps one flavour per hook. Filters are rodata:
 * the verifier prunes the ones that are off, so they cost nothing.
 *
 * fentry/tp_btf wrappers pass probed=false: fields are read with direct
 * loads through the typed pointer (CO-RE relocated), ~25 ns cheaper per
 * field here than bpf_probe_read_kernel; kprobe wrappers pass probed=true. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "netstacklat.h"

/* ---- settings, fixed at load ---- */
const volatile __u32 targ_netns = 0; /* netns inode number; 0: all */
const volatile bool targ_filter_ifindex = false;
const volatile bool targ_filter_cgroup = false;
const volatile __u32 targ_groupby = NSL_GROUP_NONE;
const volatile __u32 targ_min_qlen = 0;
const volatile bool targ_include_hol = true;

/* CLOCK_TAI - CLOCK_REALTIME in ns, refreshed by user space every interval:
 * skb->tstamp is REALTIME and BPF can only read TAI (or MONOTONIC). */
__s64 tai_offset_ns = 0;

/* ---- maps, named after the metric they feed ---- */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NSL_NHOOKS);
  __type(key, __u32);
  __type(value, struct nsl_hist);
} netstacklat_seconds SEC(".maps");

/* GroupBy: max_entries is set from MaxGroups before load (1 when off). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 1024);
  __type(key, struct nsl_group_key);
  __type(value, struct nsl_hist);
} netstacklat_grouped_seconds SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u32);
  __type(value, __u8);
} netstacklat_ifindex_filter SEC(".maps");

/* cgroup ids of the configured Cgroup paths and of every cgroup below them;
 * max_entries is set before load. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, __u8);
} netstacklat_cgroup_filter SEC(".maps");

/* IncludeHOLBlocked false: per TCP socket that ever received data out of
 * order, the out-of-order range seen last (see hol_blocked()). Socket
 * storage is freed with the socket; kprobe programs cannot use it, so the
 * loader refuses that flavour of tcp_socket_read with this setting. */
struct nsl_hol_range {
  __u32 ooopack; /* tcp_sock.rcv_ooopack when ooo_end was taken */
  __u32 ooo_end; /* sequence number after the highest out-of-order data */
  __u32 active;  /* reads up to ooo_end are still to come */
};

struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct nsl_hol_range);
} netstacklat_hol_range SEC(".maps");

struct udp_enqueue_args {
  const struct sock *sk;
  const struct sk_buff *skb;
};

/* kprobe twin of the udp_socket_enqueued fexit: the skb seen at entry,
 * keyed by the full pid_tgid (a per-tgid key lets two threads collide). */
/* Calls in flight: at most a few per CPU (a task and the softirq that
 * interrupts it). Preallocated, as kprobe programs on pre-6.1 kernels
 * require: keep it small (it was 94% of the default map memory). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 512);
  __type(key, __u64);
  __type(value, struct udp_enqueue_args);
} netstacklat_udp_enqueue_args SEC(".maps");

/* Kernels 5.18-6.10 flag a delivery time with this bit; 6.11 replaced it
 * with the 2-bit tstamp_type (commit 4d25ca2d6801, "net: Rename
 * mono_delivery_time to tstamp_type for scalabilty"). */
struct sk_buff___old {
  __u8 mono_delivery_time : 1;
} __attribute__((preserve_access_index));

#define RD(probed, p, ...)                                                     \
  ((probed) ? BPF_CORE_READ(p, __VA_ARGS__) : ___arrow(p, __VA_ARGS__))

/* 1 if skb->tstamp is not a receive time (a sender's EDT time carried over
 * loopback or veth), 0 otherwise. */
static __always_inline int tstamp_not_rx(const struct sk_buff *skb,
                                         const bool probed) {
  if (bpf_core_field_exists(skb->tstamp_type))
    return probed ? BPF_CORE_READ_BITFIELD_PROBED(skb, tstamp_type) != 0
                  : BPF_CORE_READ_BITFIELD(skb, tstamp_type) != 0;
  const struct sk_buff___old *o = (const void *)skb;
  if (bpf_core_field_exists(o->mono_delivery_time))
    return probed ? BPF_CORE_READ_BITFIELD_PROBED(o, mono_delivery_time)
                  : BPF_CORE_READ_BITFIELD(o, mono_delivery_time);
  return 0;
}

static __always_inline struct nsl_hist *hist_for(__u32 hook, __u64 group) {
  if (targ_groupby == NSL_GROUP_NONE)
    return bpf_map_lookup_elem(&netstacklat_seconds, &hook);
  struct nsl_group_key key = {.group = group, .hook = hook};
  struct nsl_hist *h = bpf_map_lookup_elem(&netstacklat_grouped_seconds, &key);
  if (h)
    return h;
  static const struct nsl_hist zero;
  bpf_map_update_elem(&netstacklat_grouped_seconds, &key, &zero, BPF_NOEXIST);
  h = bpf_map_lookup_elem(&netstacklat_grouped_seconds, &key);
  if (!h) {
    /* The map is full: count it on the ungrouped entry of the hook. */
    h = bpf_map_lookup_elem(&netstacklat_seconds, &hook);
    if (h)
      h->skipped[NSL_SKIP_MAP_FULL]++;
    return NULL;
  }
  return h;
}

/* An event left out for a reason counted in skipped[why]. */
static __always_inline void count_skip(__u32 hook, __u64 group, __u32 why) {
  struct nsl_hist *h = hist_for(hook, group);
  if (h)
    h->skipped[why]++;
}

/* The one handler. tstamp: the packet's receive time (0 when none);
 * not_rx: it is a delivery time; group: cgroup id or ifindex. */
static __always_inline void record(__u32 hook, __u64 tstamp, int not_rx,
                                   __u64 group) {
  struct nsl_hist *h = hist_for(hook, group);
  if (!h)
    return;
  if (!tstamp) {
    h->skipped[NSL_SKIP_NO_TSTAMP]++;
    return;
  }
  if (not_rx) {
    h->skipped[NSL_SKIP_NOT_RX]++;
    return;
  }
  __s64 delta = (__s64)(bpf_ktime_get_tai_ns() - tai_offset_ns - tstamp);
  if (delta < 0) {
    h->skipped[NSL_SKIP_FUTURE]++;
    return;
  }
  __u32 slot = nsl_slot_of(delta);
  /* nsl_slot_of() already clamps, but clang drops this check and indexes
   * with a copy of the unclamped register; 6.1's verifier then sees an
   * index up to 2^32 and rejects every program (6.12's tracks the copy).
   * The barrier keeps the check on the register that is used. */
  barrier_var(slot);
  if (slot < NSL_NBUCKETS)
    h->bucket[slot]++;
  h->sum_ns += delta;
}

/* ---- filters, cheapest first; each compiled out when off ---- */

static __always_inline bool netns_ok_sk(const struct sock *sk,
                                        const bool probed) {
  if (!targ_netns)
    return true;
  return RD(probed, sk, __sk_common.skc_net.net, ns.inum) == targ_netns;
}

static __always_inline bool netns_ok_dev(const struct sk_buff *skb,
                                         const bool probed) {
  if (!targ_netns)
    return true;
  return RD(probed, skb, dev, nd_net.net, ns.inum) == targ_netns;
}

static __always_inline bool ifindex_ok(__u32 ifindex) {
  if (!targ_filter_ifindex)
    return true;
  return bpf_map_lookup_elem(&netstacklat_ifindex_filter, &ifindex) != NULL;
}

static __always_inline __u64 sk_cgroup_id(const struct sock *sk,
                                          const bool probed) {
  return RD(probed, sk, sk_cgrp_data.cgroup, kn, id);
}

/* GroupBy interface with NetworkNamespace "all": ifindexes repeat across
 * namespaces (every one has its lo at 1), so the namespace's inode number
 * goes into the group's upper half. With one namespace it is the ifindex
 * alone, and the verifier prunes the read. */
static __always_inline __u64 if_group(__u32 ifindex, __u32 netns_inum) {
  return targ_netns ? ifindex : ((__u64)netns_inum << 32) | ifindex;
}

/* A packet seen before socket lookup (ip_start, tcp_start, udp_start). */
static __always_inline void packet_hook(__u32 hook, const struct sk_buff *skb,
                                        __u32 ifindex, const bool probed) {
  if (!netns_ok_dev(skb, probed) || !ifindex_ok(ifindex))
    return;
  __u64 group = 0;
  if (targ_groupby == NSL_GROUP_INTERFACE)
    group = if_group(ifindex, targ_netns ? 0
                                         : RD(probed, skb, dev, nd_net.net,
                                              ns.inum));
  __u64 t = RD(probed, skb, tstamp);
  record(hook, t, t ? tstamp_not_rx(skb, probed) : 0, group);
}

/* Socket-level filters; returns false to drop the event. */
static __always_inline bool socket_ok(__u32 hook, const struct sock *sk,
                                      __u32 ifindex, __u64 *group,
                                      const bool probed) {
  if (!netns_ok_sk(sk, probed) || !ifindex_ok(ifindex))
    return false;
  if (targ_min_qlen &&
      RD(probed, sk, sk_receive_queue.qlen) < targ_min_qlen)
    return false;
  __u64 cg = 0;
  if (targ_filter_cgroup || targ_groupby == NSL_GROUP_CGROUP) {
    cg = sk_cgroup_id(sk, probed);
    if (targ_filter_cgroup &&
        !bpf_map_lookup_elem(&netstacklat_cgroup_filter, &cg))
      return false;
  }
  *group = 0;
  if (targ_groupby == NSL_GROUP_CGROUP)
    *group = cg;
  else if (targ_groupby == NSL_GROUP_INTERFACE)
    *group = if_group(ifindex, targ_netns ? 0
                                          : RD(probed, sk,
                                               __sk_common.skc_net.net,
                                               ns.inum));
  return true;
}

static __always_inline void socket_skb_hook(__u32 hook, const struct sock *sk,
                                            const struct sk_buff *skb,
                                            const bool probed) {
  __u64 group;
  if (!socket_ok(hook, sk, RD(probed, skb, skb_iif), &group, probed))
    return;
  __u64 t = RD(probed, skb, tstamp);
  record(hook, t, t ? tstamp_not_rx(skb, probed) : 0, group);
}

static __always_inline bool is_proto(const struct sock *sk, __u16 proto) {
  __u16 family = sk->__sk_common.skc_family;
  return sk->sk_protocol == proto && (family == 2 /* AF_INET */ ||
                                      family == 10 /* AF_INET6 */);
}

/* Reads that waited behind a hole (data that arrived out of order and sat
 * in the out-of-order queue until a retransmission filled the hole) measure
 * the loss recovery, not the host: IncludeHOLBlocked false leaves them out.
 * By the time they are read the queue is usually empty again, so it is the
 * history that counts: the kernel's count of segments that arrived out of
 * order (tcp_sock.rcv_ooopack, 5.4+) tells that there was a hole since the
 * last read, and the end of the out-of-order data then seen bounds the
 * data that may have waited behind it (the XDP project's netstacklat does
 * the same). Only compiled in with IncludeHOLBlocked false.
 *
 * The tcp_sock fields are probe reads in every flavour: the verifier types
 * sk as struct sock, so no tcp_sock field is reachable by a direct load. */
static __always_inline __u32 ooo_end_now(const struct tcp_sock *tp) {
  __u32 rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
  /* Queue empty: everything that arrived out of order has been merged,
   * so it lies below rcv_nxt. */
  if (!BPF_CORE_READ(tp, out_of_order_queue.rb_node))
    return rcv_nxt;
  const struct sk_buff *last = BPF_CORE_READ(tp, ooo_last_skb);
  __u32 end = 0;
  bpf_core_read(&end, sizeof(end),
                &((const struct tcp_skb_cb *)&last->cb[0])->end_seq);
  /* tcp_recv_timestamp runs after release_sock(): the tail may be freed
   * under us. Keep a value only inside the receive window; the window's
   * end is a safe upper bound otherwise. */
  __u32 wnd_end = BPF_CORE_READ(tp, rcv_wup) + BPF_CORE_READ(tp, rcv_wnd);
  if ((__s32)(wnd_end - rcv_nxt) < 0)
    wnd_end = rcv_nxt;
  if ((__s32)(end - rcv_nxt) <= 0 || (__s32)(end - wnd_end) > 0)
    return wnd_end;
  return end;
}

/* read_end: the sequence number after the data whose receive time is
 * measured. True when that data lies at or below the out-of-order range
 * seen: it waited for the hole to be filled. */
static __always_inline bool hol_blocked(const struct sock *sk,
                                        __u32 read_end) {
  const struct tcp_sock *tp = (const void *)sk;
  __u32 n = BPF_CORE_READ(tp, rcv_ooopack);
  if (!n) /* never a hole on this socket: no storage either */
    return false;
  struct nsl_hol_range *r = bpf_sk_storage_get(
      &netstacklat_hol_range, (void *)sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
  if (!r) /* cannot tell: leave it out rather than count a blocked read */
    return true;
  if (r->ooopack != n) {
    /* New out-of-order data since the last read. */
    r->ooopack = n;
    r->ooo_end = ooo_end_now(tp);
    r->active = 1;
  }
  if (!r->active)
    return false;
  if ((__s32)(read_end - r->ooo_end) > 0) {
    r->active = 0; /* the reader is past the range: done until the next */
    return false;
  }
  return true;
}

/* ===================================================== ip_start */

SEC("fentry/ip_rcv_core")
int BPF_PROG(ip_start_fentry_v4, struct sk_buff *skb) {
  packet_hook(NSL_IP_START, skb, skb->dev->ifindex, false);
  return 0;
}

SEC("fentry/ip6_rcv_core")
int BPF_PROG(ip_start_fentry_v6, struct sk_buff *skb) {
  packet_hook(NSL_IP_START, skb, skb->dev->ifindex, false);
  return 0;
}

/* Fires in __netif_receive_skb_core before the protocol handler, so it
 * sees every received packet: keep only IPv4 and IPv6. skb_iif is not set
 * yet there; the device is. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(ip_start_tp, struct sk_buff *skb) {
  __be16 proto = skb->protocol;
  if (proto != bpf_htons(0x0800) && proto != bpf_htons(0x86DD))
    return 0;
  packet_hook(NSL_IP_START, skb, skb->dev->ifindex, false);
  return 0;
}

SEC("kprobe/ip_rcv_core")
int BPF_KPROBE(ip_start_kprobe_v4, struct sk_buff *skb) {
  packet_hook(NSL_IP_START, skb, BPF_CORE_READ(skb, dev, ifindex), true);
  return 0;
}

SEC("kprobe/ip6_rcv_core")
int BPF_KPROBE(ip_start_kprobe_v6, struct sk_buff *skb) {
  packet_hook(NSL_IP_START, skb, BPF_CORE_READ(skb, dev, ifindex), true);
  return 0;
}

/* ===================================================== tcp_start */

SEC("fentry/tcp_v4_rcv")
int BPF_PROG(tcp_start_fentry_v4, struct sk_buff *skb) {
  packet_hook(NSL_TCP_START, skb, skb->skb_iif, false);
  return 0;
}

SEC("fentry/tcp_v6_rcv")
int BPF_PROG(tcp_start_fentry_v6, struct sk_buff *skb) {
  packet_hook(NSL_TCP_START, skb, skb->skb_iif, false);
  return 0;
}

/* tcp_probe fires at the top of tcp_rcv_established: segments of
 * established connections only, after socket lookup (and after the socket
 * backlog when the owner held the lock). */
SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_start_tp, struct sock *sk, struct sk_buff *skb) {
  if (!netns_ok_sk(sk, false) || !ifindex_ok(skb->skb_iif))
    return 0;
  __u64 t = skb->tstamp;
  record(NSL_TCP_START, t, t ? tstamp_not_rx(skb, false) : 0,
         targ_groupby == NSL_GROUP_INTERFACE
             ? if_group(skb->skb_iif,
                        targ_netns ? 0 : sk->__sk_common.skc_net.net->ns.inum)
             : 0);
  return 0;
}

SEC("kprobe/tcp_v4_rcv")
int BPF_KPROBE(tcp_start_kprobe_v4, struct sk_buff *skb) {
  packet_hook(NSL_TCP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

SEC("kprobe/tcp_v6_rcv")
int BPF_KPROBE(tcp_start_kprobe_v6, struct sk_buff *skb) {
  packet_hook(NSL_TCP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

/* ===================================================== udp_start */

SEC("fentry/udp_rcv")
int BPF_PROG(udp_start_fentry_v4, struct sk_buff *skb) {
  packet_hook(NSL_UDP_START, skb, skb->skb_iif, false);
  return 0;
}

SEC("fentry/udpv6_rcv")
int BPF_PROG(udp_start_fentry_v6, struct sk_buff *skb) {
  packet_hook(NSL_UDP_START, skb, skb->skb_iif, false);
  return 0;
}

SEC("kprobe/udp_rcv")
int BPF_KPROBE(udp_start_kprobe_v4, struct sk_buff *skb) {
  packet_hook(NSL_UDP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

SEC("kprobe/udpv6_rcv")
int BPF_KPROBE(udp_start_kprobe_v6, struct sk_buff *skb) {
  packet_hook(NSL_UDP_START, skb, BPF_CORE_READ(skb, skb_iif), true);
  return 0;
}

/* ===================================================== tcp_socket_enqueued */

/* fexit, not fentry: the segment is on the receive queue when it returns.
 * (Upstream netstacklat left fexit/tcp_data_queue: the skb may be freed by
 * then. tcp_queue_rcv's caller frees a coalesced skb only after it returns.) */
SEC("fexit/tcp_queue_rcv")
int BPF_PROG(tcp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             bool *fragstolen, int ret) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, false);
  return 0;
}

/* The last skb on the receive queue is the one just queued (or the one it
 * was coalesced into). */
static __always_inline void enqueued_tail(__u32 hook, const struct sock *sk) {
  const struct sk_buff *skb = sk->sk_receive_queue.prev;
  if (!sk->sk_receive_queue.qlen || !skb)
    return;
  socket_skb_hook(hook, sk, skb, false);
}

/* sk_data_ready fires when a socket is told it has data: right after a
 * TCP segment or a UDP datagram was queued. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(tcp_enqueued_tp, const struct sock *sk) {
  if (is_proto(sk, 6 /* IPPROTO_TCP */))
    enqueued_tail(NSL_TCP_SOCKET_ENQUEUED, sk);
  return 0;
}

/* kprobe at entry: the skb is about to be queued (a few ns earlier than
 * the fexit point). */
SEC("kprobe/tcp_queue_rcv")
int BPF_KPROBE(tcp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, true);
  return 0;
}

/* ===================================================== udp_socket_enqueued */

SEC("fexit/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             int ret) {
  if (ret == 0)
    socket_skb_hook(NSL_UDP_SOCKET_ENQUEUED, sk, skb, false);
  return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(udp_enqueued_tp, const struct sock *sk) {
  if (is_proto(sk, 17 /* IPPROTO_UDP */))
    enqueued_tail(NSL_UDP_SOCKET_ENQUEUED, sk);
  return 0;
}

SEC("kprobe/__udp_enqueue_schedule_skb")
int BPF_KPROBE(udp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  __u64 id = bpf_get_current_pid_tgid();
  struct udp_enqueue_args a = {.sk = sk, .skb = skb};
  bpf_map_update_elem(&netstacklat_udp_enqueue_args, &id, &a, BPF_ANY);
  return 0;
}

SEC("kretprobe/__udp_enqueue_schedule_skb")
int BPF_KRETPROBE(udp_enqueued_kretprobe, int ret) {
  __u64 id = bpf_get_current_pid_tgid();
  struct udp_enqueue_args *a =
      bpf_map_lookup_elem(&netstacklat_udp_enqueue_args, &id);
  if (!a)
    return 0;
  struct udp_enqueue_args args = *a;
  bpf_map_delete_elem(&netstacklat_udp_enqueue_args, &id);
  if (ret == 0)
    socket_skb_hook(NSL_UDP_SOCKET_ENQUEUED, args.sk, args.skb, true);
  return 0;
}

/* ===================================================== tcp_socket_read */

/* tcp_recvmsg calls it once per read that returned timestamped data, with
 * the receive time of the last skb read in tss->ts[0]. No skb here: the
 * interface is the socket's cached input interface. */
static __always_inline void tcp_read(const struct sock *sk, __u64 t,
                                     const bool probed) {
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk,
                 RD(probed, sk, sk_rx_dst_ifindex), &group, probed))
    return;
  if (!targ_include_hol) {
    /* kprobe programs have no socket storage: the loader does not use
     * this flavour with IncludeHOLBlocked false. */
    if (probed)
      return;
    /* Called after the read: copied_seq is the end of the data read,
     * and the timestamp is that of the last skb read. */
    const struct tcp_sock *tp = (const void *)sk;
    if (hol_blocked(sk, BPF_CORE_READ(tp, copied_seq))) {
      count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
      return;
    }
  }
  record(NSL_TCP_SOCKET_READ, t, 0, group);
}

SEC("fentry/tcp_recv_timestamp")
int BPF_PROG(tcp_read_fentry, struct msghdr *msg, const struct sock *sk,
             struct scm_timestamping_internal *tss) {
  __u64 t = tss->ts[0].tv_sec * 1000000000ULL + tss->ts[0].tv_nsec;
  tcp_read(sk, t, false);
  return 0;
}

/* Fires for every skb (or part of one) copied to user space, by any
 * protocol: keep TCP. One read can copy several skbs, and each is counted. */
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(tcp_read_tp, const struct sk_buff *skb, int len) {
  const struct sock *sk = skb->sk;
  if (!sk || !is_proto(sk, 6))
    return 0;
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk, skb->skb_iif, &group, false))
    return 0;
  /* Before the copy, per skb: the skb's own end is the data measured. */
  if (!targ_include_hol &&
      hol_blocked(sk, ((const struct tcp_skb_cb *)&skb->cb[0])->end_seq)) {
    count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
    return 0;
  }
  __u64 t = skb->tstamp;
  record(NSL_TCP_SOCKET_READ, t, t ? tstamp_not_rx(skb, false) : 0, group);
  return 0;
}

SEC("kprobe/tcp_recv_timestamp")
int BPF_KPROBE(tcp_read_kprobe, struct msghdr *msg, const struct sock *sk,
               struct scm_timestamping_internal *tss) {
  struct timespec64 ts;
  bpf_probe_read_kernel(&ts, sizeof(ts), &tss->ts[0]);
  tcp_read(sk, ts.tv_sec * 1000000000ULL + ts.tv_nsec, true);
  return 0;
}

/* ===================================================== udp_socket_read */

SEC("fentry/skb_consume_udp")
int BPF_PROG(udp_read_fentry, struct sock *sk, struct sk_buff *skb, int len) {
  socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, false);
  return 0;
}

SEC("kprobe/skb_consume_udp")
int BPF_KPROBE(udp_read_kprobe, struct sock *sk, struct sk_buff *skb) {
  socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, true);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
