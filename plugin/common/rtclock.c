// SPDX-License-Identifier: GPL-2.0-only
/* CLOCK_REALTIME for BPF programs; see rtclock.h. */
#include "common/rtclock.h"
#include "core/testenv.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>

const char *rtclock_name(enum rtclock c) {
  return c == RTCLOCK_TAI ? "TAI" : "MONOTONIC";
}

enum rtclock rtclock_choose(const char **why, bool *refused) {
  if (refused)
    *refused = false;
  if (test_switch(TEST_CLOCK)) {
    *why = "forced by EBPF_TEST_CLOCK=monotonic";
    return RTCLOCK_MONOTONIC;
  }
  /* The helper is in the base set every program type has; a socket
   * filter is the simplest program to probe with. 1: present, 0: absent,
   * < 0: the probe itself failed (then the fallback, which works on every
   * kernel). */
  int r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SOCKET_FILTER,
                                  BPF_FUNC_ktime_get_tai_ns, NULL);
  if (r == 1) {
    /* TAI needs the kernel's TAI offset, from adjtimex(): a seccomp
     * filter or systemd's ProtectClock= can refuse it, and an offset left
     * at 0 would put every latency 37 s (the offset on an NTP host) too
     * high. Then MONOTONIC, whose offset needs only clock_gettime(). */
    int64_t off;
    if (rtclock_offset(RTCLOCK_TAI, &off, NULL) != 0) {
      static char buf[200];
      snprintf(buf, sizeof(buf),
               "the kernel has bpf_ktime_get_tai_ns, but adjtimex() failed "
               "(%s), so the TAI offset cannot be read: a seccomp filter, "
               "or systemd's ProtectClock=",
               strerror(errno));
      *why = buf;
      if (refused)
        *refused = true;
      return RTCLOCK_MONOTONIC;
    }
    *why = "the kernel has bpf_ktime_get_tai_ns";
    return RTCLOCK_TAI;
  }
  *why = r == 0 ? "the kernel has no bpf_ktime_get_tai_ns (Linux < 6.1)"
                : "probing for bpf_ktime_get_tai_ns failed";
  return RTCLOCK_MONOTONIC;
}

static int64_t ns_of(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int rtclock_offset(enum rtclock c, int64_t *off, int64_t *window_ns) {
  if (c == RTCLOCK_TAI) {
    struct timex tx;
    memset(&tx, 0, sizeof(tx));
    if (adjtimex(&tx) < 0)
      return -errno;
    *off = -(int64_t)tx.tai * 1000000000LL;
    if (window_ns)
      *window_ns = 0;
    return 0;
  }
  int64_t best = INT64_MAX;
  for (int i = 0; i < 7; i++) {
    int64_t a = ns_of(CLOCK_MONOTONIC);
    int64_t r = ns_of(CLOCK_REALTIME);
    int64_t b = ns_of(CLOCK_MONOTONIC);
    if (b - a < best) {
      best = b - a;
      *off = r - (a + (b - a) / 2);
    }
  }
  if (window_ns)
    *window_ns = best;
  return 0;
}
