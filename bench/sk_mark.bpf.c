// SPDX-License-Identifier: GPL-2.0
/* The data-path price of issue 23's item 3 (stalled receivers priced by
 * the sockets with unread data): a scan that walks only marked sockets
 * needs every TCP socket that is told it has data to be marked, on the
 * enqueue path, with socket storage (bench/socketscan --marked, with
 * bench/sk_mark.c):
 * - mark: on sk_data_ready, a TCP socket (not a listener) gets this
 *   object's socket storage: created on its first event, looked up on the
 *   others, as netstacklat's enqueue program would have to;
 * - mark_read: mark's loads without the storage, so that mark − mark_read
 *   is the lookup itself;
 * - mark_empty: nothing, the floor.
 * The walk itself (an iter/bpf_sk_storage_map program over the marked
 * sockets) is not here: this machine refuses map-element iterators
 * (docs/performance.md). Needs the sk_data_ready tracepoint (6.6) and
 * bpf_sk_storage_get in tracing programs (5.11). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u32);
} marked SEC(".maps");

SEC("tp_btf/sk_data_ready")
int BPF_PROG(mark, struct sock *sk) {
  if (sk->sk_protocol != 6 /* IPPROTO_TCP */ ||
      sk->__sk_common.skc_state == TCP_LISTEN)
    return 0;
  bpf_sk_storage_get(&marked, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
  return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(mark_read, struct sock *sk) {
  if (sk->sk_protocol != 6 /* IPPROTO_TCP */ ||
      sk->__sk_common.skc_state == TCP_LISTEN)
    return 0;
  asm volatile("" ::: "memory");
  return 1;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(mark_empty) { return 0; }

char LICENSE[] SEC("license") = "GPL";
