// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic udp and tcp: reads with known counts and, for tcp, waits
 * before them that follow a shape. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int udp(const char *addr, int port, int n, int peek) {
  struct sockaddr_storage ss;
  socklen_t len = make_addr(addr, port, &ss);
  int r = socket(ss.ss_family, SOCK_DGRAM, 0);
  int s = socket(ss.ss_family, SOCK_DGRAM, 0);
  if (r < 0 || s < 0)
    die("socket");
  if (bind(r, (struct sockaddr *)&ss, len))
    die("bind");
  char buf[2048];
  memset(buf, 'u', 64);
  int got = 0;
  for (int i = 0; i < n; i++) {
    if (sendto(s, buf, 64, 0, (struct sockaddr *)&ss, len) != 64)
      die("sendto");
    if (wait_readable(r, 10000) != 1)
      break;
    /* A reader that peeks to size its buffer (systemd does): the peek is
     * not a read (udp_socket_read counts the reads). */
    if (peek && recv(r, buf, sizeof(buf), MSG_PEEK) != 64)
      die("peek");
    if (recv(r, buf, sizeof(buf), 0) == 64)
      got++;
  }
  printf("udp %d\n", got);
  return got == n ? 0 : 1;
}

/* The wait before read i of a shape, in microseconds: a fixed
 * pseudo-random order (an LCG with a fixed seed), the same at every run. */
static unsigned long long shape_rng = 29;
static unsigned shape_next(void) {
  shape_rng = shape_rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)(shape_rng >> 33);
}
static long shape_wait_us(const char *shape, int i) {
  if (!strcmp(shape, "mix")) {
    /* 7 of 18 ms and 3 of 30 ms in every 10, in a random order. */
    static int block[10];
    if (i % 10 == 0) {
      for (int k = 0; k < 10; k++)
        block[k] = k < 7 ? 18000 : 30000;
      for (int k = 9; k > 0; k--) {
        int j = (int)(shape_next() % (unsigned)(k + 1)), t = block[k];
        block[k] = block[j];
        block[j] = t;
      }
    }
    return block[i % 10];
  }
  if (!strcmp(shape, "bimodal"))
    return shape_next() % 2 ? 2000 : 0;
  if (!strcmp(shape, "tail")) {
    /* One read in every 100 (at a random place in it) waits 40 ms. */
    static int slow;
    if (i % 100 == 0)
      slow = (int)(shape_next() % 100);
    return i % 100 == slow ? 40000 : 200;
  }
  return atoi(shape) * 1000L;
}

/* The sender of vmtraffic tcp, in the child: m messages, each after the
 * receiver has read the previous one (told over the pipe go) and gap_ms
 * more. */
__attribute__((noreturn)) static void tcp_sender(
    const struct sockaddr_storage *ss, socklen_t len, int m, int gap_ms,
    int go) {
  int one = 1;
  int c = socket(ss->ss_family, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (const struct sockaddr *)ss, len))
    die("connect");
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char msg[100];
  memset(msg, 't', sizeof(msg));
  for (int i = 0; i < m; i++) {
    if (send(c, msg, sizeof(msg), 0) != (ssize_t)sizeof(msg))
      die("send");
    char t;
    if (wait_readable(go, 20000) != 1 || read(go, &t, 1) != 1)
      break;
    sleep_ms(gap_ms);
  }
  /* Wait for the receiver to close first: its reads are the ones
   * counted, and our FIN must not race them. */
  char b;
  wait_readable(c, 20000);
  (void)recv(c, &b, 1, 0);
  close(c);
  _exit(0);
}

/* One read of exactly one message, with its wait by the kernel's receive
 * timestamp to just before and to just after recvmsg(): printed as a "w"
 * line when shaped, and folded into *lo_min and *hi_max. False when the
 * read came short. */
static bool tcp_read_one(int c, int shaped, long long *lo_min,
                         long long *hi_max) {
  char buf[100];
  /* MSG_WAITALL: exactly one message per read. */
  struct iovec iov = {buf, sizeof(buf)};
  union {
    char b[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } ctl;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                      .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
  struct timespec t0, t1;
  clock_gettime(CLOCK_REALTIME, &t0);
  ssize_t got = recvmsg(c, &mh, MSG_WAITALL);
  clock_gettime(CLOCK_REALTIME, &t1);
  if (got != (ssize_t)sizeof(buf))
    return false;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == 35) {
      struct timespec ts;
      memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
      long long rx = ts.tv_sec * 1000000000LL + ts.tv_nsec;
      long long lo = t0.tv_sec * 1000000000LL + t0.tv_nsec - rx;
      long long hi = t1.tv_sec * 1000000000LL + t1.tv_nsec - rx;
      if (shaped)
        printf("w %lld %lld\n", lo, hi);
      if (*lo_min < 0 || lo < *lo_min)
        *lo_min = lo;
      if (hi > *hi_max)
        *hi_max = hi;
    }
  return true;
}

int tcp(const char *addr, int port, int m, const char *shape, int gap_ms,
        int peek) {
  int shaped = !strcmp(shape, "mix") || !strcmp(shape, "bimodal") ||
               !strcmp(shape, "tail");
  struct sockaddr_storage ss;
  socklen_t len = make_addr(addr, port, &ss);
  int ls = socket(ss.ss_family, SOCK_STREAM, 0), one = 1;
  if (ls < 0)
    die("socket");
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, (struct sockaddr *)&ss, len) || listen(ls, 1))
    die("bind/listen");
  int go[2];
  if (pipe(go))
    die("pipe");
  pid_t child = fork();
  if (child < 0)
    die("fork");
  if (child == 0) {
    close(ls);
    close(go[1]);
    tcp_sender(&ss, len, m, gap_ms, go[0]);
  }
  close(go[0]);
  int c = accept(ls, NULL, NULL);
  if (c < 0)
    die("accept");
  int reads = 0, on = 1;
  char buf[100];
  long long lo_min = -1, hi_max = -1;
  setsockopt(c, SOL_SOCKET, 35 /* SO_TIMESTAMPNS(_OLD) */, &on, sizeof(on));
  for (int i = 0; i < m; i++) {
    if (wait_readable(c, 20000) != 1)
      break;
    long wait_us = shape_wait_us(shape, i);
    if (wait_us)
      sleep_us(wait_us);
    /* A reader that peeks first: not a read (tcp_socket_read counts the
     * reads). */
    if (peek && recv(c, buf, sizeof(buf), MSG_PEEK) <= 0)
      break;
    if (!tcp_read_one(c, shaped, &lo_min, &hi_max))
      break;
    reads++;
    if (write(go[1], "r", 1) != 1)
      die("write to the sender");
  }
  close(c);
  close(ls);
  int st = 0;
  waitpid(child, &st, 0);
  printf("tcp %d waits %lld %lld\n", reads, lo_min, hi_max);
  return reads == m && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
