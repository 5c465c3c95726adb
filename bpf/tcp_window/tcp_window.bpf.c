// SPDX-License-Identifier: GPL-2.0
/* tcp_window: receive-window clamps. One static handler, three attach
 * flavours (the loader picks one at run time, see plugin/tcp_window/clamps.c):
 *   fexit/tcp_try_rmem_schedule      the reference definition
 *   kprobe + kretprobe on the same   the reference, for kernels without
 *                                     BPF trampolines
 *   tp_btf/sk_data_ready             for kernels where only tracepoints
 *                                     attach; no tracepoint fires where
 *                                     tcp_try_rmem_schedule() returns, so
 *                                     this one counts something else and
 *                                     feeds its own metric
 *                                     (operations-clamped_wakeups,
 *                                     docs/tcp_window.md)
 * Each map is named after the metric it feeds. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define ESTACK_NARGS 1 /* the socket */
#include "common/entry_stack.h"
#include "tcp_window/tcp_window.h"

/* Set by user space before load. */
const volatile __u32 targ_threshold = TCP_WINDOW_DEFAULT_THRESHOLD;
const volatile __u32 targ_netns = 0; /* 0: every network namespace */
/* The sk_storage work of clamp_transitions is most of this program's cost
 * on the tracepoint (docs/tcp_window.md): it can be switched off. */
const volatile bool targ_transitions = false;

/* tcp_window/operations-clamps: fexit and kprobe flavours only */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} tcp_window_clamps_total SEC(".maps");

/* tcp_window/operations-clamped_wakeups: tracepoint flavour only */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} tcp_window_clamped_wakeups_total SEC(".maps");

/* tcp_window/operations-clamp_transitions */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} tcp_window_clamp_transitions_total SEC(".maps");

/* Per socket: 1 while the socket is "armed", i.e. it was last seen with
 * rcv_ssthresh >= threshold, so that falling below counts one transition.
 * Freed by the kernel with the socket. */
struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u8);
} tcp_window_armed SEC(".maps");

/* kprobe flavour: the socket of each tcp_try_rmem_schedule() call in
 * flight, from entry to return, on a per-CPU stack (bpf/common/entry_stack.h says
 * why not a hash keyed by pid_tgid). */
ESTACK_MAP(tcp_window_inflight);

static __always_inline void add(void *map) {
  __u32 zero = 0;
  __u64 *v = bpf_map_lookup_elem(map, &zero);
  if (v)
    *v += 1; /* per-CPU slot: no atomic needed */
}

/* The logic, once. `sk` is a BTF pointer for the tracing flavours and NULL
 * for the kprobe flavour (sk_storage helpers are not available to kprobes,
 * so that flavour counts clamps only). `count` is the counter of the
 * flavour's event (a constant: the verifier sees one map per program). */
static __always_inline void handle(struct sock *sk, __u32 rcv_ssthresh,
                                   void *count) {
  bool low = rcv_ssthresh < targ_threshold;

  if (low)
    add(count);
  if (!sk || !targ_transitions)
    return;

  if (low) {
    /* Most sockets never own sk_storage: skip the helper for them. */
    if (!sk->sk_bpf_storage)
      return;
    __u8 *armed = bpf_sk_storage_get(&tcp_window_armed, sk, 0, 0);
    if (armed && *armed) {
      *armed = 0;
      add(&tcp_window_clamp_transitions_total);
    }
  } else {
    __u8 *armed = bpf_sk_storage_get(&tcp_window_armed, sk, 0,
                                     BPF_SK_STORAGE_GET_F_CREATE);
    if (armed && !*armed)
      *armed = 1;
  }
}

static __always_inline bool netns_wanted(struct sock *sk) {
  return !targ_netns || sk->__sk_common.skc_net.net->ns.inum == targ_netns;
}

SEC("fexit/tcp_try_rmem_schedule")
int BPF_PROG(tcp_window_fexit, struct sock *sk, struct sk_buff *skb,
             unsigned int size, int ret) {
  /* sk is typed struct sock for the verifier: tcp_sock fields need the
   * checked cast. */
  struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
  if (!tp || !netns_wanted(sk))
    return 0;
  handle(sk, tp->rcv_ssthresh, &tcp_window_clamps_total);
  return 0;
}

/* Pushed for every call (the namespace filter waits for the return), so
 * that each return pops its own frame. The socket is held by the caller
 * until after the return. */
SEC("kprobe/tcp_try_rmem_schedule")
int BPF_KPROBE(tcp_window_kprobe, struct sock *sk) {
  struct estack_frame *f = estack_push(&tcp_window_inflight, true);
  if (f)
    f->arg[0] = (__u64)sk;
  return 0;
}

SEC("kretprobe/tcp_try_rmem_schedule")
int BPF_KRETPROBE(tcp_window_kretprobe) {
  struct estack_frame f;
  if (!estack_pop(&tcp_window_inflight, &f, true))
    return 0;
  struct sock *sk = (struct sock *)f.arg[0];
  if (targ_netns &&
      BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) != targ_netns)
    return 0;
  struct tcp_sock *tp = (struct tcp_sock *)sk;
  handle(NULL, BPF_CORE_READ(tp, rcv_ssthresh), &tcp_window_clamps_total);
  return 0;
}

/* sk_data_ready (added in 2023 with "net: add tracepoints for data
 * send/receive on sockets"; not in 6.1) fires after a segment has been queued, or after
 * tcp_try_rmem_schedule() failed and the segment is about to be dropped: the
 * rcv_ssthresh read here is the one left by the receive path's pruning. It
 * also fires for fast-path segments that never called
 * tcp_try_rmem_schedule(), and not for queued out-of-order ones, so its
 * count is not the reference's: it goes to its own map and metric. It
 * fires for every socket family, hence the cheap protocol test first. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(tcp_window_sk_data_ready, const struct sock *csk) {
  struct sock *sk = (struct sock *)csk;
  if (sk->sk_protocol != IPPROTO_TCP)
    return 0;
  /* A listener's data_ready is a new connection, not data. */
  if (sk->__sk_common.skc_state == TCP_LISTEN)
    return 0;
  struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
  if (!tp || !netns_wanted(sk))
    return 0;
  handle(sk, tp->rcv_ssthresh, &tcp_window_clamped_wakeups_total);
  return 0;
}

/* Floor for the cost figures in docs/tcp_window.md: the same tracepoint
 * with nothing in it. Never autoloaded by the plugin. */
SEC("tp_btf/sk_data_ready")
int tcp_window_empty(void *ctx) { return 0; }

char LICENSE[] SEC("license") = "GPL";
