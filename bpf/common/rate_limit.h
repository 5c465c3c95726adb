// SPDX-License-Identifier: GPL-2.0
/* A host-wide "at most N a second" for records to user space (netstacklat's
 * OutlierLimit, drops' DropLimit): one map value holds the second of the
 * BPF clock and how many events came in it. Included by BPF code after
 * vmlinux.h. */
#ifndef RATE_LIMIT_H
#define RATE_LIMIT_H

struct rate_window {
  __u64 sec;   /* the second (of the BPF clock) being counted */
  __u64 count; /* events in it so far */
};

/* One more event at `now` (ns of the BPF clock): true while it is one of
 * the first `limit` of its second. A new second starts the count again;
 * two CPUs crossing into it at once may both reset it, and then a few
 * more than the limit pass. */
static __always_inline bool rate_take(struct rate_window *r, __u64 now,
                                      __u64 limit) {
  __u64 sec = now / 1000000000ULL;
  if (r->sec != sec) {
    r->sec = sec;
    r->count = 0;
  }
  __sync_fetch_and_add(&r->count, 1); /* no fetch: 5.10 has none */
  return r->count <= limit;
}

#endif
