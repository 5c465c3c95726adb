// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's TCP memory: the kernel's TCP memory in use
 * (/proc/net/sockstat) against net.ipv4.tcp_mem's three limits, both
 * host-wide and read in collectd's own namespace (tcp_mem exists only in
 * the initial one). The parsers are parse.c's. */
#include "tcp_window/internal.h"

#include "tcp_window/parse.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

static int mem_fd_sockstat = -1, mem_fd_tcp_mem = -1;
static long page_size;

static int pread_all(int fd, char *buf, size_t len, size_t *got) {
  ssize_t n = pread(fd, buf, len, 0);
  if (n < 0)
    return -errno;
  *got = (size_t)n;
  return 0;
}

void tcpw_mem_read(value_list_t *vl) {
  char buf[1024];
  size_t n = 0;
  uint64_t used, lim[3];
  int err = pread_all(mem_fd_sockstat, buf, sizeof(buf), &n);
  if (!err)
    err = sockstat_tcp_mem(buf, n, &used);
  if (err) {
    E_WARNING(FEATURE ": /proc/net/sockstat: %s", ERRSTR(err));
    return;
  }
  /* Re-read every interval: the sysctl can change at any time. */
  err = pread_all(mem_fd_tcp_mem, buf, sizeof(buf), &n);
  if (!err)
    err = tcp_mem_parse(buf, n, lim);
  if (err) {
    E_WARNING(FEATURE ": /proc/sys/net/ipv4/tcp_mem: %s", ERRSTR(err));
    return;
  }
  double ps = (double)page_size;
  vl_gauge(vl, "memory", "tcp_in_use", (double)used * ps);
  vl_gauge(vl, "memory", "tcp_mem_low", (double)lim[0] * ps);
  vl_gauge(vl, "memory", "tcp_mem_pressure", (double)lim[1] * ps);
  vl_gauge(vl, "memory", "tcp_mem_max", (double)lim[2] * ps);
  /* Above 100 means the host is past the threshold: stock `percent` stops
   * at 100.1, so these use `gauge` (U:U) and are never clipped. */
  vl_gauge(vl, "gauge", "tcp_mem_pressure_percent",
           lim[1] ? 100.0 * (double)used / (double)lim[1] : NAN);
  vl_gauge(vl, "gauge", "tcp_mem_max_percent",
           lim[2] ? 100.0 * (double)used / (double)lim[2] : NAN);
}

int tcpw_mem_init(void) {
  page_size = sysconf(_SC_PAGESIZE);
  mem_fd_sockstat = open("/proc/net/sockstat", O_RDONLY | O_CLOEXEC);
  int err = mem_fd_sockstat < 0 ? -errno : 0;
  if (!err) {
    mem_fd_tcp_mem = open("/proc/sys/net/ipv4/tcp_mem", O_RDONLY | O_CLOEXEC);
    err = mem_fd_tcp_mem < 0 ? -errno : 0;
  }
  if (err) {
    E_WARNING(FEATURE ": TCP memory is not reported: %s", ERRSTR(err));
    return err;
  }
  return 0;
}

void tcpw_mem_free(void) {
  if (mem_fd_sockstat >= 0)
    close(mem_fd_sockstat);
  if (mem_fd_tcp_mem >= 0)
    close(mem_fd_tcp_mem);
  mem_fd_sockstat = mem_fd_tcp_mem = -1;
}
