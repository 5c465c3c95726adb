// SPDX-License-Identifier: GPL-2.0
/* What a netstacklat event is made of, step by step, on one hook
 * (tp_btf/skb_copy_datagram_iovec, TCP reads): `bench/run --only ladder`
 * attaches these one at a time, alone on the hook as netstacklat's program
 * would be (attached together, whichever runs first pays the cold caches:
 * ~40 ns more for the first clock read or cgroup walk), and reports each
 * one's ns per run.
 *   l_empty     nothing (the floor)
 *   l_loads     the skb/sock loads and checks of tcp_read_tp, no clock
 *   l_clock     + bpf_ktime_get_tai_ns()
 *   l_hist      + per-CPU array histogram update (= tcp_read_tp, filters off)
 *   l_clk_mono  l_clock with bpf_ktime_get_ns() (CLOCK_MONOTONIC) instead
 *   l_cg_htab   cgroup id (3 dependent loads) + hash lookup (Cgroup filter)
 *   l_cg_stor   the same decision through cgroup local storage
 *   l_grp_htab  PERCPU_HASH {cgroup, hook} lookup (GroupBy cgroup)
 *   l_grp_stor  GroupBy cgroup through cgroup storage: the cgroup's slot
 *               from its storage, its PERCPU_ARRAY row (inlined lookup),
 *               the owner checked against the cgroup id
 * Entries are created by the programs themselves on first use, so every
 * measured lookup is a hit. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct hist {
  __u64 bucket[26];
  __u64 sum_ns;
  __u64 skipped[4];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 7);
  __type(key, __u32);
  __type(value, struct hist);
} l_arr SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, __u8);
} l_cg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u8);
} l_cgs SEC(".maps");

struct gkey {
  __u64 group;
  __u32 hook;
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 1024);
  __type(key, struct gkey);
  __type(value, struct hist);
} l_grp SEC(".maps");

struct cgst {
  __u32 slot, mark, gen, in;
};

struct {
  __uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct cgst);
} l_cgst SEC(".maps");

struct slot_hist {
  __u64 owner;
  struct hist h;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 7 * 16);
  __type(key, __u32);
  __type(value, struct slot_hist);
} l_slots SEC(".maps");

__u64 sink;

static __always_inline const struct sock *tcp_sk_of(const struct sk_buff *skb) {
  const struct sock *sk = skb->sk;
  if (!sk || sk->sk_protocol != 6)
    return NULL;
  __u16 f = sk->__sk_common.skc_family;
  if (f != 2 && f != 10)
    return NULL;
  return sk;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_empty) { return 0; }

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_loads, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  sink = skb->tstamp + skb->skb_iif + sk->__sk_common.skc_net.net->ns.inum +
         (skb->tstamp_type);
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_clock, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  sink = bpf_ktime_get_tai_ns() - skb->tstamp + skb->skb_iif +
         sk->__sk_common.skc_net.net->ns.inum + skb->tstamp_type;
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_clk_mono, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  sink = bpf_ktime_get_ns() - skb->tstamp + skb->skb_iif +
         sk->__sk_common.skc_net.net->ns.inum + skb->tstamp_type;
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_hist, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  __u32 k = 5;
  struct hist *h = bpf_map_lookup_elem(&l_arr, &k);
  if (!h)
    return 0;
  __u64 d = bpf_ktime_get_tai_ns() - skb->tstamp + skb->skb_iif +
            sk->__sk_common.skc_net.net->ns.inum + skb->tstamp_type;
  h->bucket[(d >> 10) & 15]++;
  h->sum_ns += d;
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_cg_htab, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  __u64 cg = sk->sk_cgrp_data.cgroup->kn->id;
  if (!bpf_map_lookup_elem(&l_cg, &cg)) {
    __u8 one = 1;
    bpf_map_update_elem(&l_cg, &cg, &one, BPF_NOEXIST);
  }
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_cg_stor, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  __u8 *v = bpf_cgrp_storage_get(&l_cgs, sk->sk_cgrp_data.cgroup, 0,
                                 BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (v)
    sink += *v;
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_grp_htab, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  struct gkey key = {.group = sk->sk_cgrp_data.cgroup->kn->id, .hook = 5};
  struct hist *h = bpf_map_lookup_elem(&l_grp, &key);
  if (!h) {
    static const struct hist zero;
    bpf_map_update_elem(&l_grp, &key, &zero, BPF_NOEXIST);
    return 0;
  }
  h->sum_ns++;
  return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(l_grp_stor, const struct sk_buff *skb, int len) {
  const struct sock *sk = tcp_sk_of(skb);
  if (!sk)
    return 0;
  struct cgroup *cg = sk->sk_cgrp_data.cgroup;
  struct cgst *st = bpf_cgrp_storage_get(&l_cgst, cg, 0, 0);
  if (!st) { /* first use: give it slot 1 */
    st = bpf_cgrp_storage_get(&l_cgst, cg, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (st)
      st->slot = 1;
    return 0;
  }
  __u64 id = cg->kn->id;
  __u32 i = (st->slot - 1) * 7 + 5;
  struct slot_hist *v = bpf_map_lookup_elem(&l_slots, &i);
  if (!v)
    return 0;
  if (v->owner != id) { /* first use of this CPU's row */
    v->owner = id;
    return 0;
  }
  v->h.sum_ns++;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
