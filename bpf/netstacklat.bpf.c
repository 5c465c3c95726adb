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

#include "entry_stack.h"
#include "netstacklat.h"

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
 * netstacklat_sampled.bpf.c and netstacklat_outliers.bpf.c (NSL_SAMPLING
 * 1), loaded when it is above 1. */
#ifndef NSL_SAMPLING
#define NSL_SAMPLING 0
#endif
const volatile __u32 targ_sample_every = 1;
/* OutlierThreshold in ns; 0: off. The path is compiled only into
 * netstacklat_outliers.bpf.c (NSL_OUTLIERS 1), loaded when it is on. */
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

/* The Interface option's interfaces: key ifindex, or with NetworkNamespace
 * "all" (netns inode << 32 | ifindex), since every namespace numbers its
 * interfaces from 1. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u64);
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

/* Cgroup storage (kernel >= 6.2, targ_cg_storage; user space turns the map
 * into a one-entry array on older kernels and the rodata switch keeps the
 * verifier from seeing the storage path). One value per cgroup, for the
 * Cgroup filter: see struct nsl_cg_state. */
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

struct {
  __uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct nsl_cg_state);
} netstacklat_cgroup_state SEC(".maps");

/* GroupBy cgroup: the group index, a direct-mapped table from cgroup id to
 * slot (struct nsl_cg_index), written by user space when it gives a slot
 * and cleared when it frees it. A cgroup is at nsl_cg_index_pos() or the
 * position after; one without an entry goes to the group table. A plain
 * array: the verifier inlines its lookups, so finding a group costs no
 * helper call, on every kernel and flavour. max_entries (a power of two) is
 * set before load (1 when unused). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nsl_cg_index);
} netstacklat_cgroup_index SEC(".maps");

/* GroupBy cgroup: the histograms of the groups that have a slot, at
 * slot * targ_nwanted + targ_hook_pos[hook]; owner is the
 * cgroup id the slot belongs to (written by user space with the slot), so
 * a socket that outlives its cgroup never counts into a slot given to
 * another. max_entries is set before load (1 when unused). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nsl_slot_hist);
} netstacklat_cgroup_slots SEC(".maps");

/* IncludeHOLBlocked false: per TCP socket that ever received data out of
 * order, the sequence ranges of that data (see hol_arrival()). Two ranges:
 * a lagging reader may still have one hole's data to read when the next
 * hole opens. Socket storage is freed with the socket; kprobe programs
 * cannot use it, so the loader refuses that flavour of tcp_socket_read
 * with this setting. */
struct nsl_hol_range {
  __u32 start[2]; /* the lowest sequence number that arrived out of order */
  __u32 end[2];   /* the sequence number after the highest */
  __u8 active[2]; /* reads of this range are still to come */
  __u8 cur;       /* the range of the newest hole */
};

struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct nsl_hol_range);
} netstacklat_hol_range SEC(".maps");

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

/* OutlierThreshold: the records (64 KiB; one page when off, set before
 * load), the host-wide rate limit, and the events above the threshold that
 * were not sent (over OutlierLimit, or the ring buffer full). */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 * 1024);
} netstacklat_outliers SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nsl_outlier_rate);
} netstacklat_outlier_rate SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} netstacklat_outliers_suppressed SEC(".maps");

/* udp_socket_enqueued's entry/return pairs (fentry+fexit, kprobe+kretprobe
 * of __udp_enqueue_schedule_skb): what the entry read from the skb, while it
 * still belonged to the caller (once the function has queued it and dropped
 * the queue lock, a reader on another CPU may take and free it). */
enum { UDPQ_SK = 0, UDPQ_TSTAMP, UDPQ_IIF_NOTRX };
ESTACK_MAP(netstacklat_udp_enqueue_stack);

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
  if (targ_groupby == NSL_GROUP_CGROUP && (group >> NSL_SLOT_SHIFT)) {
    /* A slot (see nsl_cg_group()): the array, if the slot is still the
     * cgroup's; else the hash, as before the slot was given. */
    __u32 slot = (__u32)(group >> NSL_SLOT_SHIFT) - 1;
    group &= NSL_SLOT_ID_MASK;
    __u32 i = slot * targ_nwanted + targ_hook_pos[hook];
    struct nsl_slot_hist *v =
        bpf_map_lookup_elem(&netstacklat_cgroup_slots, &i);
    if (v && v->owner == group)
      return &v->h;
  }
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

/* The packet's addresses from its IP header, and its ports when the
 * header that follows is TCP or UDP and lies in the linear data (else
 * has_ports stays 0). ip_start runs before the network header is set:
 * there the IP header is at skb->data; tcp_start and udp_start run after. */
static __always_inline void outlier_skb(struct nsl_outlier *o, __u32 hook,
                                        const struct sk_buff *skb) {
  unsigned char *head = BPF_CORE_READ(skb, head);
  __u32 nh = hook == NSL_IP_START
                 ? (__u32)(BPF_CORE_READ(skb, data) - head)
                 : BPF_CORE_READ(skb, network_header);
  __u32 tail = BPF_CORE_READ(skb, tail), l4;
  __u8 v = 0;
  if (nh + 40 > tail)
    return;
  bpf_probe_read_kernel(&v, 1, head + nh);
  if (v >> 4 == 4) {
    struct iphdr ip;
    bpf_probe_read_kernel(&ip, sizeof(ip), head + nh);
    o->family = 2; /* AF_INET */
    o->proto = ip.protocol;
    __builtin_memcpy(o->laddr, &ip.daddr, 4);
    __builtin_memcpy(o->raddr, &ip.saddr, 4);
    l4 = nh + ip.ihl * 4;
  } else if (v >> 4 == 6) {
    struct ipv6hdr ip6;
    bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh);
    o->family = 10; /* AF_INET6 */
    o->proto = ip6.nexthdr; /* TCP/UDP right after the fixed header only */
    __builtin_memcpy(o->laddr, &ip6.daddr, 16);
    __builtin_memcpy(o->raddr, &ip6.saddr, 16);
    l4 = nh + 40;
  } else
    return;
  __be16 ports[2];
  if ((o->proto == 6 || o->proto == 17) && l4 + 4 <= tail &&
      bpf_probe_read_kernel(ports, sizeof(ports), head + l4) == 0) {
    o->rport = bpf_ntohs(ports[0]);
    o->lport = bpf_ntohs(ports[1]);
    o->has_ports = 1;
  }
}

/* One event above OutlierThreshold: a record to user space, if this
 * second's OutlierLimit is not used up and the ring buffer has room; else
 * it is counted as suppressed. Reads are probe reads in every flavour:
 * this runs for a few events a second, not per packet. sk: the socket of
 * a socket hook (addresses, queue, cgroup, namespace); skb: the packet,
 * when it is safe to read here: it gives the addresses of packet hooks and
 * of udp_socket_read (an unconnected socket has no remote), and the
 * interface. iif: the interface where neither does (0: none known).
 * Arguments, not values read by the caller: with the path off nothing is
 * read for it. */
static __always_inline void outlier(__u32 hook, __u64 now, __u64 delta,
                                    const struct sock *sk,
                                    const struct sk_buff *skb,
                                    __u32 ifindex) {
  __u32 zero = 0;
  struct nsl_outlier_rate *r =
      bpf_map_lookup_elem(&netstacklat_outlier_rate, &zero);
  if (!r)
    return;
  /* A new second starts the count again. Two CPUs crossing into it at
   * once may both reset it: then a few more than the limit pass. */
  __u64 sec = now / 1000000000ULL;
  if (r->sec != sec) {
    r->sec = sec;
    r->count = 0;
  }
  __sync_fetch_and_add(&r->count, 1); /* no fetch: 5.10 has none */
  struct nsl_outlier *o = NULL;
  if (r->count <= targ_outlier_limit)
    o = bpf_ringbuf_reserve(&netstacklat_outliers, sizeof(*o), 0);
  if (!o) {
    __u64 *n = bpf_map_lookup_elem(&netstacklat_outliers_suppressed, &zero);
    if (n)
      (*n)++;
    return;
  }
  __builtin_memset(o, 0, sizeof(*o));
  o->time_ns = now + realtime_offset_ns;
  o->latency_ns = delta;
  o->hook = hook;
  if (ifindex)
    o->ifindex = ifindex;
  else if (skb)
    o->ifindex = hook == NSL_IP_START ? BPF_CORE_READ(skb, dev, ifindex)
                                      : BPF_CORE_READ(skb, skb_iif);
  else if (sk && hook == NSL_TCP_SOCKET_READ)
    o->ifindex = sk_rx_ifindex(sk, true);
  bool from_skb = skb && (!sk || hook == NSL_UDP_SOCKET_READ);
  if (from_skb)
    outlier_skb(o, hook, skb);
  if (sk && !from_skb) {
    __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
    o->family = family;
    o->proto = (__u8)BPF_CORE_READ(sk, sk_protocol);
    o->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
    o->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
    o->has_ports = 1;
    if (family == 2) {
      bpf_core_read(o->laddr, 4, &sk->__sk_common.skc_rcv_saddr);
      bpf_core_read(o->raddr, 4, &sk->__sk_common.skc_daddr);
    } else {
      bpf_core_read(o->laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
      bpf_core_read(o->raddr, 16, &sk->__sk_common.skc_v6_daddr);
    }
  }
  if (sk) {
    o->qlen = BPF_CORE_READ(sk, sk_receive_queue.qlen);
    o->cgroup = BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
    o->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  } else if (skb)
    o->netns = BPF_CORE_READ(skb, dev, nd_net.net, ns.inum);
  /* Socket reads run in the reader's context: name it. */
  if (hook == NSL_TCP_SOCKET_READ || hook == NSL_UDP_SOCKET_READ) {
    o->pid = bpf_get_current_pid_tgid() >> 32;
    bpf_get_current_comm(o->comm, sizeof(o->comm));
  }
  bpf_ringbuf_submit(o, 0);
}

/* The one handler. tstamp: the packet's receive time (0 when none);
 * not_rx: it is a delivery time; group: cgroup id or ifindex. sk (socket
 * hooks) or skb (packet hooks) and ifindex describe an outlier. */
static __always_inline void record(__u32 hook, __u64 tstamp, int not_rx,
                                   __u64 group, const struct sock *sk,
                                   const struct sk_buff *skb,
                                   __u32 ifindex) {
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
  h->count++;
  /* SampleEvery N: one event in N timed on average, the others only
   * counted: no clock read for them. A countdown in the CPU's own entry
   * (no atomics); after each timed event the next gap is drawn at random,
   * uniform in [0, 2N - 2] (mean N - 1), by a multiply and shift (no
   * division). A fixed countdown of N - 1 fell in step with workloads that
   * alternate: a proxy reading a client and a backend socket in turn on
   * one CPU had, with N even, only one of them ever timed. */
  if (NSL_SAMPLING && targ_sample_every > 1) {
    if (h->countdown) {
      h->countdown--;
      return;
    }
    h->countdown = ((__u64)bpf_get_prandom_u32() *
                    (2 * (__u64)targ_sample_every - 1)) >> 32;
  }
  __u64 now = targ_clock_tai ? bpf_ktime_get_tai_ns() : bpf_ktime_get_ns();
  __s64 delta = (__s64)(now + realtime_offset_ns - tstamp);
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
  if (NSL_OUTLIERS && targ_outlier_ns && (__u64)delta > targ_outlier_ns)
    outlier(hook, now, delta, sk, skb, ifindex);
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

static __always_inline bool ifindex_in(__u32 ifindex, __u32 netns_inum) {
  __u64 key = targ_netns ? ifindex : ((__u64)netns_inum << 32) | ifindex;
  return bpf_map_lookup_elem(&netstacklat_ifindex_filter, &key) != NULL;
}

/* The Interface filter, on the device's (or the socket's) namespace: only
 * with NetworkNamespace "all" is the namespace read (one namespace is
 * checked by netns_ok_*, and the verifier prunes the read). */
static __always_inline bool ifindex_ok_dev(const struct sk_buff *skb,
                                           __u32 ifindex, const bool probed) {
  if (!targ_filter_ifindex)
    return true;
  return ifindex_in(ifindex, targ_netns ? 0
                                        : RD(probed, skb, dev, nd_net.net,
                                             ns.inum));
}

static __always_inline bool ifindex_ok_sk(const struct sock *sk,
                                          __u32 ifindex, const bool probed) {
  if (!targ_filter_ifindex)
    return true;
  return ifindex_in(ifindex,
                    targ_netns ? 0
                               : RD(probed, sk, __sk_common.skc_net.net,
                                    ns.inum));
}

static __always_inline __u64 sk_cgroup_id(const struct sock *sk,
                                          const bool probed) {
  return RD(probed, sk, sk_cgrp_data.cgroup, kn, id);
}

/* Cgroup filter with cgroup storage: is the cgroup at or below a
 * configured one? st: its storage (NULL: none yet). A configured cgroup is
 * marked by user space; any other keeps the decision derived here, valid
 * while cg_filter_gen has not moved. Without one, walk up the ancestors to
 * the first that is marked or has a valid decision, and keep the result:
 * a cgroup made after start is decided on its first event, and later
 * events cost the one lookup. Deeper than NSL_CG_MAXWALK levels below any
 * decided cgroup, the event is left out and nothing is kept. (kprobe
 * programs cannot use cgroup storage: they keep the hash.) */
static __always_inline bool cg_storage_in(struct cgroup *cgrp,
                                          struct nsl_cg_state *st) {
  __u32 gen = cg_filter_gen;
  if (st && st->mark)
    return true;
  if (st && st->gen == gen)
    return st->in;
  struct cgroup *a = cgrp;
  __u32 in = 0, found = 0;
  for (int i = 0; i < NSL_CG_MAXWALK; i++) {
    struct cgroup_subsys_state *p = a->self.parent;
    if (!p) { /* the root, never configured: out */
      found = 1;
      break;
    }
    a = p->cgroup;
    struct nsl_cg_state *t =
        bpf_cgrp_storage_get(&netstacklat_cgroup_state, a, 0, 0);
    if (t && t->mark) {
      in = found = 1;
      break;
    }
    if (t && t->gen == gen) {
      in = t->in;
      found = 1;
      break;
    }
  }
  if (!found)
    return false;
  if (!st)
    st = bpf_cgrp_storage_get(&netstacklat_cgroup_state, cgrp, 0,
                              BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (st) {
    st->in = in;
    st->gen = gen;
  }
  return in;
}

/* Cgroup filter by ancestors: see targ_anc_n. The configured levels come
 * deepest first; walk up from the socket's cgroup through self.parent to
 * each level in turn and compare the id there: a load per level walked, 3
 * per configured cgroup compared, no helper. (struct cgroup's ancestors[]
 * would give the ancestor at a level in one load, but the verifier walks
 * a trailing array of a kernel struct only for int or struct elements, and
 * ancestors[] holds pointers: "struct cgroup doesn't have field at offset
 * 2232" on 6.18.) More than NSL_CG_MAXWALK levels below a configured
 * cgroup, the event is left out, as with cgroup storage. The verifier
 * removes the iterations at and past targ_anc_n. */
static __always_inline bool cg_anc_in(struct cgroup *cgrp) {
  __u64 cur = (__u32)cgrp->level;
  struct cgroup_subsys_state *css = &cgrp->self;
#pragma unroll
  for (int k = 0; k < NSL_CG_ANC_MAX; k++) {
    if (k >= targ_anc_n)
      break;
    __u64 l = targ_anc_level[k];
    if (cur < l)
      continue; /* the socket's cgroup is above it */
    __u64 d = cur - l; /* levels up to the configured one's */
    if (d > NSL_CG_MAXWALK)
      return false; /* and further still from the next ones */
#pragma nounroll
    for (__u64 i = 0; i < d && i < NSL_CG_MAXWALK; i++)
      css = css->parent;
    cur = l;
    if (css->cgroup->kn->id == anc_id[k])
      return true;
  }
  return false;
}

/* GroupBy cgroup: the group handed to hist_for(): the cgroup id, with 1 +
 * its slot in the bits above NSL_SLOT_SHIFT when the group index has it
 * (two inlined array lookups, no helper call). (A kernfs id is the inode
 * number in its low 32 bits and a generation, bumped when the 31-bit inode
 * numbers wrap, above: it would need 2^47 cgroups made to reach bit 48.)
 * An entry is written by user space while the program may read it: a torn
 * read pairs an id with another cgroup's slot at worst, and hist_for()'s
 * owner check sends that event to the group table. */
static __always_inline __u64 nsl_cg_group(__u64 id) {
  __u32 pos = nsl_cg_index_pos(id, targ_cg_index_mask);
  struct nsl_cg_index *e = bpf_map_lookup_elem(&netstacklat_cgroup_index, &pos);
  if (e && e->id == id && e->slot)
    return (__u64)e->slot << NSL_SLOT_SHIFT | (id & NSL_SLOT_ID_MASK);
  pos = (pos + 1) & targ_cg_index_mask;
  e = bpf_map_lookup_elem(&netstacklat_cgroup_index, &pos);
  if (e && e->id == id && e->slot)
    return (__u64)e->slot << NSL_SLOT_SHIFT | (id & NSL_SLOT_ID_MASK);
  return id;
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
  if (!netns_ok_dev(skb, probed) || !ifindex_ok_dev(skb, ifindex, probed))
    return;
  __u64 group = 0;
  if (targ_groupby == NSL_GROUP_INTERFACE)
    group = if_group(ifindex, targ_netns ? 0
                                         : RD(probed, skb, dev, nd_net.net,
                                              ns.inum));
  __u64 t = RD(probed, skb, tstamp);
  record(hook, t, t ? tstamp_not_rx(skb, probed) : 0, group, NULL, skb, 0);
}

/* Socket-level filters; returns false to drop the event. */
static __always_inline bool socket_ok(__u32 hook, const struct sock *sk,
                                      __u32 ifindex, __u64 *group,
                                      const bool probed) {
  if (!netns_ok_sk(sk, probed) || !ifindex_ok_sk(sk, ifindex, probed))
    return false;
  if (targ_min_qlen &&
      RD(probed, sk, sk_receive_queue.qlen) < targ_min_qlen)
    return false;
  __u64 cg = 0;
  if (!targ_filter_cgroup && targ_groupby != NSL_GROUP_CGROUP) {
    /* no cgroup option: nothing to read */
  } else if (targ_anc_n && !probed && targ_groupby != NSL_GROUP_CGROUP) {
    if (!cg_anc_in(sk->sk_cgrp_data.cgroup))
      return false;
  } else if (targ_cg_storage && !probed && targ_filter_cgroup) {
    struct cgroup *cgrp = sk->sk_cgrp_data.cgroup;
    struct nsl_cg_state *st =
        bpf_cgrp_storage_get(&netstacklat_cgroup_state, cgrp, 0, 0);
    if (!cg_storage_in(cgrp, st))
      return false;
    if (targ_groupby == NSL_GROUP_CGROUP)
      cg = cgrp->kn->id;
  } else {
    cg = sk_cgroup_id(sk, probed);
    if (targ_filter_cgroup &&
        !bpf_map_lookup_elem(&netstacklat_cgroup_filter, &cg))
      return false;
  }
  *group = 0;
  if (targ_groupby == NSL_GROUP_CGROUP)
    *group = nsl_cg_group(cg);
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
  record(hook, t, t ? tstamp_not_rx(skb, probed) : 0, group, sk, skb, 0);
}

static __always_inline bool is_inet(const struct sock *sk) {
  __u16 family = sk->__sk_common.skc_family;
  return family == 2 /* AF_INET */ || family == 10 /* AF_INET6 */;
}

static __always_inline bool is_proto(const struct sock *sk, __u16 proto) {
  return sk->sk_protocol == proto && is_inet(sk);
}

/* Reads that waited behind a hole (data that arrived out of order and sat
 * in the out-of-order queue until a retransmission filled the hole) measure
 * the loss recovery, not the host: IncludeHOLBlocked false leaves them out.
 * By the time they are read the queue is usually merged and empty again,
 * so the receive path keeps the history: hol_arrival() runs on each
 * segment of an established connection (tcp_rcv_established) and, for one
 * that starts after rcv_nxt (it goes to the out-of-order queue), widens the
 * socket's range of such data. A read is left out when the data it
 * measures ends inside that range: it sat behind the hole. Data before the
 * hole, and the retransmission that fills it, only waited for the reader:
 * counted. Only compiled in with IncludeHOLBlocked false.
 *
 * The tcp_sock fields are probe reads in every flavour: the verifier types
 * sk as struct sock, so no tcp_sock field is reachable by a direct load.
 * The receive path holds the socket lock; tcp_recv_timestamp runs after
 * release_sock(), so a read may race with an arrival and see a range half
 * written: at worst one read is counted or left out wrongly. */
/* An out-of-order arrival [seq, end) on a socket whose newest hole's range
 * is k. empty: the out-of-order queue was empty, so this opens a new hole,
 * with a range of its own unless both are still to be read (then it joins
 * the newest). */
static __always_inline void hol_arrive_at(struct nsl_hol_range *r, const int k,
                                          __u32 seq, __u32 end, bool empty) {
  const int o = 1 - k;
  if (empty && r->active[k] && !r->active[o]) {
    r->start[o] = seq;
    r->end[o] = end;
    r->active[o] = 1;
    r->cur = o;
    return;
  }
  if (!r->active[k]) {
    r->start[k] = seq;
    r->end[k] = end;
    r->active[k] = 1;
    return;
  }
  if ((__s32)(seq - r->start[k]) < 0)
    r->start[k] = seq;
  if ((__s32)(end - r->end[k]) > 0)
    r->end[k] = end;
}

static __always_inline void hol_arrival(const struct sock *sk,
                                        const struct sk_buff *skb) {
  const struct tcp_skb_cb *cb = (const void *)&skb->cb[0];
  __u32 seq = cb->seq, end = cb->end_seq;
  const struct tcp_sock *tp = (const void *)sk;
  __u32 rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
  /* In order, a retransmission of old data, or no data: nothing to do. */
  if ((__s32)(seq - rcv_nxt) <= 0 || (__s32)(end - seq) <= 0)
    return;
  struct nsl_hol_range *r = bpf_sk_storage_get(
      &netstacklat_hol_range, (void *)sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
  if (!r) /* no memory: this hole's reads will be counted */
    return;
  /* Constant indices only: the 6.1 verifier loses the bounds of a
   * variable one. */
  bool empty = !BPF_CORE_READ(tp, out_of_order_queue.rb_node);
  if (r->cur & 1)
    hol_arrive_at(r, 1, seq, end, empty);
  else
    hol_arrive_at(r, 0, seq, end, empty);
}

/* read_end: the sequence number after the data whose receive time is
 * measured. True when that data arrived out of order: it ends after a
 * range's start and not after its end. A range the reader has gone past is
 * done with. */
static __always_inline bool hol_in(struct nsl_hol_range *r, __u32 i,
                                   __u32 read_end) {
  if (!r->active[i])
    return false;
  if ((__s32)(read_end - r->end[i]) > 0) {
    r->active[i] = 0;
    return false;
  }
  return (__s32)(read_end - r->start[i]) > 0;
}

static __always_inline bool hol_blocked(const struct sock *sk,
                                        __u32 read_end) {
  const struct tcp_sock *tp = (const void *)sk;
  /* Never out of order on this socket (5.4+): no storage either. */
  if (!BPF_CORE_READ(tp, rcv_ooopack))
    return false;
  struct nsl_hol_range *r =
      bpf_sk_storage_get(&netstacklat_hol_range, (void *)sk, NULL, 0);
  if (!r)
    return false;
  bool b0 = hol_in(r, 0, read_end);
  bool b1 = hol_in(r, 1, read_end);
  return b0 || b1;
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

/* kprobe at entry: the skb is about to be queued (a few ns earlier than
 * the fexit point). */
SEC("kprobe/tcp_queue_rcv")
int BPF_KPROBE(tcp_enqueued_kprobe, struct sock *sk, struct sk_buff *skb) {
  socket_skb_hook(NSL_TCP_SOCKET_ENQUEUED, sk, skb, true);
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
