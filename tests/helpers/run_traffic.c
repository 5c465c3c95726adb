// SPDX-License-Identifier: GPL-2.0-only
/* `make run`'s own traffic, so that an idle machine's first screen shows
 * every feature's values: on 127.0.0.1 only, TICKS_PER_S times a second one
 * TCP message and one UDP datagram to its own receivers, and every
 * CLOSED_EVERY ticks one datagram to a closed port (the kernel drops it
 * with reason no_socket). Until SIGINT or SIGTERM, or its parent's end.
 *   run_traffic LOG
 * LOG gets a line a second and a last one at the end, each the totals sent
 * so far: "<unix time> tcp <n> udp <n> closed <n>" (tests/integration/
 * test_run compares them with the drops the plugin counted). */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* tests/run-collectd's banner says these rates */
#define TICKS_PER_S 200
#define CLOSED_EVERY 40 /* 5 drops a second */
#define MSG_BYTES 100

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

static double now(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "run_traffic: %s: %s\n", what, strerror(errno));
  _exit(1);
}

/* A socket of TYPE bound to 127.0.0.1 on a port the kernel picks, which
 * goes into *addr. */
static int bound(int type, struct sockaddr_in *addr) {
  socklen_t len = sizeof(*addr);
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  *addr = (struct sockaddr_in){.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || bind(fd, (struct sockaddr *)addr, sizeof(*addr)) ||
      getsockname(fd, (struct sockaddr *)addr, &len))
    die("socket on 127.0.0.1");
  return fd;
}

/* A loopback TCP connection: *rx is the accepted end. */
static int tcp_pair(int *rx) {
  struct sockaddr_in a;
  int ls = bound(SOCK_STREAM, &a), one = 1;
  int tx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen(ls, 1) || tx < 0 || connect(tx, (struct sockaddr *)&a, sizeof(a)))
    die("TCP connection on 127.0.0.1");
  *rx = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (*rx < 0)
    die("accept");
  close(ls);
  setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return tx;
}

static void drain(int fd) {
  char buf[4096];
  while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
    ;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LOG\n", argv[0]);
    return 2;
  }
  FILE *log = fopen(argv[1], "w");
  if (!log)
    die(argv[1]);
  /* No traffic left behind if the script that started us is killed. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() == 1)
    return 0;
  struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  struct sockaddr_in udp_addr, closed;
  int tcp_rx, tcp_tx = tcp_pair(&tcp_rx);
  int udp_rx = bound(SOCK_DGRAM, &udp_addr);
  int udp_tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  /* A port that was just free and is closed again: nobody listens there. */
  close(bound(SOCK_DGRAM, &closed));
  if (udp_tx < 0)
    die("UDP socket");

  char msg[MSG_BYTES] = {0};
  unsigned long long tcp = 0, udp = 0, dropped = 0, tick = 0;
  double start = now(CLOCK_MONOTONIC), next = start, logged = start;
  struct pollfd fds[] = {{.fd = tcp_rx, .events = POLLIN},
                         {.fd = udp_rx, .events = POLLIN}};
  while (!stop) {
    double t = now(CLOCK_MONOTONIC);
    if (t >= next) {
      tcp += send(tcp_tx, msg, sizeof(msg), MSG_DONTWAIT) > 0;
      udp += sendto(udp_tx, msg, sizeof(msg), 0, (struct sockaddr *)&udp_addr,
                    sizeof(udp_addr)) > 0;
      if (tick++ % CLOSED_EVERY == 0)
        dropped += sendto(udp_tx, msg, sizeof(msg), 0,
                          (struct sockaddr *)&closed, sizeof(closed)) > 0;
      next += 1.0 / TICKS_PER_S;
      if (next < t) /* late (a busy machine): no burst to catch up */
        next = t;
    }
    if (t - logged >= 1) {
      fprintf(log, "%.3f tcp %llu udp %llu closed %llu\n", now(CLOCK_REALTIME),
              tcp, udp, dropped);
      fflush(log);
      logged = t;
    }
    if (poll(fds, 2, (int)((next - t) * 1000) + 1) > 0) {
      drain(tcp_rx);
      drain(udp_rx);
    }
  }
  fprintf(log, "%.3f tcp %llu udp %llu closed %llu\n", now(CLOCK_REALTIME), tcp,
          udp, dropped);
  fclose(log);
  return 0;
}
