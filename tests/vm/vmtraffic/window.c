// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic clamp and stall: tcp_window's witnesses, a receiver whose
 * window the kernel clamps and a receiver that stalls among idle
 * sockets. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* TcpExt PruneCalled of /proc/net/netstat (the kernel's count of receive
 * queue prunes, the clamp's witness), or -1. */
static long prune_called(void) {
  FILE *f = fopen("/proc/net/netstat", "r");
  char names[4096], vals[4096];
  long v = -1;
  if (!f)
    return -1;
  while (v < 0 && fgets(names, sizeof(names), f) && fgets(vals, sizeof(vals), f)) {
    if (strncmp(names, "TcpExt:", 7))
      continue;
    char *sn, *sv, *n = strtok_r(names, " \n", &sn), *x = strtok_r(vals, " \n", &sv);
    for (; n && x; n = strtok_r(NULL, " \n", &sn), x = strtok_r(NULL, " \n", &sv))
      if (!strcmp(n, "PruneCalled"))
        v = atol(x);
  }
  fclose(f);
  return v;
}

struct clamp_reader {
  int fd;
  double until;          /* read until then at the latest ... */
  long long want;        /* ... or until this many bytes were read */
  volatile int stalled;  /* set once the reader shrank its buffer */
};

static void *clamp_read(void *arg) {
  struct clamp_reader *r = arg;
  static char buf[1 << 16];
  long long got = 0;
  while (now_s() < r->until && got < r->want) {
    struct pollfd p = {r->fd, POLLIN, 0};
    ssize_t n = 0;
    if (poll(&p, 1, 100) > 0 && (n = read(r->fd, buf, sizeof(buf))) <= 0)
      break;
    got += n;
  }
  int small = 4096;
  setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  __atomic_store_n(&r->stalled, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* The reader reads (8 MiB, or half of SECS at most: the window opens),
 * then stops and shrinks its buffer; the sender goes on until the kernel
 * has pruned (PruneCalled rose) and for a little while after, so that the
 * clamped socket sees more segments, or until SECS. */
int clamp(int port, double secs) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, (void *)&a, sizeof(a)) || listen(ls, 1))
    die("clamp: listen");
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, (void *)&a, sizeof(a)))
    die("clamp: connect");
  int c = accept(ls, NULL, NULL);
  if (c < 0)
    die("clamp: accept");
  double start = now_s(), end = start + secs, pruned_at = 0;
  struct clamp_reader r = {c, start + secs / 2, 8 << 20, 0};
  pthread_t t;
  pthread_create(&t, NULL, clamp_read, &r);
  static char buf[1 << 16];
  memset(buf, 'x', sizeof(buf));
  long p0 = prune_called();
  while (now_s() < end) {
    struct pollfd p = {s, POLLOUT, 0};
    if (poll(&p, 1, 50) > 0)
      (void)!send(s, buf, sizeof(buf), MSG_DONTWAIT);
    if (!__atomic_load_n(&r.stalled, __ATOMIC_ACQUIRE))
      continue;
    long pc = prune_called();
    if (pc > p0 && p0 >= 0 && !pruned_at) {
      pruned_at = now_s();
      if (pruned_at + 0.3 < end)
        end = pruned_at + 0.3;
    }
  }
  printf("clamp done\n");
  return 0;
}

int stall(int port, int bytes, int idle, int seconds) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1024)) {
    perror("stall: listen");
    return 1;
  }
  int n = 2 * (idle + 1), *fds = calloc((size_t)n, sizeof(int)), k = 0;
  for (int i = 0; i <= idle; i++) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a))) {
      perror("stall: connect");
      return 1;
    }
    int s = accept(l, NULL, NULL);
    if (s < 0) {
      perror("stall: accept");
      return 1;
    }
    fds[k++] = c;
    fds[k++] = s;
  }
  /* The last pair: its client sends, its accepted end never reads. */
  char *buf = calloc(1, (size_t)bytes);
  if (send(fds[k - 2], buf, (size_t)bytes, 0) != bytes) {
    perror("stall: send");
    return 1;
  }
  int unread = 0;
  for (int i = 0; i < 200 && unread < bytes; i++) {
    ioctl(fds[k - 1], FIONREAD, &unread);
    if (unread < bytes)
      usleep(10000);
  }
  printf("stall %d unread %d\n", bytes, unread);
  fflush(stdout);
  sleep((unsigned)seconds);
  for (int i = 0; i < k; i++)
    close(fds[i]);
  close(l);
  printf("closed\n");
  free(buf);
  free(fds);
  return unread == bytes ? 0 : 1;
}
