// SPDX-License-Identifier: GPL-2.0
/* Whether the kernel lets a tracing program hand a socket's cgroup to the
 * cgroup-storage helpers, as netstacklat's Cgroup filter and GroupBy
 * cgroup do with cgroup storage (bpf/netstacklat/filters.h). Having the map type
 * (6.2) is not enough: kernel 6.18.44 refuses sk->sk_cgrp_data.cgroup to
 * bpf_cgrp_storage_get() as an untrusted pointer ("R2
 * type=untrusted_ptr_"), and netstacklat's programs would not load at
 * all. plugin/netstacklat/load.c loads this one (never attaches it) and,
 * when the kernel refuses it, uses hash maps instead. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct {
  __uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u32);
} cgprobe_state SEC(".maps");

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(cgprobe, const struct sock *sk) {
  struct cgroup *cgrp = sk->sk_cgrp_data.cgroup;
  __u32 *v = bpf_cgrp_storage_get(&cgprobe_state, cgrp, 0, 0);
  if (v && cgrp->self.parent)
    bpf_cgrp_storage_get(&cgprobe_state, cgrp->self.parent->cgroup, 0, 0);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
