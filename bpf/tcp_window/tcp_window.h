/* Shared between bpf/tcp_window/tcp_window.bpf.c and plugin/tcp_window/. */
#ifndef TCP_WINDOW_H
#define TCP_WINDOW_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Bytes; the value ebpf_exporter's tcp-window-clamps example uses, so that
 * the reference count compares with its dashboards. */
#define TCP_WINDOW_DEFAULT_THRESHOLD 32768

/* The stalled-receiver scan through a BPF iterator over TCP sockets
 * (bpf/tcp_window/iter.bpf.c): one record per socket that sock_diag's walk
 * would hand on (state in TCPW_SCAN_STATES) and that has unread data or is
 * tracked (tcpw_tracked), written with bpf_seq_write. The fields are those
 * of sock_diag's inet_diag_msg and tcp_info the walk reads. */
#define TCPW_SCAN_STATES                                                       \
  ((1u << 1) /* ESTABLISHED */ | (1u << 4) /* FIN_WAIT1 */ |                   \
   (1u << 5) /* FIN_WAIT2 */ | (1u << 8) /* CLOSE_WAIT */ |                    \
   (1u << 9) /* LAST_ACK */ | (1u << 11) /* CLOSING */)
#define TCPW_TRACK_MAX 4096 /* tracked (notified) stalled receivers */

struct tcpw_scan_rec {
  __u64 cookie;         /* bpf_get_socket_cookie, as sock_diag's */
  __u32 inode;          /* sock_i_ino(); 0: no file refers to it */
  __u32 rqueue;         /* max(rcv_nxt - copied_seq, 0): idiag_rqueue */
  __u32 last_data_recv; /* ms: tcpi_last_data_recv */
  __u32 bound_dev_if;   /* skc_bound_dev_if: sock_diag's idiag_if */
  __u16 sport;          /* host order (skc_num) */
  __u16 dport;          /* host order */
  __u8 family;          /* AF_INET or AF_INET6 */
  __u8 pad[3];
  __u8 src[16], dst[16]; /* network order; IPv4 in the first 4 bytes */
  __u64 cgroup;          /* the socket's cgroup id (StalledLimit's shares) */
};

/* Stalled receivers by marked sockets: netstacklat's TCP enqueue program
 * announces each socket that is given data once per epoch (tcp_window
 * bumps the epoch at every scan), in this record on a ring buffer;
 * tcp_window then asks sock_diag about those sockets only (and about the
 * ones still holding unread data), not about every socket. A socket is
 * remembered in one of the TCPW_MARK_WAYS ways of the bucket its hash
 * picks (one 64-byte line): two busy sockets of one bucket do not push
 * each other out, and a fifth announced in the same epoch takes the way
 * of one of them, which is then announced again at its next data, never
 * missed. 16,384 buckets remember 65,536 sockets an epoch (1 MiB). */
#define TCPW_MARK_BUCKETS 16384 /* a power of two */
#define TCPW_MARK_WAYS 4
#define TCPW_MARK_RB_BYTES (4 * 1024 * 1024)

/* Per CPU: the announcements lost to a full ring buffer, and the epoch in
 * which the CPU last found it full (it reserves no more until the next). */
struct tcpw_mark_cpu {
  __u64 lost;
  __u32 full_epoch;
  __u32 pad;
};

struct tcpw_mark_slot {
  __u64 sk;    /* the socket's address, as an identity */
  __u32 epoch; /* the epoch it was last announced in */
  __u32 ports; /* skc_portpair: a new socket at a freed one's address differs */
};

struct tcpw_mark_bucket {
  struct tcpw_mark_slot way[TCPW_MARK_WAYS];
};

struct tcpw_mark_rec {
  /* skc_bound_dev_if: the device a socket is bound to (SO_BINDTODEVICE,
   * a VRF, an IPv6 link-local address), 0 for none. An exact sock_diag
   * request must name it in idiag_if, or the kernel's lookup misses the
   * socket. */
  __u32 bound_dev_if;
  /* The epoch it was announced in: one announced after tcp_window bumped
   * the epoch is not announced again before the next bump, so tcp_window
   * asks about it at the next scan too. */
  __u32 epoch;
  __u16 sport;           /* host order (skc_num): the local port */
  __u16 dport;           /* host order */
  __u8 family;           /* AF_INET or AF_INET6 */
  __u8 pad[3];
  __u8 src[16], dst[16]; /* network order; IPv4 in the first 4 bytes */
};

#endif
