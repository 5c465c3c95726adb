// SPDX-License-Identifier: GPL-2.0
/* netstacklat: how long a received packet has waited, from its receive
 * timestamp (skb->tstamp, CLOCK_REALTIME) to a point in the network stack.
 *
 * Each hook has one handler; every attach flavour (fentry/fexit, tp_btf,
 * kprobe) is a thin wrapper that finds the skb and socket and calls it. The
 * loader (plugin/common/loader.c) keeps one flavour per hook. Filters are rodata:
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

#include "common/entry_stack.h"
#include "netstacklat/netstacklat.h"
#include "tcp_window/tcp_window.h"

/* ---- settings, fixed at load ---- */
const volatile __u32 targ_netns = 0; /* netns inode number; 0: all */
const volatile bool targ_filter_ifindex = false;
const volatile bool targ_filter_cgroup = false;
const volatile __u32 targ_groupby = NSL_GROUP_NONE;
const volatile __u32 targ_min_qlen = 0;
const volatile bool targ_include_hol = true;
/* Which enqueue hooks the one sk_data_ready program (enqueued_tp) serves:
 * those whose tracepoint flavour the loader chose. */
const volatile bool targ_tcp_enqueued_tp = true;
const volatile bool targ_udp_enqueued_tp = true;
/* SampleEvery: time one event in this many, per CPU and histogram entry;
 * count all of them. The path is compiled only into
 * sampled.bpf.c and outliers.bpf.c (NSL_SAMPLING
 * 1), loaded when it is above 1. */
#ifndef NSL_SAMPLING
#define NSL_SAMPLING 0
#endif
const volatile __u32 targ_sample_every = 1;
/* SampleEvery auto: each hook's N, in sample_n[hook], set by user space at
 * every read to keep CostBudget (1: every event timed). */
const volatile bool targ_sample_auto = false;
__u32 sample_n[NSL_NHOOKS]; /* 0 or 1: every event timed */
/* OutlierThreshold in ns; 0: off. The path is compiled only into
 * outliers.bpf.c (NSL_OUTLIERS 1), loaded when it is on. */
#ifndef NSL_OUTLIERS
#define NSL_OUTLIERS 0
#endif
const volatile __u64 targ_outlier_ns = 0;
const volatile __u64 targ_outlier_limit = 10; /* records per second */

/* The clock "now" is read from, chosen at load by probing the helper:
 * bpf_ktime_get_tai_ns() (kernel >= 6.1), else bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC). The branch not taken is pruned by the verifier, so a
 * kernel without the TAI helper never sees the call. */
const volatile bool targ_clock_tai = true;

/* CLOCK_REALTIME minus that clock, in ns: skb->tstamp is REALTIME and BPF
 * can read neither REALTIME nor its offset. User space writes it before the
 * programs attach and refreshes it every interval: with TAI it is minus the
 * TAI offset (adjtimex: 0, or 37 s on an NTP host); with MONOTONIC it is the
 * boot time in REALTIME, which moves only when the clock is stepped (NTP
 * slews both clocks alike). */
__s64 realtime_offset_ns = 0;

/* Cgroup storage (kernel >= 6.2, targ_cg_storage; user space turns the map
 * (netstacklat_cgroup_state, in filters.h) into a one-entry array on
 * older kernels and the rodata switch keeps the verifier from seeing the
 * storage path). One value per cgroup, for the Cgroup filter: see struct
 * nsl_cg_state. */
const volatile bool targ_cg_storage = false;
/* GroupBy cgroup: MaxGroups x targ_nwanted slots, the position of each hook
 * in a group's row (only hooks that are loaded), and the mask of the group
 * index (its size - 1). */
const volatile __u32 targ_nwanted = NSL_NHOOKS;
const volatile __u32 targ_hook_pos[NSL_NHOOKS] = {0, 1, 2, 3, 4, 5, 6};
const volatile __u32 targ_cg_index_mask = 0;
/* Bumped by user space whenever it marks or unmarks a configured cgroup:
 * decisions the kernel derived before are recomputed. */
__u32 cg_filter_gen = 1;

/* Cgroup filter by the socket cgroup's ancestors (targ_anc_n > 0; chosen
 * by user space for a few configured paths without globs, not with
 * GroupBy cgroup; kprobe programs keep the hash): the cgroup is in when,
 * for some k, its ancestor at level targ_anc_level[k] is cgroup
 * anc_id[k]. The levels are load-time constants, deepest first. The ids
 * are written by user space (0: the path does not exist now; no cgroup has
 * id 0), and rewritten when a path is made again. */
const volatile __u32 targ_anc_n = 0;
const volatile __u32 targ_anc_level[NSL_CG_ANC_MAX] = {0};
__u64 anc_id[NSL_CG_ANC_MAX] = {0};

/* ---- maps, named after the metric they feed ---- */
/* Those of one concern are with its code, in the headers included below;
 * these two serve one hook each. */

/* tcp_socket_read: the last read seen of a socket, in a table shared by
 * the CPUs (a reader that moves between CPUs leaves no stale copy behind)
 * indexed by the socket's hash (see tcp_peeked()); an entry per cache
 * line, so that sockets read on different CPUs do not share one. */
#define NSL_READS 256
struct nsl_read_seen {
  __u64 sk;
  __u32 seq; /* copied_seq after the read (fentry, kprobe); the end of the
              * last skb counted (tracepoint) */
  __u32 pad[13];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, NSL_READS);
  __type(key, __u32);
  __type(value, struct nsl_read_seen);
} netstacklat_reads SEC(".maps");

/* udp_socket_enqueued's entry/return pairs (fentry+fexit, kprobe+kretprobe
 * of __udp_enqueue_schedule_skb): what the entry read from the skb, while it
 * still belonged to the caller (once the function has queued it and dropped
 * the queue lock, a reader on another CPU may take and free it). */
enum { UDPQ_SK = 0, UDPQ_TSTAMP, UDPQ_IIF_NOTRX };
ESTACK_MAP(netstacklat_udp_enqueue_stack);

#define RD(probed, p, ...)                                                     \
  ((probed) ? BPF_CORE_READ(p, __VA_ARGS__) : ___arrow(p, __VA_ARGS__))

/* The input interface of the socket's cached route. Kernels before 5.16
 * keep it in inet_sock (commit 0c0a5ef809f9, "tcp: move inet->rx_dst_ifindex
 * to sk->sk_rx_dst_ifindex"); there a probe read is needed in every flavour,
 * as the verifier types sk as struct sock. */
struct inet_sock___old {
  int rx_dst_ifindex;
} __attribute__((preserve_access_index));

static __always_inline __u32 sk_rx_ifindex(const struct sock *sk,
                                           const bool probed) {
  if (bpf_core_field_exists(sk->sk_rx_dst_ifindex))
    return RD(probed, sk, sk_rx_dst_ifindex);
  const struct inet_sock___old *inet = (const void *)sk;
  return BPF_CORE_READ(inet, rx_dst_ifindex);
}

/* The parts of the handlers, one concern per header, each after the
 * settings and helpers above that it uses: the OutlierThreshold records,
 * the histograms and record(), the filters and the packet and socket
 * handlers, and the head-of-line tracking of IncludeHOLBlocked false. */
#include "netstacklat/outlier.h"
#include "netstacklat/record.h"
#include "netstacklat/filters.h"
#include "netstacklat/hol.h"

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
 * yet there; the device is.
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
  if (proto != bpf_htons(0x0800) && proto != bpf_htons(0x86DD))
    return 0;
  const struct net_device *dev = skb->dev;
  if (BPF_CORE_READ_BITFIELD(dev, priv_flags) &
      (bpf_core_enum_value(enum netdev_priv_flags, IFF_BRIDGE_PORT) |
       bpf_core_enum_value(enum netdev_priv_flags, IFF_OVS_DATAPATH)))
    return 0;
  packet_hook(NSL_IP_START, skb, dev->ifindex, false);
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
  if (!netns_ok_sk(sk, false) || !ifindex_ok_sk(sk, skb->skb_iif, false))
    return 0;
  __u64 t = skb->tstamp;
  record(NSL_TCP_START, t, t ? tstamp_not_rx(skb, false) : 0,
         targ_groupby == NSL_GROUP_INTERFACE
             ? if_group(skb->skb_iif,
                        targ_netns ? 0 : sk->__sk_common.skc_net.net->ns.inum)
             : 0,
         sk, skb, 0);
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

/* tcp_socket_read with IncludeHOLBlocked false: the out-of-order arrivals
 * (hol_arrival()), in the flavour of the read program. */
SEC("fentry/tcp_rcv_established")
int BPF_PROG(hol_arrival_fentry, struct sock *sk, struct sk_buff *skb) {
  if (!targ_include_hol)
    hol_arrival(sk, skb);
  return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(hol_arrival_tp, struct sock *sk, struct sk_buff *skb) {
  if (!targ_include_hol)
    hol_arrival(sk, skb);
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

/* tcp_window's stalled receivers by marked sockets (bpf/tcp_window/tcp_window.h): each
 * TCP socket given data is announced once per epoch on a ring buffer, so
 * that tcp_window asks about those sockets only instead of walking every
 * socket. Set by user space (netstacklat_serve_stalled()): tcpw_epoch, 0
 * while off; tcpw_mark_netns, the namespace tcp_window scans (0: all). */
__u32 tcpw_epoch = 0;
__u32 tcpw_mark_netns = 0;
__u64 tcpw_marks_lost = 0; /* the ring buffer was full: a rescan is due */

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, TCPW_MARK_SLOTS);
  __type(key, __u32);
  __type(value, struct tcpw_mark_slot);
} netstacklat_tcpw_slots SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, TCPW_MARK_RB_BYTES);
} netstacklat_tcpw_marks SEC(".maps");

/* The socket is remembered in its hash's slot with the epoch; the slot's
 * line is the only one an event touches beyond what the program reads
 * anyway, until the socket is announced (once per epoch). A listener's
 * data_ready is a new connection, not data. */
static __always_inline void tcpw_mark(const struct sock *sk, __u32 epoch,
                                      const bool probed) {
  if (RD(probed, sk, __sk_common.skc_state) == TCP_LISTEN)
    return;
  __u32 ns = tcpw_mark_netns;
  if (ns && RD(probed, sk, __sk_common.skc_net.net, ns.inum) != ns)
    return;
  __u32 h = RD(probed, sk, __sk_common.skc_hash);
  __u32 k = (h ^ (h >> 16)) & (TCPW_MARK_SLOTS - 1);
  struct tcpw_mark_slot *slot = bpf_map_lookup_elem(&netstacklat_tcpw_slots, &k);
  __u64 id = (__u64)(unsigned long)sk;
  if (!slot || (slot->sk == id && slot->epoch == epoch))
    return;
  struct tcpw_mark_rec *r =
      bpf_ringbuf_reserve(&netstacklat_tcpw_marks, sizeof(*r), 0);
  if (!r) {
    /* Not remembered: the socket's next event tries again. */
    __sync_fetch_and_add(&tcpw_marks_lost, 1);
    return;
  }
  slot->sk = id;
  slot->epoch = epoch;
  __u16 family = RD(probed, sk, __sk_common.skc_family);
  __builtin_memset(r, 0, sizeof(*r));
  r->family = (__u8)family;
  r->sport = RD(probed, sk, __sk_common.skc_num);
  r->dport = bpf_ntohs(RD(probed, sk, __sk_common.skc_dport));
  if (family == 2 /* AF_INET */) {
    bpf_core_read(r->src, 4, &sk->__sk_common.skc_rcv_saddr);
    bpf_core_read(r->dst, 4, &sk->__sk_common.skc_daddr);
  } else {
    bpf_core_read(r->src, 16, &sk->__sk_common.skc_v6_rcv_saddr);
    bpf_core_read(r->dst, 16, &sk->__sk_common.skc_v6_daddr);
  }
  bpf_ringbuf_submit(r, 0);
}

/* ===================================================== tcp_socket_enqueued */

/* fexit, not fentry: the segment is on the receive queue when it returns.
 * (Upstream netstacklat left fexit/tcp_data_queue: the skb may be freed by
 * then. tcp_queue_rcv's caller frees a coalesced skb only after it returns.) */
SEC("fexit/tcp_queue_rcv")
int BPF_PROG(tcp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             bool *fragstolen, int ret) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, false);
  __u32 epoch = tcpw_epoch;
  if (epoch)
    tcpw_mark(sk, epoch, false);
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

/* kprobe at entry: the skb is about to be queued (a few ns earlier than
 * the fexit point). */
SEC("kprobe/tcp_queue_rcv")
int BPF_KPROBE(tcp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, true);
  __u32 epoch = tcpw_epoch;
  if (epoch)
    tcpw_mark(sk, epoch, true);
  return 0;
}

/* ===================================================== udp_socket_enqueued */

/* Entry of __udp_enqueue_schedule_skb (fentry or kprobe): save the skb's
 * receive time, kind and input interface while the skb is still owned, and
 * the socket (held by the caller until after the return). Pushed for every
 * call, so that returns pop their own frame. */
static __always_inline void udp_enqueue_entry(const struct sock *sk,
                                              const struct sk_buff *skb,
                                              const bool probed) {
  struct estack_frame *f = estack_push(&netstacklat_udp_enqueue_stack, probed);
  if (!f)
    return;
  __u64 t = RD(probed, skb, tstamp);
  __u64 not_rx = t ? tstamp_not_rx(skb, probed) : 0;
  f->arg[UDPQ_SK] = (__u64)sk;
  f->arg[UDPQ_TSTAMP] = t;
  f->arg[UDPQ_IIF_NOTRX] = (__u64)RD(probed, skb, skb_iif) | not_rx << 32;
}

/* Return: ret 0 means queued. The skb is not touched here. sk: the
 * fexit's typed argument; the kretprobe has none and uses the one saved at
 * entry (an untyped value, read with probes). (From 6.18, "udp: remove
 * busylock and add per NUMA queues", a call that only added the skb to the
 * per-NUMA list returns 0, and the skb can still be dropped when another CPU
 * moves the list to the queue under memory pressure: such a datagram is
 * counted though it was dropped.) */
static __always_inline void udp_enqueue_return(int ret, const struct sock *sk,
                                               const bool probed) {
  struct estack_frame f;
  if (!estack_pop(&netstacklat_udp_enqueue_stack, &f, probed) || ret != 0)
    return;
  if (probed)
    sk = (const void *)f.arg[UDPQ_SK];
  __u64 group;
  if (!socket_ok(NSL_UDP_SOCKET_ENQUEUED, sk, (__u32)f.arg[UDPQ_IIF_NOTRX],
                 &group, probed))
    return;
  record(NSL_UDP_SOCKET_ENQUEUED, f.arg[UDPQ_TSTAMP],
         f.arg[UDPQ_IIF_NOTRX] >> 32, group, sk, NULL,
         (__u32)f.arg[UDPQ_IIF_NOTRX]);
}

SEC("fentry/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fentry, struct sock *sk, struct sk_buff *skb) {
  udp_enqueue_entry(sk, skb, false);
  return 0;
}

SEC("fexit/__udp_enqueue_schedule_skb")
int BPF_PROG(udp_enqueued_fexit, struct sock *sk, struct sk_buff *skb,
             int ret) {
  udp_enqueue_return(ret, sk, false);
  return 0;
}

/* sk_data_ready runs after __udp_enqueue_schedule_skb has queued the
 * datagram and released the queue lock (6.3 to 6.17: one call per
 * datagram; 6.18: the CPU that moves the per-NUMA list to the queue calls
 * it once per datagram moved). The skb is no longer ours: a reader on
 * another CPU may already have taken and freed it, or another datagram may
 * have been queued behind it. So: read the queue's tail, read its fields,
 * and read the tail again; if the queue was empty or the tail changed, what
 * was read may belong to a freed skb, and the event is counted as
 * skipped-raced instead of measured. Loads through the typed pointers
 * cannot fault (a freed skb reads as garbage, never a crash). Remaining
 * window: the skb freed and its memory queued again as the same socket's
 * tail between the two reads (the ABA case), and on weakly ordered CPUs
 * (arm64) the loads are not ordered (BPF has no read barrier). With several
 * datagrams queued at once (6.18 batches, or producers on two CPUs) each
 * event measures the newest datagram on the queue. */
static __always_inline void udp_enqueued_tail(const struct sock *sk) {
  const struct sk_buff_head *q = &sk->sk_receive_queue;
  const struct sk_buff *skb = q->prev;
  bool raced = (unsigned long)skb == (unsigned long)q || !skb;
  __u64 t = 0, not_rx = 0;
  __u32 iif = 0;
  if (!raced) {
    t = skb->tstamp;
    not_rx = t ? tstamp_not_rx(skb, false) : 0;
    iif = skb->skb_iif;
    asm volatile("" ::: "memory"); /* load q->prev again, after the fields */
    raced = q->prev != skb;
  }
  if (raced) {
    /* The datagram's interface is unknown: with an Interface filter or
     * GroupBy interface it cannot be attributed, so it is not counted. */
    if (targ_filter_ifindex || targ_groupby == NSL_GROUP_INTERFACE)
      return;
    __u64 group;
    if (!socket_ok(NSL_UDP_SOCKET_ENQUEUED, sk, 0, &group, false))
      return;
    struct nsl_hist *h = hist_for(NSL_UDP_SOCKET_ENQUEUED, group);
    if (h)
      h->skipped[NSL_SKIP_RACED]++;
    return;
  }
  __u64 group;
  if (!socket_ok(NSL_UDP_SOCKET_ENQUEUED, sk, iif, &group, false))
    return;
  record(NSL_UDP_SOCKET_ENQUEUED, t, not_rx, group, sk, NULL, iif);
}

/* tcp_window's clamped wakeups, counted here when tcp_window's clamps
 * hook runs in the tracepoint flavour too: one program on sk_data_ready
 * instead of two, so a packet pays one program entry there (issue 23).
 * User space (plugin/netstacklat/netstacklat.c, netstacklat_serve_tcp_window()) sets
 * these after load, once tcp_window has chosen that flavour; 0: off, and
 * tcp_window's own program (bpf/tcp_window/tcp_window.bpf.c, the same logic) runs
 * instead. tcpw_netns: the namespace tcp_window counts (0: all). */
__u32 tcpw_threshold = 0;
__u32 tcpw_netns = 0;

/* tcp_window/operations-clamped_wakeups, when served here. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} netstacklat_tcpw_wakeups SEC(".maps");

static __always_inline void tcpw_wakeup(const struct sock *sk,
                                        __u32 threshold) {
  /* A listener's data_ready is a new connection, not data. */
  if (sk->__sk_common.skc_state == TCP_LISTEN)
    return;
  __u32 ns = tcpw_netns;
  if (ns && sk->__sk_common.skc_net.net->ns.inum != ns)
    return;
  struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
  if (!tp || tp->rcv_ssthresh >= threshold)
    return;
  __u32 zero = 0;
  __u64 *v = bpf_map_lookup_elem(&netstacklat_tcpw_wakeups, &zero);
  if (v)
    *v += 1; /* per-CPU slot: no atomic needed */
}

/* sk_data_ready fires when a socket is told it has data: right after a
 * TCP segment or a UDP datagram was queued. One program serves both
 * enqueue hooks, so the tracepoint's entry and the socket's protocol and
 * family loads are paid once per event; the loader keeps it when either
 * hook chose the tracepoint flavour, and the plugin sets which of the two
 * it serves (targ_*_enqueued_tp: the other's path is pruned). */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(enqueued_tp, const struct sock *sk) {
  /* Each setting tested on its own branch, before the protocol: the
   * verifier then drops the path of a hook not served. */
  __u16 proto = sk->sk_protocol;
  if (targ_tcp_enqueued_tp && proto == 6 /* IPPROTO_TCP */) {
    if (is_inet(sk))
      enqueued_tail(NSL_TCP_SOCKET_ENQUEUED, sk);
    __u32 threshold = tcpw_threshold;
    if (threshold)
      tcpw_wakeup(sk, threshold);
    __u32 epoch = tcpw_epoch;
    if (epoch)
      tcpw_mark(sk, epoch, false);
  } else if (targ_udp_enqueued_tp && proto == 17 /* IPPROTO_UDP */) {
    if (is_inet(sk))
      udp_enqueued_tail(sk);
  }
  return 0;
}

SEC("kprobe/__udp_enqueue_schedule_skb")
int BPF_KPROBE(udp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  udp_enqueue_entry(sk, skb, true);
  return 0;
}

SEC("kretprobe/__udp_enqueue_schedule_skb")
int BPF_KRETPROBE(udp_enqueued_kretprobe, int ret) {
  udp_enqueue_return(ret, NULL, true);
  return 0;
}

/* ===================================================== tcp_socket_read */

/* A recv(MSG_PEEK) is not a read: tcp_recvmsg calls tcp_recv_timestamp
 * (and copies skbs) for a peek as for a read, and gives no sign of the
 * flag. What tells them apart is the socket's copied_seq, which only a read
 * moves: after a read it is past the data read, after a peek where it was.
 * The last read seen of each socket is kept, in netstacklat_reads indexed
 * by the socket's skc_hash (no arithmetic on a pointer passes the
 * verifier): a call that finds copied_seq where the last one left it
 * consumed nothing. When the socket is not in the table (its first read,
 * or a slot another socket took), a socket that never had data consumed
 * (copied_seq still at the start of the stream: rcv_nxt - bytes_received)
 * was only peeked at. */
static __always_inline struct nsl_read_seen *read_seen(const struct sock *sk,
                                                       const bool probed) {
  __u32 h = RD(probed, sk, __sk_common.skc_hash);
  __u32 k = (h ^ (h >> 16)) & (NSL_READS - 1);
  return bpf_map_lookup_elem(&netstacklat_reads, &k);
}

static __always_inline bool never_consumed(const struct tcp_sock *tp,
                                           __u32 copied) {
  __u32 start = BPF_CORE_READ(tp, rcv_nxt) -
                (__u32)BPF_CORE_READ(tp, bytes_received);
  return copied == start;
}

/* fentry, kprobe: called after the read, copied its copied_seq; true for
 * a peek. */
static __always_inline bool tcp_peeked(const struct sock *sk, __u32 copied,
                                       const bool probed) {
  const struct tcp_sock *tp = (const void *)sk;
  struct nsl_read_seen *r = read_seen(sk, probed);
  if (!r)
    return false;
  if (r->sk == (__u64)sk) {
    if (r->seq == copied)
      return true;
  } else if (never_consumed(tp, copied)) {
    return true;
  }
  r->sk = (__u64)sk;
  r->seq = copied;
  return false;
}

/* tracepoint: called before each skb's copy, for a read and for a peek
 * alike (copied_seq has not moved yet in either): count each skb once, at
 * its first copy, so that a peek and the read after it (or a read of an
 * skb in two parts) count it once. True when the skb was counted. */
static __always_inline bool tcp_skb_seen(const struct sock *sk, __u32 end) {
  struct nsl_read_seen *r = read_seen(sk, false);
  if (!r)
    return false;
  if (r->sk == (__u64)sk && (__s32)(end - r->seq) <= 0)
    return true;
  r->sk = (__u64)sk;
  r->seq = end;
  return false;
}

/* tcp_recvmsg calls it once per read that returned timestamped data, with
 * the receive time of the last skb read in tss->ts[0]. No skb here: the
 * interface is the socket's cached input interface. */
static __always_inline void tcp_read(const struct sock *sk, __u64 t,
                                     const bool probed) {
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk,
                 sk_rx_ifindex(sk, probed), &group, probed))
    return;
  /* Called after the read: copied_seq is the end of the data read, and
   * the timestamp is that of the last skb read. */
  const struct tcp_sock *tp = (const void *)sk;
  __u32 copied = BPF_CORE_READ(tp, copied_seq);
  if (tcp_peeked(sk, copied, probed))
    return;
  if (!targ_include_hol) {
    /* kprobe programs have no socket storage: the loader does not use
     * this flavour with IncludeHOLBlocked false. */
    if (probed)
      return;
    if (hol_blocked(sk, copied)) {
      count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
      return;
    }
  }
  record(NSL_TCP_SOCKET_READ, t, 0, group, sk, NULL, 0);
}

/* The receive time in tss->ts[0]: a struct timespec64 in the kernels of
 * Debian 11 to 13, a ktime_t (nanoseconds, CLOCK_REALTIME like skb->tstamp)
 * in newer ones (seen in trixie-backports' 7.3: the struct is 24 bytes
 * there). CO-RE picks the layout at load: the other branch's relocation
 * fails and the verifier drops it as dead code. */
struct scm_timestamping_internal___ktime {
  ktime_t ts[3];
} __attribute__((preserve_access_index));

static __always_inline __u64 tss_ns(struct scm_timestamping_internal *tss) {
  if (bpf_core_field_exists(tss->ts[0].tv_nsec))
    return tss->ts[0].tv_sec * 1000000000ULL + tss->ts[0].tv_nsec;
  return ((struct scm_timestamping_internal___ktime *)tss)->ts[0];
}

static __always_inline __u64 tss_ns_probed(struct scm_timestamping_internal *tss) {
  if (bpf_core_field_exists(tss->ts[0].tv_nsec)) {
    struct timespec64 ts;
    bpf_probe_read_kernel(&ts, sizeof(ts), &tss->ts[0]);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
  }
  return BPF_CORE_READ((struct scm_timestamping_internal___ktime *)tss, ts[0]);
}

SEC("fentry/tcp_recv_timestamp")
int BPF_PROG(tcp_read_fentry, struct msghdr *msg, const struct sock *sk,
             struct scm_timestamping_internal *tss) {
  tcp_read(sk, tss_ns(tss), false);
  return 0;
}

/* Fires for every skb (or part of one) copied to user space, by any
 * protocol: keep TCP. One read can copy several skbs, and each is counted,
 * once (tcp_skb_seen()). */
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(tcp_read_tp, const struct sk_buff *skb, int len) {
  const struct sock *sk = skb->sk;
  if (!sk || !is_proto(sk, 6))
    return 0;
  __u64 group;
  if (!socket_ok(NSL_TCP_SOCKET_READ, sk, skb->skb_iif, &group, false))
    return 0;
  __u32 end = ((const struct tcp_skb_cb *)&skb->cb[0])->end_seq;
  if (tcp_skb_seen(sk, end))
    return 0;
  /* Before the copy, per skb: the skb's own end is the data measured. */
  if (!targ_include_hol && hol_blocked(sk, end)) {
    count_skip(NSL_TCP_SOCKET_READ, group, NSL_SKIP_HOL_BLOCKED);
    return 0;
  }
  __u64 t = skb->tstamp;
  record(NSL_TCP_SOCKET_READ, t, t ? tstamp_not_rx(skb, false) : 0, group,
         sk, skb, 0);
  return 0;
}

SEC("kprobe/tcp_recv_timestamp")
int BPF_KPROBE(tcp_read_kprobe, struct msghdr *msg, const struct sock *sk,
               struct scm_timestamping_internal *tss) {
  tcp_read(sk, tss_ns_probed(tss), true);
  return 0;
}

/* ===================================================== udp_socket_read */

/* udp_recvmsg and udpv6_recvmsg call it for reads and for recv(MSG_PEEK)
 * alike, with len the bytes copied, negated for a peek (every kernel since
 * 4.13: "peeking ? -err : err"). A peek is not a read: the datagram stays
 * queued and its read comes later (systemd peeks to size its buffer). */
SEC("fentry/skb_consume_udp")
int BPF_PROG(udp_read_fentry, struct sock *sk, struct sk_buff *skb, int len) {
  if (len < 0)
    return 0;
  socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, false);
  return 0;
}

SEC("kprobe/skb_consume_udp")
int BPF_KPROBE(udp_read_kprobe, struct sock *sk, struct sk_buff *skb, int len) {
  if (len < 0)
    return 0;
  socket_skb_hook(NSL_UDP_SOCKET_READ, sk, skb, true);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
