// SPDX-License-Identifier: GPL-2.0
/* The receive path's programs on a socket's read: tcp_socket_read and
 * udp_socket_read, each flavour reading the receive time or the skb once
 * and calling the handlers.
 *
 * Included by rx.bpf.c after enqueued.h, in hook order. */
#ifndef RX_READ_H
#define RX_READ_H

/* ===================================================== tcp_socket_read */

/* The receive time in tss->ts[0]: a struct timespec64 in the kernels of
 * Debian 11 to 13, a ktime_t (nanoseconds, CLOCK_REALTIME like skb->tstamp)
 * in newer ones (seen in trixie-backports' 7.3: the struct is 24 bytes
 * there). CO-RE picks the layout at load: the other branch's relocation
 * fails and the verifier drops it as dead code. */
struct scm_timestamping_internal___ktime {
  ktime_t ts[3];
} __attribute__((preserve_access_index));

static __always_inline __u64 tss_ns(struct scm_timestamping_internal *tss) {
  if (bpf_core_field_exists(tss->ts[0].tv_nsec))
    return tss->ts[0].tv_sec * 1000000000ULL + tss->ts[0].tv_nsec;
  return ((struct scm_timestamping_internal___ktime *)tss)->ts[0];
}

static __always_inline __u64 tss_ns_probed(struct scm_timestamping_internal *tss) {
  if (bpf_core_field_exists(tss->ts[0].tv_nsec)) {
    struct timespec64 ts;
    bpf_probe_read_kernel(&ts, sizeof(ts), &tss->ts[0]);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
  }
  return BPF_CORE_READ((struct scm_timestamping_internal___ktime *)tss, ts[0]);
}

SEC("fentry/tcp_recv_timestamp")
int BPF_PROG(tcp_read_fentry, struct msghdr *msg, const struct sock *sk,
             struct scm_timestamping_internal *tss) {
  nsl_on_tcp_read(sk, tss_ns(tss), false);
  return 0;
}

/* Fires for every skb (or part of one) copied to user space, by any
 * protocol: keep TCP. */
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(tcp_read_tp, const struct sk_buff *skb, int len) {
  const struct sock *sk = skb->sk;
  if (sk && is_proto(sk, 6))
    nsl_on_tcp_copied(sk, skb);
  return 0;
}

SEC("kprobe/tcp_recv_timestamp")
int BPF_KPROBE(tcp_read_kprobe, struct msghdr *msg, const struct sock *sk,
               struct scm_timestamping_internal *tss) {
  nsl_on_tcp_read(sk, tss_ns_probed(tss), true);
  return 0;
}

/* ===================================================== udp_socket_read */

SEC("fentry/skb_consume_udp")
int BPF_PROG(udp_read_fentry, struct sock *sk, struct sk_buff *skb, int len) {
  nsl_on_udp_read(sk, skb, len, false);
  return 0;
}

SEC("kprobe/skb_consume_udp")
int BPF_KPROBE(udp_read_kprobe, struct sock *sk, struct sk_buff *skb, int len) {
  nsl_on_udp_read(sk, skb, len, true);
  return 0;
}

#endif /* RX_READ_H */
