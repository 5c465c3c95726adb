/* The receive path's hooks, shared by bpf/rx/ (the programs on them) and
 * plugin/rx/ (which loads them once for every feature that has a handler
 * there). A feature's handlers are static __always_inline functions in its
 * own BPF header, each switched by that feature's .rodata; the part's
 * programs read what every handler needs once (the socket, the skb) and
 * hand it to each. */
#ifndef RX_HOOKS_H
#define RX_HOOKS_H

/* The points of the stack a received packet passes, in its order. The
 * names are netstacklat's hooks (collectd-ebpf(5)), the part's own
 * vocabulary: a feature names a hook by them. */
enum rx_hook {
  RX_IP_START = 0,
  RX_TCP_START,
  RX_UDP_START,
  RX_TCP_SOCKET_ENQUEUED,
  RX_UDP_SOCKET_ENQUEUED,
  RX_TCP_SOCKET_READ,
  RX_UDP_SOCKET_READ,
  RX_NHOOKS,
};

#endif
