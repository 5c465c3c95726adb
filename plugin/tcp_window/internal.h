// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's parts as they see each other. Not to be confused with
 * "tcp_window/tcp_window.h", the header shared with the BPF side
 * (bpf/tcp_window/tcp_window.h). tcp_window.c parses the block and starts,
 * reads and stops the parts, which start and fail independently:
 *   rx.c       its handlers on the receive path (plugin/rx/): the
 *              marks of the stalled receivers, the clamped wakeups
 *   clamps.c   receive-window clamps (BPF)
 *   tcp_mem.c  TCP memory against net.ipv4.tcp_mem
 *   the stalled receivers, each file using only those listed before it:
 *     sockdiag.c the sock_diag socket and its whole walk
 *     iter.c     the whole walk by a BPF iterator, where it loads
 *     marks.c    the scans: of the sockets announced by the receive
 *                path's programs where they run, else the whole walks
 *     owners.c   who holds a socket that stalls
 *     stalled.c  the counts each read, the tracked set and notifications */
#ifndef EBPF_TCP_WINDOW_INTERNAL_H
#define EBPF_TCP_WINDOW_INTERNAL_H

#include "core/ebpf.h"
#include "tcp_window/parse.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netns;

#define FEATURE "tcp_window"

/* The block's settings, parsed by tcp_window.c, which gives them to the
 * parts it starts. */
struct tcpw_cfg {
  long long threshold;
  double stalled_after;
  bool clamps, transitions, tcp_memory, stalled;
  bool stalled_notify; /* a notification per socket that stalls and ends */
  long long stalled_limit; /* of those, at most this many a second */
  char *netns; /* path of a network namespace file, or NULL */
};

/* A part's read dispatches its values into vl: tcp_window.c's, the
 * identity of every tcp_window value (plugin "tcp_window", no
 * plugin_instance). */

/* ---- clamps.c */
/* Load and attach the clamp counters (netns_ino: the BPF filter, 0 all);
 * cfg stays the part's until tcpw_clamps_free. 0, or a negative errno
 * after one WARNING. */
int tcpw_clamps_init(const struct tcpw_cfg *cfg, uint32_t netns_ino);
/* Whether the clamped wakeups may be counted on the receive path (the
 * tracepoint flavour, without ClampTransitions), and after the path's
 * start, whether they are: then ours is detached. */
bool tcpw_clamps_may_ride(void);
void tcpw_clamps_start(void);
void tcpw_clamps_read(value_list_t *vl);
void tcpw_clamps_free(void);
/* The loaded BPF object, for self-monitoring; NULL when none. */
struct bpf_object *tcpw_clamps_object(void);

/* ---- rx.c: tcp_window on the receive path (plugin/rx/rx.h) */
/* The client the core hands to the part (struct ebpf_feature's rx). */
extern struct rx_client tcpw_rx;
/* At init: joins the receive path with the marks' handler (wanting
 * tcp_socket_enqueued) and the wakeups' (riding on the path's
 * sk_data_ready program where it runs), each when true. */
void tcpw_rx_join(bool marks, bool wakeups);
void tcpw_rx_leave(void);
/* The clamped wakeups counted on the receive path's sk_data_ready program
 * (rcv_ssthresh below threshold; netns_inum 0: every namespace):
 * tcpw_rx_serve_wakeups() returns 0 when they are, -ENOENT when that
 * program does not run; the per-CPU counter is then
 * tcpw_rx_wakeups_map() (NULL once the path is gone: ask at every
 * read), and tcpw_rx_unserve_wakeups() stops it. */
int tcpw_rx_serve_wakeups(uint32_t threshold, uint32_t netns_inum);
struct bpf_map *tcpw_rx_wakeups_map(void);
void tcpw_rx_unserve_wakeups(void);
/* The stalled receivers' marks (tcp_window.h): while the path's
 * tcp_socket_enqueued programs run (any flavour), every TCP socket of
 * namespace netns_inum (0: all) given data is announced once per epoch,
 * as struct tcpw_mark_rec on the ring buffer *marks_fd.
 * tcpw_rx_serve_marks() returns 0 when it can, -ENOENT when not; the
 * announcements start with the first epoch other than 0 set by
 * tcpw_rx_epoch() (which also gives the count of announcements lost to a
 * full ring buffer; -ENOENT once the path is gone), and
 * tcpw_rx_unserve_marks() stops them. */
int tcpw_rx_serve_marks(uint32_t netns_inum, int *marks_fd);
int tcpw_rx_epoch(uint32_t epoch, uint64_t *lost);
void tcpw_rx_unserve_marks(void);

/* ---- tcp_mem.c */
/* 0, or a negative errno after one WARNING. */
int tcpw_mem_init(void);
void tcpw_mem_read(value_list_t *vl);
void tcpw_mem_free(void);

/* ---- the stalled receivers: counts of every socket into a struct
 * stall_acc (parse.h), whose per-socket callback each part may wrap */

/* A count starts afresh: the per-socket callback stays, and is called once
 * with NULL: what it gathered from an earlier, failed or interrupted, dump
 * is to be dropped. */
static inline void tcpw_acc_reset(struct stall_acc *acc) {
  *acc = (struct stall_acc){.each = acc->each, .arg = acc->arg};
  if (acc->each)
    acc->each(NULL, acc->arg);
}

/* ---- sockdiag.c */
/* The sock_diag socket and the buffer of the scans (its replies, or the
 * iterator's records). */
struct tcpw_diag {
  int fd;             /* NETLINK_SOCK_DIAG, connected; -1 when not open */
  uint32_t seq;       /* nlmsg_seq of the last request */
  unsigned char *buf; /* DIAG_BUF_SIZE bytes, made and freed by stalled.c */
};
#define DIAG_BUF_SIZE (64 * 1024)
extern struct tcpw_diag tcpw_diag;
/* Open it in the calling thread's namespace: 0 or a negative errno. */
int tcpw_diag_open(void);
/* One whole count of the sockets into *acc by dumps: 0 or a negative errno
 * (after one WARNING). */
int tcpw_diag_walk(uint32_t ms, struct stall_acc *acc);
/* Drop whatever a failed request left in the socket. */
void tcpw_diag_drain(void);
void tcpw_diag_close(void);

/* ---- iter.c */
/* Load and attach the iterator (name: the NetworkNamespace option, for
 * WARNINGs); on failure a negative errno, and *why says what failed. */
int tcpw_iter_init(const struct netns *ns, const char *name, char *why,
                   size_t len);
bool tcpw_iter_on(void); /* loaded: the whole walk is the iterator's */
/* One whole count of the sockets into *acc: 0 or a negative errno (after
 * one WARNING). */
int tcpw_iter_count(uint32_t ms, struct stall_acc *acc);
/* The notifications' tracked sockets, mirrored into the iterator's map:
 * the scan hands them on with or without unread data. */
void tcpw_iter_track(uint64_t cookie, bool on);
void tcpw_iter_ntracked(size_t n);
void tcpw_iter_free(void);

/* ---- marks.c */
/* Whether the marked scans may run (not forced off by a test). */
bool tcpw_marks_wanted(void);
/* After the walks are set up and the receive path's start: marked scans
 * where they can run, else whole walks (one INFO line says which). 0, or
 * a negative errno (after one WARNING) when the stalled receivers are not
 * to be reported at all. */
int tcpw_marks_start(uint32_t netns_ino);
/* One whole count of the sockets into *acc, by a marked scan or a whole
 * walk: 0 or a negative errno (after one WARNING). */
int tcpw_scan(uint32_t ms, struct stall_acc *acc);
/* Whole walks made since start, whatever their cause (every scan while the
 * marked scans cannot run): operations-stalled_whole_walks. */
uint64_t tcpw_whole_walks(void);
void tcpw_marks_free(void);

/* ---- owners.c: the owners of the stalled sockets stalled.c tracks */
struct st_entry { /* a tracked stalled socket */
  uint64_t cookie;
  uint32_t inode, rqueue, last_ms; /* rqueue, last_ms: when last stalled */
  uint32_t seen_gen, stalled_gen; /* the last dump that saw it (stalled) */
  /* Where its notifications stand (StalledLimit holds some back): */
  enum st_state { ST_WAITING, /* its WARNING is due, not sent yet */
         ST_NOTIFIED, /* WARNING sent, still stalled */
         ST_ENDING, /* stalled no more, its OKAY due, not sent yet */
         ST_GONE /* its OKAY sent in this read: leaves at its end */
  } state;
  uint32_t due_gen; /* the dump its due notification became due */
  uint64_t cgroup_id; /* the socket's (StalledLimit's shares); 0: unknown */
  uint32_t rank;      /* st_due: its place among its cgroup's due ones */
  bool held;        /* that notification was held back (counted once) */
  bool closed;      /* ST_ENDING: gone ("closed"), else "resumed" */
  int32_t pid;                     /* 0: no owner found */
  char comm[17];                   /* "" when unknown */
  char cgroup[EBPF_NAME_LEN];      /* "" when unknown */
  char local[56], remote[56];      /* "[v6]:port" or "v4:port" */
};

struct st_cand { /* one that stalled in this dump */
  struct diag_sock s;
  int32_t pid;
  bool described;              /* comm and cgroup set (by owners_find) */
  char comm[17];
  char cgroup[EBPF_NAME_LEN];
};

/* One INFO line says which way the owners are looked up. */
void tcpw_owners_init(void);
/* The pid of the process holding each candidate's inode (0: none found),
 * and, where the BPF iterator found it, its comm and cgroup. */
void tcpw_owners_find(struct st_cand *c, size_t n);
/* e->pid's comm and cgroup ("" when unknown). */
void tcpw_owners_describe(struct st_entry *e);
void tcpw_owners_free(void);

/* ---- stalled.c */
/* The scan (the BPF iterator where it loads, else sock_diag; one INFO line
 * says why), in the namespace of the calling thread, and the tracked set
 * for the notifications; cfg stays the part's until tcpw_stalled_free.
 * 0, or a negative errno after one WARNING. */
int tcpw_stalled_init(const struct tcpw_cfg *cfg, const struct netns *ns);
void tcpw_stalled_read(value_list_t *vl);
void tcpw_stalled_free(void);

#endif
