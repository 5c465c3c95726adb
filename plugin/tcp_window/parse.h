// SPDX-License-Identifier: GPL-2.0-only
/* Pure readers of the tcp_window feature (no I/O, no globals): the "TCP:"
 * line of /proc/net/sockstat, /proc/sys/net/ipv4/tcp_mem, and a walk over a
 * buffer of NETLINK_SOCK_DIAG inet_diag replies. Every buffer is (buf, len),
 * need not be NUL-terminated nor aligned, and is never read past len: the
 * sock_diag walk is fuzzed. */
#ifndef EBPF_TCP_WINDOW_PARSE_H
#define EBPF_TCP_WINDOW_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The "mem" field of the "TCP:" line of /proc/net/sockstat, in pages:
 *   TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 114
 * Returns 0, -ENOENT when there is no TCP line or it has no mem field,
 * -EINVAL when the value is not a decimal number, -ERANGE on overflow. */
int sockstat_tcp_mem(const char *buf, size_t len, uint64_t *pages);

/* /proc/sys/net/ipv4/tcp_mem: exactly three decimal numbers (pages: low,
 * pressure, max) separated by blanks, optional final newline.
 * Returns 0, -EINVAL when malformed, -ERANGE on overflow. */
int tcp_mem_parse(const char *buf, size_t len, uint64_t out[3]);

/* One socket of a dump, as the walk hands it to stall_acc.each. */
struct diag_sock {
  uint64_t cookie;         /* the kernel's socket cookie: unique per boot */
  uint32_t inode;          /* 0 for a socket no file refers to */
  uint32_t rqueue;         /* unread bytes (Recv-Q) */
  uint32_t last_data_recv; /* ms since data last arrived; when stalled */
  uint32_t bound_if;       /* the device it is bound to (idiag_if), or 0 */
  uint16_t sport, dport;   /* host order; sport is the local port */
  uint8_t family;          /* AF_INET or AF_INET6 */
  uint8_t stalled;         /* counted as stalled */
  uint8_t src[16], dst[16]; /* network order; IPv4 in the first 4 bytes */
  uint64_t cgroup;          /* the socket's cgroup id; 0: unknown */
};

struct stall_acc {
  /* Set by the caller (optional): called for every socket of ours that
   * is not listening, stalled or not, in the order of the dump. */
  void (*each)(const struct diag_sock *s, void *arg);
  void *arg;
  uint64_t sockets;       /* inet_diag messages seen */
  uint64_t stalled;       /* unread data, nothing received for > limit */
  uint64_t stalled_bytes; /* sum of their idiag_rqueue */
  uint64_t no_info;       /* unread data but no usable INET_DIAG_INFO */
  uint64_t foreign;       /* messages of another request, ignored */
  uint64_t interrupted;   /* messages flagged NLM_F_DUMP_INTR */
};

/* Walks one recv() worth of netlink messages of an inet_diag dump and adds
 * to *acc. Only messages whose nlmsg_seq is `seq` (the request's) count:
 * others (the late replies of an earlier request that failed or timed out)
 * are skipped whatever their type, DONE and ERROR included, and counted in
 * acc->foreign. A message of ours flagged NLM_F_DUMP_INTR (the kernel's
 * tables changed during the dump, so sockets may be missing or repeated) is
 * still walked and counted in acc->interrupted: the caller decides.
 * A socket counts as stalled when idiag_rqueue > 0 and
 * tcp_info.tcpi_last_data_recv > stalled_ms. Listening sockets (whose
 * rqueue is the accept backlog) are skipped. acc->each, when set, sees
 * every other socket of ours (interrupted dumps included).
 * Returns 1 when our NLMSG_DONE was seen (the dump is complete), 0 when
 * more is to come, -EBADMSG for a malformed buffer, or the negative errno
 * of our NLMSG_ERROR reply (-EPROTO if that errno is 0 or out of range). */
int sockdiag_walk(const void *buf, size_t len, uint32_t seq,
                  uint32_t stalled_ms, struct stall_acc *acc);

/* Walks one recv() worth of replies to a batch of n exact sock_diag
 * requests (one socket each, NLM_F_REQUEST without NLM_F_DUMP), whose
 * nlmsg_seq are seq0 .. seq0 + n - 1. A socket reply counts and is handed
 * to acc->each as in sockdiag_walk; an NLMSG_ERROR of the batch answers a
 * request whose socket is gone (ENOENT) or could not be looked up. Messages
 * of other sequence numbers are skipped and counted in acc->foreign.
 * Returns the number of the batch's requests answered in buf, or
 * -EBADMSG for a malformed buffer. */
int sockdiag_exact_walk(const void *buf, size_t len, uint32_t seq0,
                        uint32_t n, uint32_t stalled_ms,
                        struct stall_acc *acc);

/* Walks the records of the BPF iterator scan (struct tcpw_scan_rec,
 * bpf/tcp_window/tcp_window.h) in buf, whole records only, and adds to *acc as
 * sockdiag_walk does for the same sockets: stalled when rqueue > 0 and
 * last_data_recv > stalled_ms; acc->each sees every record. Returns the
 * number of bytes used (a multiple of the record size; the rest is the
 * start of a record the next read completes). */
size_t scanrec_walk(const void *buf, size_t len, uint32_t stalled_ms,
                    struct stall_acc *acc);

#endif
