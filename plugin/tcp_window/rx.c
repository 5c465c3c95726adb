// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window on the receive path (plugin/rx/rx.h; its handlers in
 * bpf/tcp_window/rx.h): the stalled receivers' marks, for which it wants
 * tcp_socket_enqueued in any flavour, and the clamped wakeups, counted by
 * the path's sk_data_ready program when that runs anyway, so that a packet
 * pays one program entry there (issue 23). */
#include "tcp_window/internal.h"

#include "rx.skel.h"
#include "rx/rx.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

static struct {
  bool marks;   /* the marks' handler compiled in, their maps full size */
  bool wakeups; /* the wakeups' handler compiled in */
  struct rx_bpf *skel;
} tr;

static void tcpw_rx_open(void *ctx, struct rx_bpf *skel, bool joined) {
  (void)ctx;
  skel->rodata->tcpw_rx_marks = joined && tr.marks;
  skel->rodata->tcpw_rx_wakeups = joined && tr.wakeups;
  /* Without the marks: one page of ring and one bucket. */
  if (!(joined && tr.marks)) {
    long page = sysconf(_SC_PAGESIZE);
    bpf_map__set_max_entries(skel->maps.tcpw_marks,
                             page > 0 ? (__u32)page : 4096);
    bpf_map__set_max_entries(skel->maps.tcpw_mark_slots, 1);
  }
  tr.skel = joined ? skel : NULL;
}

static void tcpw_rx_gone(void *ctx) {
  (void)ctx;
  tr.skel = NULL;
}

struct rx_client tcpw_rx = {
    .feature = FEATURE, .open = tcpw_rx_open, .gone = tcpw_rx_gone};

void tcpw_rx_join(bool marks, bool wakeups) {
  tr.marks = marks;
  tr.wakeups = wakeups;
  tcpw_rx.want[RX_TCP_SOCKET_ENQUEUED] = marks;
  if (marks || wakeups)
    rx_join(&tcpw_rx);
}

void tcpw_rx_leave(void) {
  rx_leave(&tcpw_rx);
  tr.skel = NULL;
  tr.marks = tr.wakeups = false;
}

/* ------------------------------------------------------- clamped wakeups */

int tcpw_rx_serve_wakeups(uint32_t threshold, uint32_t netns_inum) {
  if (!tr.skel || !tr.wakeups || !threshold ||
      rx_flavour(RX_TCP_SOCKET_ENQUEUED) != FLAVOUR_TP)
    return -ENOENT;
  tr.skel->bss->tcpw_netns = netns_inum;
  /* The namespace before the switch: the program reads it after. */
  __atomic_store_n(&tr.skel->bss->tcpw_threshold, threshold,
                   __ATOMIC_RELEASE);
  return 0;
}

struct bpf_map *tcpw_rx_wakeups_map(void) {
  return tr.skel && tr.skel->bss->tcpw_threshold
             ? tr.skel->maps.tcpw_rx_wakeups_total
             : NULL;
}

void tcpw_rx_unserve_wakeups(void) {
  if (tr.skel)
    __atomic_store_n(&tr.skel->bss->tcpw_threshold, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ the marks */

int tcpw_rx_serve_marks(uint32_t netns_inum, int *marks_fd) {
  if (!tr.skel || !tr.marks || rx_flavour(RX_TCP_SOCKET_ENQUEUED) < 0)
    return -ENOENT;
  tr.skel->bss->tcpw_mark_netns = netns_inum;
  *marks_fd = bpf_map__fd(tr.skel->maps.tcpw_marks);
  return 0;
}

int tcpw_rx_epoch(uint32_t epoch, uint64_t *lost) {
  if (!tr.skel)
    return -ENOENT;
  /* The namespace before the first epoch: the program reads it after. */
  __atomic_store_n(&tr.skel->bss->tcpw_epoch, epoch, __ATOMIC_RELEASE);
  /* Per CPU: a storm of lost marks writes no shared line. Each CPU's
   * value is a struct tcpw_mark_cpu, whose first field is the count
   * (per-CPU values are 8-byte aligned). */
  const struct bpf_map *m = tr.skel->maps.tcpw_marks_lost;
  uint32_t zero = 0;
  int ncpu = libbpf_num_possible_cpus();
  size_t words = (bpf_map__value_size(m) + 7) / 8;
  *lost = 0;
  if (ncpu <= 0 || !words)
    return 0;
  uint64_t v[(size_t)ncpu * words];
  if (bpf_map_lookup_elem(bpf_map__fd(m), &zero, v) == 0)
    for (int c = 0; c < ncpu; c++)
      *lost += v[(size_t)c * words];
  return 0;
}

void tcpw_rx_unserve_marks(void) {
  if (tr.skel)
    __atomic_store_n(&tr.skel->bss->tcpw_epoch, 0, __ATOMIC_RELEASE);
}
