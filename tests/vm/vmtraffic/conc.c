// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic conc: UDP on every online CPU at once. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct spin_reader {
  int fd, n, cpu;
  atomic_int got, stop;
};

/* Spins until n were read, the sender says stop, or nothing came for 10 s
 * (a deadline from the last datagram, not from the start: a starved guest
 * may take many seconds for the whole run). */
static void *spin_read(void *arg) {
  struct spin_reader *r = arg;
  pin(r->cpu);
  char buf[2048];
  double idle = now_s() + 10;
  while (atomic_load(&r->got) < r->n && !atomic_load(&r->stop)) {
    if (recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT) == 64) {
      atomic_fetch_add(&r->got, 1);
      idle = now_s() + 10;
    } else if (now_s() > idle) {
      break;
    }
  }
  return NULL;
}

/* Reads whatever is still queued on fd: every datagram the kernel queued
 * is then read, so that Udp(6)InDatagrams (counted by recvmsg) is what
 * was delivered, also when a reader stopped early. */
static int drain(int fd, char *buf, size_t size) {
  int n = 0;
  while (recv(fd, buf, size, MSG_DONTWAIT) == 64)
    n++;
  return n;
}

/* What one flow did: datagrams sent (probes included) and read. */
struct flow_result {
  int sent, got;
};

/* Datagrams a block-mode sender sends before it reads them all: long bursts
 * keep the receiving CPU in its softirq while the other one is in its own
 * (32 x ~1 KiB of truesize fits the default receive buffer). */
#define CONC_BURST 32
#define CONC_PERIOD_S 0.1

/* The CPU that received the last datagram on a connected socket. */
static int incoming_cpu(int fd) {
  int cpu = -1;
  socklen_t l = sizeof(cpu);
  if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &l))
    return -1;
  return cpu;
}

/* Spin mode: a reader thread pinned to the next CPU takes each datagram
 * the moment it is queued; the next is sent once the previous was read
 * (waiting at most 10 s: a reader that stopped stops the flow). */
static struct flow_result conc_spin(const struct sockaddr_storage *ss,
                                    socklen_t len, int r, int n, int cpu,
                                    int ncpu, char *buf, size_t size) {
  int s = socket(ss->ss_family, SOCK_DGRAM, 0);
  if (s < 0)
    die("socket");
  struct spin_reader rd = {.fd = r, .n = n, .cpu = (cpu + 1) % ncpu};
  atomic_init(&rd.got, 0);
  atomic_init(&rd.stop, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, spin_read, &rd))
    die("pthread_create");
  struct flow_result res = {0, 0};
  for (int i = 0; i < n; i++) {
    if (sendto(s, buf, 64, 0, (const struct sockaddr *)ss, len) != 64)
      die("sendto");
    res.sent++;
    double end = now_s() + 10;
    while (atomic_load(&rd.got) <= i && now_s() < end)
      sched_yield();
    if (atomic_load(&rd.got) <= i)
      break;
  }
  atomic_store(&rd.stop, 1);
  pthread_join(t, NULL);
  res.got = atomic_load(&rd.got) + drain(r, buf, size);
  close(s);
  return res;
}

/* With RPS on, pick a source port whose hash steers the flow to another
 * CPU (seen through SO_INCOMING_CPU of the receiver, connected to the
 * sender): that CPU then receives it from an interrupt, under the idle
 * task when it has nothing else to run. These probe datagrams are
 * counted in what was sent (the first line of the output). Returns the
 * probes sent, negated when one was lost, and the sender in *sp. */
static int conc_pick_port(const struct sockaddr_storage *ss, socklen_t len,
                          int r, int cpu, int ncpu, char *buf, size_t size,
                          int *sp) {
  struct sockaddr_storage from;
  int s = -1, probes = 0;
  for (int a = 0; a < 32; a++) {
    if (s >= 0)
      close(s);
    s = socket(ss->ss_family, SOCK_DGRAM, 0);
    if (s < 0 || connect(s, (const struct sockaddr *)ss, len))
      die("socket/connect");
    socklen_t fl = sizeof(from);
    if (getsockname(s, (struct sockaddr *)&from, &fl) ||
        connect(r, (struct sockaddr *)&from, fl))
      die("getsockname/connect");
    if (send(s, buf, 64, 0) != 64)
      die("send");
    probes++;
    if (wait_readable(r, 10000) != 1 || recv(r, buf, size, 0) != 64)
      return -probes; /* lost */
    if (ncpu < 2 || incoming_cpu(r) != cpu)
      break;
  }
  *sp = s;
  return probes;
}

/* One flow, in a child pinned to cpu. */
static struct flow_result conc_flow(const char *addr, int port, int n,
                                    int cpu, int ncpu, int spin, double t0) {
  pin(cpu);
  struct sockaddr_storage ss;
  socklen_t len = make_addr(addr, port, &ss);
  int r = socket(ss.ss_family, SOCK_DGRAM, 0);
  if (r < 0)
    die("socket");
  if (bind(r, (struct sockaddr *)&ss, len))
    die("bind");
  char buf[2048];
  memset(buf, 'c', 64);
  if (spin)
    return conc_spin(&ss, len, r, n, cpu, ncpu, buf, sizeof(buf));
  int s = -1;
  int probes = conc_pick_port(&ss, len, r, cpu, ncpu, buf, sizeof(buf), &s);
  if (probes < 0) /* the last probe was not read in 10 s */
    return (struct flow_result){-probes, -probes - 1 + drain(r, buf, sizeof(buf))};
  struct flow_result res = {probes, probes};
  /* Rounds on a common clock: every flow on every CPU sends its burst at
   * the same moment, then sleeps, so both CPUs receive at the same time
   * from their interrupts, with no task of their own to run. */
  double t = t0;
  for (int i = 0; i < n; i += CONC_BURST) {
    int b = n - i < CONC_BURST ? n - i : CONC_BURST;
    t += CONC_PERIOD_S;
    double w = t - now_s();
    if (w > 0)
      sleep_ms((long)(w * 1000));
    for (int k = 0; k < b; k++)
      if (send(s, buf, 64, 0) != 64)
        die("send");
    res.sent += b;
    /* Read only once the burst was received: a read runs kprobe handlers
     * (skb_consume_udp) in process context, and a receive softirq run from
     * an interrupt during one would have its kprobes missed. */
    sleep_ms(CONC_PERIOD_S * 600);
    int k = 0;
    for (; k < b; k++) {
      if (wait_readable(r, 10000) != 1)
        break;
      if (recv(r, buf, sizeof(buf), 0) == 64)
        res.got++;
    }
    if (k < b)
      break;
  }
  res.got += drain(r, buf, sizeof(buf));
  return res;
}

int conc(int port, int flows, int n, int spin) {
  int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1)
    ncpu = 1;
  int pipefd[2];
  if (pipe(pipefd))
    die("pipe");
  int children = 0;
  double t0 = now_s() + 1; /* after every flow has picked its port */
  for (int c = 0; c < ncpu; c++)
    for (int j = 0; j < flows; j++) {
      int k = c * flows + j;
      pid_t p = fork();
      if (p < 0)
        die("fork");
      if (p == 0) {
        close(pipefd[0]);
        struct flow_result res = conc_flow(k % 2 ? "::1" : "127.0.0.1",
                                           port + k, n, c, ncpu, spin, t0);
        if (write(pipefd[1], &res, sizeof(res)) != sizeof(res))
          _exit(1);
        _exit(0);
      }
      children++;
    }
  close(pipefd[1]);
  int sent = 0, total = 0, flows_done = 0;
  struct flow_result res;
  while (read(pipefd[0], &res, sizeof(res)) == sizeof(res)) {
    sent += res.sent;
    total += res.got;
    flows_done++;
  }
  while (wait(NULL) > 0)
    ;
  printf("conc sent %d received %d\n", sent, total);
  return total == sent && flows_done == children ? 0 : 1;
}
