// SPDX-License-Identifier: GPL-2.0
/* netstacklat's handlers on the receive path: how long a received packet
 * has waited, from its receive timestamp (skb->tstamp, CLOCK_REALTIME) to
 * a point in the network stack. The programs are the receive path's
 * (bpf/rx/rx.bpf.c, which includes this header): each flavour of a hook
 * (fentry/fexit, tp_btf, kprobe) finds the skb and socket and calls the
 * handler of that hook here, while nsl_hooks has the hook's bit (netstacklat
 * wants it); the verifier prunes the handlers that are off, and the
 * filters, rodata too, that are off.
 *
 * fentry/tp_btf programs pass probed=false: fields are read with direct
 * loads through the typed pointer (CO-RE relocated, common/field.h);
 * kprobe programs pass probed=true. */
#ifndef NSL_HANDLERS_H
#define NSL_HANDLERS_H

#include "common/entry_stack.h"
#include "common/field.h"
#include "common/sk_addr.h"
#include "netstacklat/netstacklat.h"

/* ---- settings, fixed at load ---- */
/* The hooks netstacklat wants (bit 1 << hook): a handler of a hook without
 * its bit is pruned, so that a program another feature keeps on that hook
 * carries none of netstacklat's work. */
const volatile __u32 nsl_hooks = (1u << NSL_NHOOKS) - 1;
#define NSL_ON(hook) (nsl_hooks & (1u << (hook)))
const volatile __u32 targ_netns = 0; /* netns inode number; 0: all */
const volatile bool targ_filter_ifindex = false;
const volatile bool targ_filter_cgroup = false;
const volatile __u32 targ_groupby = NSL_GROUP_NONE;
const volatile __u32 targ_min_qlen = 0;
const volatile bool targ_include_hol = true;
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
/* GroupBy cgroup: the mask of netstacklat_cg_waiting (its size - 1). */
const volatile __u32 targ_wait_mask = 0;
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
 * handlers, the head-of-line tracking of IncludeHOLBlocked false, and the
 * handlers of each group of hooks, in hook order: the packet path
 * (ip_start, tcp_start, udp_start), a socket's enqueue and its read. */
#include "netstacklat/outlier.h"
#include "netstacklat/record.h"
#include "netstacklat/filters.h"
#include "netstacklat/hol.h"
#include "netstacklat/start.h"
#include "netstacklat/enqueued.h"
#include "netstacklat/read.h"

#endif /* NSL_HANDLERS_H */
