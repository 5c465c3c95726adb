// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic drops: drops the kernel makes and counts itself, from every
 * CPU at once. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* vmtraffic drops KIND PORT N */
int drops(const char *kind, int port, int n) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool tcp = !strcmp(kind, "tcp"), rcvbuf = !strcmp(kind, "rcvbuf");
  int rx = -1;
  if (rcvbuf) {
    rx = socket(AF_INET, SOCK_DGRAM, 0);
    int one = 1;
    if (rx < 0 || setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one)) ||
        bind(rx, (struct sockaddr *)&a, sizeof(a)))
      die("rcvbuf receiver");
  }
  int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  int pipefd[2];
  if (pipe(pipefd))
    die("pipe");
  for (int c = 0; c < ncpu; c++) {
    if (fork() != 0)
      continue;
    pin(c);
    int sent = 0;
    char buf[64] = {0};
    int fd = tcp ? -1 : socket(AF_INET, SOCK_DGRAM, 0);
    for (int i = 0; i < n; i++) {
      if (tcp) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 &&
            errno == ECONNREFUSED)
          sent++;
        close(fd);
      } else if (sendto(fd, buf, sizeof(buf), 0, (struct sockaddr *)&a,
                        sizeof(a)) == (ssize_t)sizeof(buf)) {
        sent++;
      }
    }
    if (write(pipefd[1], &sent, sizeof(sent)) != sizeof(sent))
      _exit(1);
    _exit(0);
  }
  close(pipefd[1]);
  int total = 0, got;
  while (read(pipefd[0], &got, sizeof(got)) == sizeof(got))
    total += got;
  while (wait(NULL) > 0)
    ;
  if (rx >= 0)
    close(rx);
  printf("drops %s sent %d\n", kind, total);
  return total == ncpu * n ? 0 : 1;
}
