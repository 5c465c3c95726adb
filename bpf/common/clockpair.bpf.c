// SPDX-License-Identifier: GPL-2.0
/* Test-only (tests/unit/rtclock_test.c): both clocks netstacklat can read
 * "now" from, read by the kernel in one program run, so that the test can
 * check that each plus the offset user space keeps gives the same
 * CLOCK_REALTIME. Run with BPF_PROG_TEST_RUN, never attached. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

__u64 mono_before, tai, mono_after;

SEC("raw_tp/sys_enter")
int clock_pair(void *ctx) {
  mono_before = bpf_ktime_get_ns();
  tai = bpf_ktime_get_tai_ns();
  mono_after = bpf_ktime_get_ns();
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
