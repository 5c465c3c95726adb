/* Types shared by netstacklat's handlers (bpf/netstacklat/handlers.h, in
 * the receive path's object) and plugin/netstacklat/. */
#ifndef NETSTACKLAT_H
#define NETSTACKLAT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "rx/hooks.h"
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Log-linear histogram of nanoseconds: fine bucket 0 is [0, 512], then
 * each power of two from 2^9 to 2^34 in 16 equal parts, fine bucket
 * 1 + 16 (e - 9) + j being (2^e + j 2^(e-4), 2^e + (j+1) 2^(e-4)], the
 * last (401) is (2^34, inf). The log2 buckets of Buckets true (26) are
 * sums of them. Kept in step with plugin/common/hist.h (a unit test checks
 * both). */
#define NSL_SUB_BITS 4
#define NSL_FINE_FIRST_EXP 9
#define NSL_FINE_OCTAVES 25
#define NSL_NFINE (2 + NSL_FINE_OCTAVES * (1 << NSL_SUB_BITS))

/* netstacklat's hooks are the receive path's (bpf/rx/hooks.h), one
 * histogram each. */
enum nsl_hook {
  NSL_IP_START = RX_IP_START,
  NSL_TCP_START = RX_TCP_START,
  NSL_UDP_START = RX_UDP_START,
  NSL_TCP_SOCKET_ENQUEUED = RX_TCP_SOCKET_ENQUEUED,
  NSL_UDP_SOCKET_ENQUEUED = RX_UDP_SOCKET_ENQUEUED,
  NSL_TCP_SOCKET_READ = RX_TCP_SOCKET_READ,
  NSL_UDP_SOCKET_READ = RX_UDP_SOCKET_READ,
  NSL_NHOOKS = RX_NHOOKS,
};

/* Why an event was not put in the histogram. */
enum nsl_skip {
  NSL_SKIP_NO_TSTAMP = 0, /* skb->tstamp is 0: nobody asked for timestamps */
  NSL_SKIP_NOT_RX,        /* a delivery (EDT) time, not a receive time */
  NSL_SKIP_FUTURE,        /* timestamp later than now: clock step */
  NSL_SKIP_MAP_FULL,      /* GroupBy: no room for a new group */
  NSL_SKIP_HOL_BLOCKED,   /* tcp_socket_read, IncludeHOLBlocked false: the
                             data read waited behind a hole (loss recovery) */
  NSL_SKIP_RACED,         /* udp_socket_enqueued tracepoint: the queue was
                             empty, or its tail changed between the two
                             looks (the datagram taken by a reader, or
                             another queued behind it): not safely read */
  NSL_NSKIPS,
};

/* One per hook (and per group with GroupBy), per CPU, cumulative: 1,680
 * bytes (docs and MaxGroups' memory figure say so; a unit test checks).
 * The fine buckets are 32-bit counters that wrap (user space subtracts
 * modulo 2^32); count and sum_ns are 64-bit and tell a reset.
 * count: every event with a receive time, timed or not (SampleEvery);
 * bucket, sum_ns and the skips after the clock read (future) are of the
 * timed events only. countdown: SampleEvery, events still to be let
 * through untimed before the next timed one (kernel side only). */
struct nsl_hist {
  /* What an event writes besides its bucket, first and together: with
   * nsl_slot_hist's owner in front, owner, count, sum_ns, countdown and
   * skipped are 64 contiguous bytes (one cache line, or two: per-CPU
   * values are only 8-byte aligned); with the buckets first, owner and
   * count were 256 bytes apart. */
  __u64 count;
  __u64 sum_ns;
  __u64 countdown;
  __u64 skipped[NSL_NSKIPS];
  __u32 bucket[NSL_NFINE];
};
#define NSL_HIST_SIZE 1680

struct nsl_group_key {
  __u64 group; /* cgroup id, or ifindex (netns inode << 32 | ifindex with
                * NetworkNamespace "all"), or NSL_GROUP_OTHER */
  __u32 hook;
  __u32 pad;
};

/* The group "other": one entry per hook, made by user space at load, where
 * the events of a group that finds the table full are counted (no cgroup
 * id or interface key is all ones). */
#define NSL_GROUP_OTHER 0xFFFFFFFFFFFFFFFFULL
/* The fewest entries of netstacklat_cg_waiting (a power of two). */
#define NSL_WAIT_MIN 4096

/* Cgroup storage (kernel >= 6.2): one value per cgroup. */
struct nsl_cg_state {
  __u32 mark; /* Cgroup filter: 1 for a configured cgroup. User space. */
  __u32 gen;  /* The kernel's decision below, valid when equal to
               * cg_filter_gen */
  __u32 in;   /* the cgroup is below a marked one */
};
#define NSL_CG_MAXWALK 32 /* ancestors looked at for a decision */
#define NSL_CG_ANC_MAX 8   /* Cgroup paths the ancestors way compares */
#define NSL_SLOT_SHIFT 48
#define NSL_SLOT_ID_MASK ((1ULL << NSL_SLOT_SHIFT) - 1)

/* GroupBy cgroup: an entry of the group index (netstacklat_cgroup_index),
 * written by user space: the cgroup id and 1 + its slot (0: empty). */
struct nsl_cg_index {
  __u64 id;
  __u32 slot;
  __u32 pad;
};

/* The index position of a cgroup id: a multiplicative hash, masked to the
 * index size (a power of two, mask = size - 1). A cgroup is looked for at
 * this position and the next one (mod size): user space and the BPF
 * programs share this function. */
static __always_inline __u32 nsl_cg_index_pos(__u64 id, __u32 mask) {
  return (__u32)((id * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

struct nsl_slot_hist {
  __u64 owner; /* the cgroup id (low 48 bits) the slot belongs to; 0: free */
  struct nsl_hist h;
};

/* GroupBy's histograms (the group table and the cgroup slots) are not per
 * CPU: a value holds S stripes, and a CPU writes stripe cpu & (S - 1). S is
 * the possible CPUs rounded up to a power of two, at most NSL_STRIPES_MAX
 * (chosen at load, the value size set from it): each CPU has a stripe of
 * its own up to 16 possible CPUs, and past that 2 to 16 CPUs share one,
 * adding atomically. A per-CPU value took 1,680 bytes per possible CPU:
 * 370 MiB for MaxGroups 128 and 7 hooks at 256; striped, 30.6 MiB (with
 * the hash map's spare entry per possible CPU). A stripe
 * is 27 cache lines (1,728 bytes): two stripes never share one. owner: a
 * slot's cgroup (every stripe has it, so that an event reads only its
 * own stripe's lines); 0 in the group table. */
#define NSL_STRIPES_MAX 16
struct nsl_stripe {
  __u64 owner;
  struct nsl_hist h;
  __u8 pad[40];
};
#define NSL_STRIPE_SIZE 1728

/* GroupBy: each CPU's own histograms of NSL_FRONT_WAYS groups per hook,
 * its ways (netstacklat_fronts, per CPU, one value per hook), so that the
 * groups a CPU counts most are added to with plain adds on lines no other
 * CPU writes, without the group table's lookup. A way is taken by the first group that counts on
 * the CPU while it is free, and kept while the group lives; user space
 * adds it to the group's values at every read. key: the group (the cgroup
 * id without its slot, or the interface's), 0 while free. Its counts are
 * the CPU's since the way was taken (never moved, so no read sees them
 * twice or not at all). 6,752 bytes per hook and possible CPU. */
#define NSL_FRONT_WAYS 4
struct nsl_front {
  __u64 key[NSL_FRONT_WAYS];
  struct nsl_hist h[NSL_FRONT_WAYS];
};

/* A way's release, written by user space when the group it holds is gone
 * (netstacklat_front_release, at cpu * NSL_NHOOKS + hook): the program
 * that next finds key[w] in way w frees it (zeroes it) before counting,
 * and never gives that way to that group again. */
struct nsl_front_release {
  __u64 key[NSL_FRONT_WAYS];
};

/* Fine bucket of a latency in ns (plugin/common/hist.c's hist_fine_of(), which
 * a unit test checks it against): with x = ns - 1 and e = floor(log2(x)),
 * 0 for ns <= 512, else 1 + 16 (e - 9) + the 4 bits of x below its top
 * bit, the last for e >= 34. A binary search for the top bit (no loop, no
 * helper), a shift and a mask: a dozen ALU instructions, all in registers.
 * The caller still bounds the index for the verifier. */
static __always_inline __u32 nsl_slot_of(__u64 ns) {
  if (ns <= (1ULL << NSL_FINE_FIRST_EXP))
    return 0;
  __u64 x = ns - 1, v = x;
  __u32 r = 0, s;
  s = (v > 0xFFFFFFFFULL) << 5;
  v >>= s;
  r |= s;
  s = (v > 0xFFFF) << 4;
  v >>= s;
  r |= s;
  s = (v > 0xFF) << 3;
  v >>= s;
  r |= s;
  s = (v > 0xF) << 2;
  v >>= s;
  r |= s;
  s = (v > 0x3) << 1;
  v >>= s;
  r |= s;
  r |= (__u32)(v >> 1);
  /* r = floor(log2(x)) >= 9 */
  if (r >= NSL_FINE_FIRST_EXP + NSL_FINE_OCTAVES)
    return NSL_NFINE - 1;
  __u32 j = (__u32)(x >> (r - NSL_SUB_BITS)) & ((1 << NSL_SUB_BITS) - 1);
  return 1 + ((r - NSL_FINE_FIRST_EXP) << NSL_SUB_BITS) + j;
}

/* OutlierThreshold: one record per event above it, to user space through
 * the ring buffer netstacklat_outliers (within OutlierLimit per second).
 * Addresses are in network byte order (IPv4 in the first 4 bytes), ports
 * in host order; fields a hook cannot know are 0 (see collectd-ebpf(5),
 * "Latency outliers"). */
struct nsl_outlier {
  __u64 time_ns; /* of the event, CLOCK_REALTIME */
  __u64 latency_ns;
  __u64 cgroup;  /* cgroup id of the socket; 0: no socket */
  __u32 hook;
  __u32 netns;   /* inode number of the network namespace; 0: unknown */
  __u32 ifindex; /* 0: unknown */
  __u32 pid;     /* socket reads only (the reader's context); else 0 */
  __u32 qlen;    /* the socket's receive queue, in packets; no socket: 0 */
  __u16 family;  /* AF_INET, AF_INET6; 0: addresses unknown */
  __u8 proto;    /* IPPROTO_TCP, IPPROTO_UDP; 0: unknown */
  __u8 has_ports;
  __u16 lport, rport;
  __u8 laddr[16], raddr[16];
  char comm[16]; /* with pid */
};

enum nsl_groupby {
  NSL_GROUP_NONE = 0,
  NSL_GROUP_CGROUP,
  NSL_GROUP_INTERFACE,
};

#endif
