/* Traffic with known counts for the VM matrix (tests/vm/guest-check), over
 * loopback inside a guest that has nothing else on the network.
 *
 *   vmtraffic udp ADDR PORT N [peek]
 *       A receiver bound to ADDR:PORT and a sender in this process: N
 *       datagrams of 64 bytes, each received (one recv; with "peek", a
 *       recv(MSG_PEEK) before it) before the next one is sent. Prints
 *       "udp N" with the count received.
 *   vmtraffic tcp ADDR PORT M DELAY_MS GAP_MS [peek]
 *       A child connects and sends M messages of 100 bytes with
 *       TCP_NODELAY; nothing flows back over TCP but ACKs. The parent
 *       accepts and, M times: waits until data is readable, sleeps
 *       DELAY_MS, (with "peek": recv(MSG_PEEK) of it first,) reads exactly
 *       one message. So M reads happen in this
 *       network namespace, all by the receiver. The child sends a message
 *       only after the parent has read the previous one (told over a pipe,
 *       which is no network traffic) and GAP_MS more: one message in flight
 *       at a time, so the kernel never coalesces two into one skb (the
 *       merged skb would carry the later message's receive timestamp).
 *       Prints "tcp M waits LO HI": the reads made, and of their waits by
 *       the kernel's receive timestamp (SO_TIMESTAMPNS) the shortest to
 *       just before recvmsg() and the longest to just after it, in ns
 *       (-1 -1 without timestamps): the witness of the plugin's
 *       tcp_socket_read latencies.
 *
 *   vmtraffic clamp PORT SECONDS
 *       TCP bulk over 127.0.0.1: a reader thread reads for the first half,
 *       then stops and shrinks its SO_RCVBUF while the sender keeps
 *       sending, so the kernel prunes the receive queue and clamps the
 *       window (with lo's MTU at 1500: run `ip link set lo mtu 1500`).
 *   vmtraffic clamp PORT SECONDS CPU
 *       The same, the whole process pinned to CPU.
 *
 *   vmtraffic conc PORT FLOWS N block|spin
 *       UDP on every online CPU at once. For each CPU, FLOWS flows (ports
 *       PORT, PORT+1, ...; 127.0.0.1 and ::1 alternately), each sending N
 *       datagrams of 64 bytes from a sender pinned to that CPU (over
 *       loopback the receive softirq runs on the sending CPU, or where RPS
 *       steers it). block: the flow's receiver is in the sender's process
 *       and reads in rounds on a common clock (every 100 ms: send 32, sleep
 *       60 ms, read the 32), so the CPUs receive at the same time, idle (with RPS on lo, each flow's source port
 *       is chosen so that another CPU receives it, from an interrupt: by
 *       the idle task when that CPU has nothing else to run). spin: the receiver is a thread
 *       pinned to the next CPU that spins on recv(MSG_DONTWAIT), and the
 *       sender sends the next datagram only when the previous one was read:
 *       a reader ready to take each datagram the moment it is queued.
 *       Prints "conc sent S received R"; exit status 0 only if R = S.
 *
 * Exit status 0 only if every datagram/message arrived. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  fprintf(stderr, "vmtraffic: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

static socklen_t make_addr(const char *addr, int port,
                           struct sockaddr_storage *ss) {
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

static int wait_readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms);
}

static int udp(const char *addr, int port, int n, int peek) {
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

static int tcp(const char *addr, int port, int m, int delay_ms, int gap_ms,
               int peek) {
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
    int c = socket(ss.ss_family, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&ss, len))
      die("connect");
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char msg[100];
    memset(msg, 't', sizeof(msg));
    for (int i = 0; i < m; i++) {
      if (send(c, msg, sizeof(msg), 0) != (ssize_t)sizeof(msg))
        die("send");
      char t;
      if (wait_readable(go[0], 20000) != 1 || read(go[0], &t, 1) != 1)
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
    if (delay_ms)
      sleep_ms(delay_ms);
    /* A reader that peeks first: not a read (tcp_socket_read counts the
     * reads). */
    if (peek && recv(c, buf, sizeof(buf), MSG_PEEK) <= 0)
      break;
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
      break;
    reads++;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == 35) {
        struct timespec ts;
        memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
        long long rx = ts.tv_sec * 1000000000LL + ts.tv_nsec;
        long long lo = t0.tv_sec * 1000000000LL + t0.tv_nsec - rx;
        long long hi = t1.tv_sec * 1000000000LL + t1.tv_nsec - rx;
        if (lo_min < 0 || lo < lo_min)
          lo_min = lo;
        if (hi > hi_max)
          hi_max = hi;
      }
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

struct clamp_reader {
  int fd;
  double half;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

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

static int clamp(int port, double secs) {
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

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set))
    die("sched_setaffinity");
}

struct spin_reader {
  int fd, n, cpu;
  atomic_int got;
};

static void *spin_read(void *arg) {
  struct spin_reader *r = arg;
  pin(r->cpu);
  char buf[2048];
  double end = now_s() + 30;
  while (atomic_load(&r->got) < r->n && now_s() < end)
    if (recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT) == 64)
      atomic_fetch_add(&r->got, 1);
  return NULL;
}

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

/* One flow, in a child pinned to cpu: returns the datagrams received. */
static int conc_flow(const char *addr, int port, int n, int cpu, int ncpu,
                     int spin, double t0) {
  pin(cpu);
  struct sockaddr_storage ss, from;
  socklen_t len = make_addr(addr, port, &ss);
  int r = socket(ss.ss_family, SOCK_DGRAM, 0);
  if (r < 0)
    die("socket");
  if (bind(r, (struct sockaddr *)&ss, len))
    die("bind");
  char buf[2048];
  memset(buf, 'c', 64);
  int s = -1;
  if (spin) {
    s = socket(ss.ss_family, SOCK_DGRAM, 0);
    if (s < 0)
      die("socket");
    struct spin_reader rd = {.fd = r, .n = n, .cpu = (cpu + 1) % ncpu};
    atomic_init(&rd.got, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, spin_read, &rd))
      die("pthread_create");
    for (int i = 0; i < n; i++) {
      if (sendto(s, buf, 64, 0, (struct sockaddr *)&ss, len) != 64)
        die("sendto");
      double end = now_s() + 10;
      while (atomic_load(&rd.got) <= i && now_s() < end)
        sched_yield();
    }
    pthread_join(t, NULL);
    return atomic_load(&rd.got);
  }
  /* With RPS on, pick a source port whose hash steers the flow to another
   * CPU (seen through SO_INCOMING_CPU of the receiver, connected to the
   * sender): that CPU then receives it from an interrupt, under the idle
   * task when it has nothing else to run. These probe datagrams are
   * counted in what was sent (the first line of the output). */
  int probes = 0;
  for (int a = 0; a < 32; a++) {
    if (s >= 0)
      close(s);
    s = socket(ss.ss_family, SOCK_DGRAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&ss, len))
      die("socket/connect");
    socklen_t fl = sizeof(from);
    if (getsockname(s, (struct sockaddr *)&from, &fl) ||
        connect(r, (struct sockaddr *)&from, fl))
      die("getsockname/connect");
    if (send(s, buf, 64, 0) != 64)
      die("send");
    probes++;
    if (wait_readable(r, 10000) != 1 || recv(r, buf, sizeof(buf), 0) != 64)
      return -probes; /* lost */
    if (ncpu < 2 || incoming_cpu(r) != cpu)
      break;
  }
  int got = probes;
  n += probes;
  /* Rounds on a common clock: every flow on every CPU sends its burst at
   * the same moment, then sleeps, so both CPUs receive at the same time
   * from their interrupts, with no task of their own to run. */
  double t = t0;
  for (int i = probes; i < n; i += CONC_BURST) {
    int b = n - i < CONC_BURST ? n - i : CONC_BURST;
    t += CONC_PERIOD_S;
    double w = t - now_s();
    if (w > 0)
      sleep_ms((long)(w * 1000));
    for (int k = 0; k < b; k++)
      if (send(s, buf, 64, 0) != 64)
        die("send");
    /* Read only once the burst was received: a read runs kprobe handlers
     * (skb_consume_udp) in process context, and a receive softirq run from
     * an interrupt during one would have its kprobes missed. */
    sleep_ms(CONC_PERIOD_S * 600);
    for (int k = 0; k < b; k++) {
      if (wait_readable(r, 10000) != 1)
        return got;
      if (recv(r, buf, sizeof(buf), 0) == 64)
        got++;
    }
  }
  return got | probes << 20;
}

static int conc(int port, int flows, int n, int spin) {
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
        int got = conc_flow(k % 2 ? "::1" : "127.0.0.1", port + k, n, c,
                            ncpu, spin, t0);
        if (write(pipefd[1], &got, sizeof(got)) != sizeof(got))
          _exit(1);
        _exit(0);
      }
      children++;
    }
  close(pipefd[1]);
  int total = 0, extra = 0, got;
  while (read(pipefd[0], &got, sizeof(got)) == sizeof(got)) {
    if (got < 0) { /* a probe datagram was lost */
      extra += -got;
      total += -got - 1;
      continue;
    }
    total += got & 0xfffff;
    extra += got >> 20;
  }
  while (wait(NULL) > 0)
    ;
  int sent = ncpu * flows * n + extra;
  printf("conc sent %d received %d\n", sent, total);
  return total == sent ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 6 && !strcmp(argv[1], "conc"))
    return conc(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                !strcmp(argv[5], "spin"));
  if (argc == 5 && !strcmp(argv[1], "clamp"))
    pin(atoi(argv[4]));
  if ((argc == 4 || argc == 5) && !strcmp(argv[1], "clamp"))
    return clamp(atoi(argv[2]), atof(argv[3]));
  if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "peek"))) &&
      !strcmp(argv[1], "udp"))
    return udp(argv[2], atoi(argv[3]), atoi(argv[4]), argc == 6);
  if ((argc == 7 || (argc == 8 && !strcmp(argv[7], "peek"))) &&
      !strcmp(argv[1], "tcp"))
    return tcp(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
               atoi(argv[6]), argc == 8);
  fprintf(stderr, "usage: vmtraffic udp ADDR PORT N | "
                  "tcp ADDR PORT M DELAY_MS GAP_MS | clamp PORT SECONDS [CPU] | "
                  "conc PORT FLOWS N block|spin\n");
  return 2;
}
