// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's whole walk by a BPF iterator (bpf/tcp_window/iter.bpf.c),
 * the preferred one: the kernel walks the namespace's TCP sockets and hands
 * on only those with unread data or tracked by the notifications, so the
 * read's cost follows them; sock_diag (sockdiag.c), which hands on every
 * socket, is the fallback. */
#include "tcp_window/internal.h"

#include "common/netns.h"
#include "tcp_window/parse.h"
#include "tcp_window_iter.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct tcp_window_iter_bpf *iskel;
static struct bpf_link *iter_link; /* set: the scan is the iterator's */
static int iter_netns_fd = -1;      /* a named namespace to create it in */
static const char *netns_name;      /* its NetworkNamespace, for WARNINGs */

void tcpw_iter_free(void) {
  bpf_link__destroy(iter_link);
  iter_link = NULL;
  tcp_window_iter_bpf__destroy(iskel);
  iskel = NULL;
  if (iter_netns_fd >= 0)
    close(iter_netns_fd);
  iter_netns_fd = -1;
}

int tcpw_iter_init(const struct netns *ns, const char *name, char *why,
                   size_t len) {
  int err = 0;
  const char *step = "open";
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  iskel = tcp_window_iter_bpf__open_opts(&opts);
  if (!iskel) {
    err = -errno;
    goto fail;
  }
  if ((err = tcp_window_iter_bpf__load(iskel)) != 0) {
    step = err == -EPERM ? "load (needs CAP_BPF and CAP_PERFMON)"
                         : "load (needs iter/tcp, bpf_get_socket_cookie in "
                           "tracing programs (5.12) and the kernel's "
                           "CONFIG_HZ from its config)";
    goto fail;
  }
  step = "attach";
  iter_link = bpf_program__attach_iter(iskel->progs.tcp_window_scan, NULL);
  if (!iter_link) {
    err = -errno;
    goto fail;
  }
  if (ns->kind == NETNS_NAMED) {
    step = "open the namespace";
    iter_netns_fd = netns_open(ns);
    if (iter_netns_fd < 0) {
      err = iter_netns_fd;
      goto fail;
    }
  }
  netns_name = name;
  return 0;
fail:
  snprintf(why, len, "%s: %s", step, ERRSTR(err ? err : -EINVAL));
  tcpw_iter_free();
  return err ? err : -EINVAL;
}

/* The map holds as many as stalled.c tracks (TCPW_TRACK_MAX), so an update
 * fails only when out of memory; then a tracked socket that resumes reads
 * as closed. */
void tcpw_iter_track(uint64_t cookie, bool on) {
  if (!iter_link)
    return;
  int fd = bpf_map__fd(iskel->maps.tcpw_tracked);
  uint8_t one = 1;
  if (on)
    bpf_map_update_elem(fd, &cookie, &one, BPF_ANY);
  else
    bpf_map_delete_elem(fd, &cookie);
}

void tcpw_iter_ntracked(size_t n) {
  if (iter_link)
    iskel->bss->tcpw_ntracked = (uint32_t)n;
}

int tcpw_iter_count(uint32_t ms, struct stall_acc *acc) {
  int back = -1, err = 0;
  /* The iterator walks the namespace of the thread that creates it. */
  if (iter_netns_fd >= 0 && (err = netns_enter_fd(iter_netns_fd, &back)) != 0) {
    E_WARNING(FEATURE ": cannot enter the namespace %s: %s; stalled receivers "
              "are not reported for this interval.",
              netns_name, ERRSTR(err));
    return err;
  }
  int fd = bpf_iter_create(bpf_link__fd(iter_link));
  if (fd < 0)
    err = -errno;
  if (back >= 0)
    netns_leave(back, FEATURE);
  if (err) {
    E_WARNING(FEATURE ": cannot start the socket scan: %s", ERRSTR(err));
    return err;
  }
  tcpw_acc_reset(acc);
  size_t have = 0;
  for (;;) {
    ssize_t n = read(fd, tcpw_diag.buf + have, DIAG_BUF_SIZE - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      err = n < 0 ? -errno : have ? -EBADMSG : 0;
      break;
    }
    have += (size_t)n;
    size_t used = scanrec_walk(tcpw_diag.buf, have, ms, acc);
    memmove(tcpw_diag.buf, tcpw_diag.buf + used, have - used);
    have -= used;
  }
  close(fd);
  if (err)
    E_WARNING(FEATURE ": the socket scan failed: %s", ERRSTR(err));
  return err;
}

bool tcpw_iter_on(void) { return iter_link != NULL; }
