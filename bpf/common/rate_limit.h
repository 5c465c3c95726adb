// SPDX-License-Identifier: GPL-2.0
/* "At most N a second" for records to user space (netstacklat's
 * OutlierLimit, drops' DropLimit), with a fair share: one map value holds
 * the second of the BPF clock and how many events came in it, for the host
 * (the limit) and for each share slot (a quarter of it). A share slot is
 * what one source of events can fill: a cgroup's outliers, a drop reason's
 * (or location's) drops; sources whose key falls in the same slot share
 * it. Included by BPF code after vmlinux.h.
 *
 * Cost: every candidate event reads the two windows first (plain loads:
 * a window that is full, the common case in a storm, costs no write and
 * keeps its cache line shared between the CPUs); only an event that will
 * be sent counts itself, with an atomic add. */
#ifndef RATE_LIMIT_H
#define RATE_LIMIT_H

struct rate_window {
  __u64 sec;   /* the second (of the BPF clock) being counted */
  __u64 count; /* events in it so far */
};

#define RATE_SHARE_SLOTS 256 /* a power of two */
#define RATE_SHARE_DIV 4     /* a source takes at most 1/4 of the limit */

/* The share slot of a 64-bit key (a cgroup id, a drop location). */
static __always_inline __u32 rate_share_slot(__u64 key) {
  return (__u32)((key * 0x9e3779b97f4a7c15ULL) >> 56) & (RATE_SHARE_SLOTS - 1);
}

/* Plain reads: whether one more event in second `sec` fits `limit`. */
static __always_inline bool rate_room(const struct rate_window *r, __u64 sec,
                                      __u64 limit) {
  return r->sec != sec || r->count < limit;
}

/* Count one event of second `sec`, after rate_room said it fits. A new
 * second starts the count again; two CPUs crossing into it at once may
 * both reset it, and two that pass rate_room together both count: a few
 * more than the limit may pass. */
static __always_inline void rate_count(struct rate_window *r, __u64 sec) {
  if (r->sec != sec) {
    r->sec = sec;
    r->count = 0;
  }
  /* Shared by the CPUs (the limit is the host's): only events that are
   * sent get here. No fetch: 5.10 has none. */
  __sync_fetch_and_add(&r->count, 1);
}

/* Whether an event at `now` (ns of the BPF clock) may be sent: the host's
 * window (`all`) has room under `limit` and its source's (`mine`) under
 * the share, a quarter of the limit (at least 1). Plain reads only. */
static __always_inline bool rate_room_shared(const struct rate_window *all,
                                             const struct rate_window *mine,
                                             __u64 now, __u64 limit) {
  __u64 sec = now / 1000000000ULL;
  __u64 share = (limit + RATE_SHARE_DIV - 1) / RATE_SHARE_DIV;
  return rate_room(all, sec, limit) && rate_room(mine, sec, share);
}

/* The event is sent: counted in both windows. */
static __always_inline void rate_take_shared(struct rate_window *all,
                                             struct rate_window *mine,
                                             __u64 now) {
  __u64 sec = now / 1000000000ULL;
  rate_count(all, sec);
  rate_count(mine, sec);
}

#endif
