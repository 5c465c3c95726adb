// SPDX-License-Identifier: GPL-2.0
/* Test object for the loader (tests/helpers/loader_check.c): one hook,
 * "openat", in all three flavours around one handler, counting the openat
 * calls of one process; one hook whose kernel function does not exist; and
 * one whose program the verifier refuses. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 targ_tgid = 0;

__u64 openat_calls = 0;
__u64 missing_calls = 0;

static __always_inline void count(void) {
  if ((__u32)(bpf_get_current_pid_tgid() >> 32) == targ_tgid)
    __sync_fetch_and_add(&openat_calls, 1);
}

SEC("fentry/do_sys_openat2")
int BPF_PROG(openat_fentry) {
  count();
  return 0;
}

/* Syscall numbers are per architecture (asm/unistd.h). */
#if defined(__TARGET_ARCH_arm64)
#define NR_OPENAT 56
#else
#define NR_OPENAT 257 /* x86_64 */
#endif

SEC("tp_btf/sys_enter")
int BPF_PROG(openat_tp, struct pt_regs *regs, long id) {
  if (id == NR_OPENAT)
    count();
  return 0;
}

SEC("kprobe/do_sys_openat2")
int BPF_KPROBE(openat_kprobe) {
  count();
  return 0;
}

SEC("fentry/ebpf_selftest_no_such_function")
int BPF_PROG(missing_fentry) {
  missing_calls++;
  return 0;
}

SEC("kprobe/ebpf_selftest_no_such_function")
int BPF_KPROBE(missing_kprobe) {
  missing_calls++;
  return 0;
}

/* Refused by every kernel's verifier, on purpose: a load through a scalar
 * ("R1 invalid mem access 'scalar'"). */
SEC("tp_btf/sys_enter")
int BPF_PROG(rejected_tp, struct pt_regs *regs, long id) {
  return *(volatile __u64 *)id == 1;
}

char LICENSE[] SEC("license") = "GPL";
