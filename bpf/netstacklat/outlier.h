// SPDX-License-Identifier: GPL-2.0
/* netstacklat's OutlierThreshold path: outlier() sends one event above the
 * threshold to user space as a struct nsl_outlier (rate-limited to
 * OutlierLimit a second), or counts it as suppressed; outlier_skb() fills
 * in the packet's addresses. Called from record() (record.h) only when
 * NSL_OUTLIERS is 1 (outliers.bpf.c); the maps are in every
 * object, so that the three share netstacklat's skeleton.
 *
 * Included by netstacklat.bpf.c, after what it uses from there: the
 * settings targ_outlier_limit and realtime_offset_ns, and sk_rx_ifindex()
 * (and, as every nsl_*.h, vmlinux.h, libbpf's headers and netstacklat.h). */
#ifndef NSL_OUTLIER_H
#define NSL_OUTLIER_H

#include "common/rate_limit.h"
#include "common/sk_addr.h"

/* OutlierThreshold: the records (64 KiB; one page when off, set before
 * load), the rate limit (slot RATE_SHARE_SLOTS: the host's OutlierLimit;
 * the others: each cgroup's share of it, by the socket's cgroup; the
 * packet hooks, which know no socket, share slot 0's), and the events
 * above the threshold that were not sent (over OutlierLimit or the
 * cgroup's share, or the ring buffer full). */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 * 1024);
} netstacklat_outliers SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, RATE_SHARE_SLOTS + 1);
  __type(key, __u32);
  __type(value, struct rate_window);
} netstacklat_outlier_rate SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} netstacklat_outliers_suppressed SEC(".maps");

/* The packet's addresses from its IP header, and its ports when the
 * header that follows is TCP or UDP and lies in the linear data (else
 * has_ports stays 0). ip_start runs before the network header is set:
 * there the IP header is at skb->data; tcp_start and udp_start run after. */
static __always_inline void outlier_skb(struct nsl_outlier *o, __u32 hook,
                                        const struct sk_buff *skb) {
  unsigned char *head = BPF_CORE_READ(skb, head);
  __u32 nh = hook == NSL_IP_START
                 ? (__u32)(BPF_CORE_READ(skb, data) - head)
                 : BPF_CORE_READ(skb, network_header);
  __u32 tail = BPF_CORE_READ(skb, tail), l4;
  __u8 v = 0;
  if (nh + 20 > tail) /* the smallest IP header */
    return;
  bpf_probe_read_kernel(&v, 1, head + nh);
  if (v >> 4 == 4) {
    struct iphdr ip;
    bpf_probe_read_kernel(&ip, sizeof(ip), head + nh);
    o->family = 2; /* AF_INET */
    o->proto = ip.protocol;
    __builtin_memcpy(o->laddr, &ip.daddr, 4);
    __builtin_memcpy(o->raddr, &ip.saddr, 4);
    l4 = nh + ip.ihl * 4;
  } else if (v >> 4 == 6 && nh + 40 <= tail) {
    struct ipv6hdr ip6;
    bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh);
    o->family = 10; /* AF_INET6 */
    o->proto = ip6.nexthdr; /* TCP/UDP right after the fixed header only */
    __builtin_memcpy(o->laddr, &ip6.daddr, 16);
    __builtin_memcpy(o->raddr, &ip6.saddr, 16);
    l4 = nh + 40;
  } else
    return;
  __be16 ports[2];
  if ((o->proto == 6 || o->proto == 17) && l4 + 4 <= tail &&
      bpf_probe_read_kernel(ports, sizeof(ports), head + l4) == 0) {
    o->rport = bpf_ntohs(ports[0]);
    o->lport = bpf_ntohs(ports[1]);
    o->has_ports = 1;
  }
}

/* One event above OutlierThreshold: a record to user space, if this
 * second's OutlierLimit and the socket's cgroup's share of it are not used
 * up and the ring buffer has room; else it is counted as suppressed. The
 * limit is read first, with plain loads: an event over it writes no
 * shared line. Reads are probe reads in every flavour: this runs for a
 * few events a second, not per packet. sk: the socket of a socket hook
 * (addresses, queue, cgroup, namespace); skb: the packet,
 * when it is safe to read here: it gives the addresses of packet hooks and
 * of udp_socket_read (an unconnected socket has no remote), and the
 * interface. iif: the interface where neither does (0: none known).
 * Arguments, not values read by the caller: with the path off nothing is
 * read for it. */
static __always_inline void outlier(__u32 hook, __u64 now, __u64 delta,
                                    const struct sock *sk,
                                    const struct sk_buff *skb,
                                    __u32 ifindex) {
  __u32 zero = 0, host = RATE_SHARE_SLOTS, share = 0;
  struct rate_window *all =
      bpf_map_lookup_elem(&netstacklat_outlier_rate, &host);
  struct rate_window *mine = NULL;
  struct nsl_outlier *o = NULL;
  __u64 cgroup = 0;
  /* The host's window first: over it, not even the cgroup is read. */
  if (all && rate_room(all, now / 1000000000ULL, targ_outlier_limit)) {
    cgroup = sk ? BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id) : 0;
    if (cgroup)
      share = rate_share_slot(cgroup);
    mine = bpf_map_lookup_elem(&netstacklat_outlier_rate, &share);
  }
  if (mine && rate_room_shared(all, mine, now, targ_outlier_limit))
    o = bpf_ringbuf_reserve(&netstacklat_outliers, sizeof(*o), 0);
  if (!o) {
    __u64 *n = bpf_map_lookup_elem(&netstacklat_outliers_suppressed, &zero);
    if (n)
      (*n)++;
    return;
  }
  rate_take_shared(all, mine, now);
  __builtin_memset(o, 0, sizeof(*o));
  o->time_ns = now + realtime_offset_ns;
  o->latency_ns = delta;
  o->hook = hook;
  if (ifindex)
    o->ifindex = ifindex;
  else if (skb)
    o->ifindex = hook == NSL_IP_START ? BPF_CORE_READ(skb, dev, ifindex)
                                      : BPF_CORE_READ(skb, skb_iif);
  else if (sk && hook == NSL_TCP_SOCKET_READ)
    o->ifindex = sk_rx_ifindex(sk, true);
  bool from_skb = skb && (!sk || hook == NSL_UDP_SOCKET_READ);
  if (from_skb)
    outlier_skb(o, hook, skb);
  if (sk && !from_skb) {
    __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
    o->family = family;
    o->proto = (__u8)BPF_CORE_READ(sk, sk_protocol);
    o->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
    o->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
    o->has_ports = 1;
    sk_addrs(sk, family, o->laddr, o->raddr);
  }
  if (sk) {
    o->qlen = BPF_CORE_READ(sk, sk_receive_queue.qlen);
    o->cgroup = cgroup;
    o->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  } else if (skb)
    o->netns = BPF_CORE_READ(skb, dev, nd_net.net, ns.inum);
  /* Socket reads run in the reader's context: name it. */
  if (hook == NSL_TCP_SOCKET_READ || hook == NSL_UDP_SOCKET_READ) {
    o->pid = bpf_get_current_pid_tgid() >> 32;
    bpf_get_current_comm(o->comm, sizeof(o->comm));
  }
  bpf_ringbuf_submit(o, 0);
}

#endif /* NSL_OUTLIER_H */
