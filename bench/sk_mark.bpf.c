// SPDX-License-Identifier: GPL-2.0
/* The data-path price of issue 23's item 3 (stalled receivers priced by
 * the sockets with unread data): a scan that walks only marked sockets
 * needs every TCP socket that is told it has data to be marked, on the
 * enqueue path, with socket storage (bench/socketscan --marked, with
 * bench/sk_mark.c):
 * - mark: on sk_data_ready, a TCP socket (not a listener) gets this
 *   object's socket storage: created on its first event, looked up on the
 *   others, as netstacklat's enqueue program would have to;
 * - mark_slot: the same with a slot per socket hash in an array instead of
 *   socket storage (no helper call);
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

/* The cheaper mark: a slot per socket hash in an array (looked up inline,
 * no helper call) holding the socket and the scan's epoch; a socket is
 * announced (here: counted) once per epoch, when its slot does not hold it
 * with the current epoch. */
#define MARK_SLOTS 16384
struct mark_slot {
  __u64 sk;
  __u32 epoch;
  __u32 pad;
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, MARK_SLOTS);
  __type(key, __u32);
  __type(value, struct mark_slot);
} mark_slots SEC(".maps");
__u32 mark_epoch = 1;
__u64 mark_announced = 0;

SEC("tp_btf/sk_data_ready")
int BPF_PROG(mark_slot, struct sock *sk) {
  if (sk->sk_protocol != 6 /* IPPROTO_TCP */ ||
      sk->__sk_common.skc_state == TCP_LISTEN)
    return 0;
  __u32 h = sk->__sk_common.skc_hash;
  __u32 k = (h ^ (h >> 16)) & (MARK_SLOTS - 1);
  struct mark_slot *s = bpf_map_lookup_elem(&mark_slots, &k);
  __u32 epoch = mark_epoch;
  if (!s || (s->sk == (__u64)sk && s->epoch == epoch))
    return 0;
  s->sk = (__u64)sk;
  s->epoch = epoch;
  __sync_fetch_and_add(&mark_announced, 1);
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
