// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic's helpers. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void die(const char *what) {
  fprintf(stderr, "vmtraffic: %s: %s\n", what, strerror(errno));
  exit(1);
}

void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

socklen_t make_addr(const char *addr, int port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  if (strchr(addr, ':')) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((unsigned short)port);
    if (inet_pton(AF_INET6, addr, &a->sin6_addr) != 1)
      die("bad IPv6 address");
    return sizeof(*a);
  }
  struct sockaddr_in *a = (struct sockaddr_in *)ss;
  a->sin_family = AF_INET;
  a->sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, addr, &a->sin_addr) != 1)
    die("bad IPv4 address");
  return sizeof(*a);
}

int wait_readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms);
}

void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set))
    die("sched_setaffinity");
}
