// SPDX-License-Identifier: GPL-2.0
/* A socket's local and remote address into laddr/raddr: 4 bytes for
 * AF_INET, 16 for the others. Included by BPF code after vmlinux.h and
 * bpf_core_read.h.
 *
 * A kernel built without IPv6 (CONFIG_IPV6=n) has no skc_v6_* fields in
 * struct sock_common. libbpf then poisons the instructions that read them,
 * and the verifier refuses a program that can reach a poisoned one (a
 * runtime family test does not hide it): the reads sit behind
 * bpf_core_field_exists(), a constant at load time, so that on such a
 * kernel the branch is dead and dropped. Such a kernel has no AF_INET6
 * socket to miss. */
#ifndef SK_ADDR_H
#define SK_ADDR_H

static __always_inline void sk_addrs(const struct sock *sk, __u16 family,
                                     void *laddr, void *raddr) {
  if (family == 2 /* AF_INET */) {
    bpf_core_read(laddr, 4, &sk->__sk_common.skc_rcv_saddr);
    bpf_core_read(raddr, 4, &sk->__sk_common.skc_daddr);
  } else if (bpf_core_field_exists(sk->__sk_common.skc_v6_daddr)) {
    bpf_core_read(laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
    bpf_core_read(raddr, 16, &sk->__sk_common.skc_v6_daddr);
  }
}

#endif
