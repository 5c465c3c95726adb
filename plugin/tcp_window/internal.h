// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's parts as they see each other. Not to be confused with
 * "tcp_window/tcp_window.h", the header shared with the BPF side
 * (bpf/tcp_window/tcp_window.h). tcp_window.c parses the block and starts,
 * reads and stops the parts, which start and fail independently:
 *   clamps.c   receive-window clamps (BPF)
 *   tcp_mem.c  TCP memory against net.ipv4.tcp_mem */
#ifndef EBPF_TCP_WINDOW_INTERNAL_H
#define EBPF_TCP_WINDOW_INTERNAL_H

#include "core/ebpf.h"

#include <stdbool.h>
#include <stdint.h>

#define FEATURE "tcp_window"

/* The block's settings, parsed by tcp_window.c, which gives them to the
 * parts it starts. */
struct tcpw_cfg {
  long long threshold;
  double stalled_after;
  bool clamps, transitions, tcp_memory, stalled;
  bool stalled_notify; /* a notification per socket that stalls and ends */
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
void tcpw_clamps_read(value_list_t *vl);
void tcpw_clamps_free(void);
/* The loaded BPF object, for self-monitoring; NULL when none. */
struct bpf_object *tcpw_clamps_object(void);

/* ---- tcp_mem.c */
/* 0, or a negative errno after one WARNING. */
int tcpw_mem_init(void);
void tcpw_mem_read(value_list_t *vl);
void tcpw_mem_free(void);

#endif
