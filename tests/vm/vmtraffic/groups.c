// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic groups N CGDIR SECONDS: N processes, each in a cgroup of its
 * own (CGDIR/g<i>, made here; "-": no cgroup) and a network namespace of
 * its own with its lo up, each sending a UDP datagram and a TCP message
 * to itself every second for SECONDS seconds, or until the parent is
 * killed (a group on every socket
 * hook for GroupBy cgroup, and a namespace's lo on all seven for GroupBy
 * interface with NetworkNamespace "all"). Prints "groups N" once all are
 * started, then waits for them. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void join_cgroup(const char *dir, int i) {
  char path[512], pid[32];
  snprintf(path, sizeof(path), "%s/g%d", dir, i);
  if (mkdir(path, 0755) && errno != EEXIST)
    die("mkdir cgroup");
  snprintf(path, sizeof(path), "%s/g%d/cgroup.procs", dir, i);
  int fd = open(path, O_WRONLY);
  int n = snprintf(pid, sizeof(pid), "%d", (int)getpid());
  if (fd < 0 || write(fd, pid, (size_t)n) != n)
    die("cgroup.procs");
  close(fd);
}

static void lo_up(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct ifreq ifr = {0};
  strcpy(ifr.ifr_name, "lo");
  if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr))
    die("SIOCGIFFLAGS");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr))
    die("SIOCSIFFLAGS");
  close(fd);
}

/* One UDP datagram and one TCP message to itself on 127.0.0.1. */
static void child(int seconds) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (u < 0 || l < 0 || bind(u, (void *)&a, al) || bind(l, (void *)&a, al) ||
      listen(l, 1))
    die("socket");
  struct sockaddr_in ua, la;
  socklen_t ul = sizeof(ua), ll = sizeof(la);
  getsockname(u, (void *)&ua, &ul);
  getsockname(l, (void *)&la, &ll);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (void *)&la, ll))
    die("connect");
  int s = accept(l, NULL, NULL);
  if (s < 0)
    die("accept");
  char buf[64];
  for (int t = 0; t < seconds; t++) {
    if (sendto(u, "x", 1, 0, (void *)&ua, ul) != 1 || send(c, "x", 1, 0) != 1)
      die("send");
    if (wait_readable(u, 1000) > 0)
      (void)!recv(u, buf, sizeof(buf), 0);
    if (wait_readable(s, 1000) > 0)
      (void)!recv(s, buf, sizeof(buf), 0);
    sleep_ms(1000);
  }
}

int groups(int n, const char *cgdir, int seconds) {
  int ready[2];
  if (pipe(ready))
    die("pipe");
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p < 0)
      die("fork");
    if (p == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* the groups end with the parent */
      if (strcmp(cgdir, "-"))
        join_cgroup(cgdir, i);
      if (unshare(CLONE_NEWNET))
        die("unshare");
      lo_up();
      (void)!write(ready[1], "r", 1);
      child(seconds);
      _exit(0);
    }
  }
  char c;
  for (int i = 0; i < n; i++)
    if (read(ready[0], &c, 1) != 1)
      die("ready");
  printf("groups %d\n", n);
  fflush(stdout);
  while (wait(NULL) > 0)
    ;
  return 0;
}
