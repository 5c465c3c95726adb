// SPDX-License-Identifier: GPL-2.0-only
/* CLOCK_REALTIME for BPF programs. skb->tstamp is CLOCK_REALTIME, which BPF
 * cannot read: a program reads TAI (bpf_ktime_get_tai_ns, kernel >= 6.1) or
 * MONOTONIC (bpf_ktime_get_ns, every kernel) and adds REALTIME minus that
 * clock, which user space keeps current. Both give REALTIME to within the
 * sampling error of the offset (a few hundred ns); both are off by a clock
 * step (settimeofday, a leap second) until user space refreshes the offset. */
#ifndef EBPF_RTCLOCK_H
#define EBPF_RTCLOCK_H

#include <stdbool.h>
#include <stdint.h>

enum rtclock {
  RTCLOCK_TAI = 0,
  RTCLOCK_MONOTONIC,
};

const char *rtclock_name(enum rtclock c);

/* The clock BPF programs should read on this kernel: TAI when the kernel
 * has bpf_ktime_get_tai_ns and adjtimex() gives its TAI offset, MONOTONIC
 * otherwise (*why says why). *refused (may be NULL) is set when TAI would
 * do but adjtimex() was refused (a seccomp filter, systemd's
 * ProtectClock=): the caller says so as a WARNING. The environment
 * variable EBPF_TEST_CLOCK=monotonic forces MONOTONIC: it is for tests,
 * which compare both clocks on one kernel. */
enum rtclock rtclock_choose(const char **why, bool *refused);

/* REALTIME minus clock c, in ns, into *off; 0 or a negative errno.
 * MONOTONIC: REALTIME is read between two MONOTONIC reads, and the
 * narrowest of a few tries is kept; *window_ns (may be NULL) gets its
 * width, the bound of the sampling error. TAI: the kernel's TAI offset
 * (adjtimex), exact; *window_ns is 0. */
int rtclock_offset(enum rtclock c, int64_t *off, int64_t *window_ns);

#endif
