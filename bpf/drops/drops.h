/* Shared between bpf/drops/drops.bpf.c and plugin/drops/names.c, notify.c. */
#ifndef DROPS_H
#define DROPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Kernels without drop reasons (before 5.17): counted per drop location
 * (the caller of kfree_skb), in a hash of at most this many distinct
 * addresses; drops at an address that finds the map full are counted in
 * drops_location_overflow (dispatched under at_other). */
#define DROPS_LOCATIONS_MAX 1024

/* DropNotifications: one record per drop of a packet with a socket or
 * TCP/UDP ports, rate-limited to DropLimit a second for the host. */
struct drops_event {
  __u64 time_ns;  /* bpf_ktime_get_ns() of the drop */
  __u64 cause;    /* the reason, or the location (kernels without) */
  __u64 cgroup;   /* cgroup id of the packet's socket; 0: none */
  __u32 netns;    /* inode number of its network namespace; 0: unknown */
  __u32 ifindex;  /* the device it arrived on (or leaves by); 0: unknown */
  __u16 family;   /* AF_INET, AF_INET6; 0: addresses unknown */
  __u8 proto;     /* IPPROTO_TCP, IPPROTO_UDP, other; 0: unknown */
  __u8 has_ports;
  __u16 lport, rport;
  __u8 laddr[16], raddr[16];
  __u8 received; /* 1: a received packet (local = its destination) */
  __u8 pad[7];
};

#endif
