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

struct clamp_reader {
  int fd;
  double half;
};

static void *clamp_read(void *arg) {
  struct clamp_reader *r = arg;
  static char buf[1 << 16];
  while (now_s() < r->half) {
    struct pollfd p = {r->fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && read(r->fd, buf, sizeof(buf)) <= 0)
      break;
  }
  int small = 4096;
  setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  return NULL;
}

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
  double start = now_s();
  struct clamp_reader r = {c, start + secs / 2};
  pthread_t t;
  pthread_create(&t, NULL, clamp_read, &r);
  static char buf[1 << 16];
  memset(buf, 'x', sizeof(buf));
  while (now_s() < start + secs) {
    struct pollfd p = {s, POLLOUT, 0};
    if (poll(&p, 1, 50) > 0)
      (void)!send(s, buf, sizeof(buf), MSG_DONTWAIT);
  }
  pthread_join(t, NULL);
  close(s);
  close(c);
  close(ls);
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
