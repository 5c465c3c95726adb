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
 *   vmtraffic tcp ADDR PORT M SHAPE GAP_MS
 *       The same with a wait before each read that follows SHAPE (a fixed
 *       pseudo-random order): mix, 18 ms before 7 reads in 10 and 30 ms
 *       before 3; bimodal, none or 2 ms, half each; tail, 0.2 ms, and
 *       40 ms before 1 read in 100. Also prints "w LO HI" for every read,
 *       in order: its wait to just before and to just after recvmsg().
 *   vmtraffic drops udp|tcp|rcvbuf PORT N
 *       Drops the kernel makes and counts itself, from every CPU at once
 *       (a child pinned to each sends N) to 127.0.0.1:PORT: udp, datagrams
 *       to a port nobody listens on (Udp NoPorts); tcp, connections to a
 *       closed port (Tcp OutRsts); rcvbuf, datagrams to a receiver with
 *       the smallest SO_RCVBUF that never reads (Udp RcvbufErrors). Prints
 *       "drops KIND sent S": the datagrams sent, or the connections
 *       refused.
 *   vmtraffic stall PORT BYTES IDLE SECONDS
 *       A stalled receiver and idle sockets over 127.0.0.1: IDLE idle
 *       connections to PORT, then one more whose peer sends BYTES that
 *       the accepting side never reads; all are held SECONDS, then
 *       closed. Prints "stall BYTES unread U" once the data has arrived
 *       (U: the accepted socket's unread bytes, FIONREAD) and "closed" at
 *       the end.
 *   vmtraffic qcheck DIR READS T0 BASE
 *       Checks the quantiles the plugin dispatched (the csv files of
 *       DIR, netstacklat-tcp_socket_read's directory) against the "w"
 *       lines of READS (the output of a shape run that started at unix
 *       time T0, when the hook's operations counter was BASE, and the
 *       only reads of TCP data meanwhile). The reads are in order, so each
 *       interval's reads are the next ones in READS, as many as its
 *       operations grew: for each interval of 5 reads or more, every
 *       latency-pNN within 5% of the exact quantile of those reads' waits
 *       (rank max(1, ceil(q n)); the shortest to just before recvmsg(),
 *       the longest to just after) and latency-max from the longest wait
 *       to 6.25% above it, each +-500 ns (the csv has 6 decimals). Prints
 *       a line per interval and "qcheck intervals I checked C reads R of
 *       N worst P%"; exit status 0 only if every check held, C >= 1 and R
 *       = N.
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
#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

static int tcp(const char *addr, int port, int m, const char *shape, int gap_ms,
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
    long wait_us = shape_wait_us(shape, i);
    if (wait_us)
      sleep_us(wait_us);
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
        if (shaped)
          printf("w %lld %lld\n", lo, hi);
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

/* ---- qcheck: the dispatched quantiles against a shape run's waits. */

struct row {
  double t, v;
};

/* The rows of DIR/NAME-YYYY-MM-DD (the csv plugin's files, one a day), in
 * time order; rows of "nan" are left out. */
static int read_rows(const char *dir, const char *name, struct row **out) {
  char pat[4096];
  glob_t g;
  int n = 0, cap = 0;
  *out = NULL;
  snprintf(pat, sizeof(pat), "%s/%s-[0-9][0-9][0-9][0-9]-*", dir, name);
  if (glob(pat, 0, NULL, &g))
    return 0;
  for (size_t k = 0; k < g.gl_pathc; k++) {
    FILE *f = fopen(g.gl_pathv[k], "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
      double t, v;
      char vs[64];
      if (sscanf(line, "%lf,%63s", &t, vs) != 2 || strstr(vs, "nan"))
        continue;
      v = atof(vs);
      if (n == cap) {
        cap = cap ? 2 * cap : 256;
        *out = realloc(*out, cap * sizeof(**out));
        if (!*out)
          die("realloc");
      }
      (*out)[n++] = (struct row){t, v};
    }
    if (f)
      fclose(f);
  }
  globfree(&g);
  return n;
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

/* The value of rank max(1, ceil(q n)) of x[0..n) (sorts x). */
static long long exact_q(long long *x, int n, double q) {
  qsort(x, n, sizeof(*x), cmp_ll);
  int r = (int)ceil(q * n - 1e-9);
  if (r < 1)
    r = 1;
  if (r > n)
    r = n;
  return x[r - 1];
}

static int qcheck(const char *dir, const char *reads, double t0, long long base) {
  FILE *f = fopen(reads, "r");
  if (!f)
    die("open the reads");
  long long *lo = NULL, *hi = NULL;
  int n = 0, cap = 0;
  char line[256];
  while (fgets(line, sizeof(line), f)) {
    long long a, b;
    if (sscanf(line, "w %lld %lld", &a, &b) != 2)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      lo = realloc(lo, cap * sizeof(*lo));
      hi = realloc(hi, cap * sizeof(*hi));
      if (!lo || !hi)
        die("realloc");
    }
    lo[n] = a;
    hi[n++] = b;
  }
  fclose(f);
  static const char *names[] = {"latency-p50", "latency-p90", "latency-p99",
                                "latency-p999", "latency-max"};
  static const double qs[] = {0.5, 0.9, 0.99, 0.999, 1};
  struct row *ops, *q[5];
  int nops = read_rows(dir, "operations", &ops), nq[5];
  for (int k = 0; k < 5; k++)
    nq[k] = read_rows(dir, names[k], &q[k]);
  long long *xl = malloc((n + 1) * sizeof(*xl)), *xh = malloc((n + 1) * sizeof(*xh));
  long long prev = base;
  int intervals = 0, checked = 0, fails = 0;
  double worst = 0;
  for (int i = 0; i < nops; i++) {
    if (ops[i].t <= t0 || (long long)ops[i].v <= prev)
      continue;
    long long c = (long long)ops[i].v;
    long long from = prev - base, to = c - base;
    prev = c;
    intervals++;
    if (to > n) {
      printf("interval %.3f: operations %lld, beyond the %d reads made\n", ops[i].t,
             to, n);
      fails++;
      break;
    }
    int m = (int)(to - from);
    if (m < 5) {
      printf("interval %.3f: reads %lld..%lld, too few to check\n", ops[i].t, from,
             to - 1);
      continue;
    }
    checked++;
    printf("interval %.3f: reads %lld..%lld:", ops[i].t, from, to - 1);
    for (int k = 0; k < 5; k++) {
      double est = -1;
      for (int j = 0; j < nq[k]; j++)
        if (fabs(q[k][j].t - ops[i].t) < 0.1)
          est = q[k][j].v * 1e9;
      memcpy(xl, lo + from, m * sizeof(*xl));
      memcpy(xh, hi + from, m * sizeof(*xh));
      long long wl = exact_q(xl, m, qs[k]), wh = exact_q(xh, m, qs[k]);
      int ok;
      double dev = 0;
      if (k < 4) {
        ok = est >= 0.95 * wl - 500 && est <= 1.05 * wh + 500;
        if (est < wl)
          dev = (est - wl) / wl;
        else if (est > wh)
          dev = (est - wh) / wh;
      } else {
        ok = est >= 0.999 * wl - 500 && est <= 1.0625 * wh + 500;
      }
      if (k < 4 && fabs(dev) > fabs(worst))
        worst = dev;
      printf(" %s %.1f us (waits %.1f..%.1f)%s", names[k] + 8, est / 1e3, wl / 1e3,
             wh / 1e3, ok ? "" : " FAIL");
      if (!ok)
        fails++;
    }
    printf("\n");
  }
  long long got = prev - base;
  printf("qcheck intervals %d checked %d reads %lld of %d worst %+.2f%%\n", intervals,
         checked, got, n, 100 * worst);
  return fails == 0 && checked >= 1 && got == n ? 0 : 1;
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

/* vmtraffic drops KIND PORT N */
static int drops(const char *kind, int port, int n) {
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

static int stall(int port, int bytes, int idle, int seconds) {
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
    return tcp(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5], atoi(argv[6]),
               argc == 8);
  if (argc == 5 && !strcmp(argv[1], "drops"))
    return drops(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (argc == 6 && !strcmp(argv[1], "stall"))
    return stall(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
  if (argc == 6 && !strcmp(argv[1], "qcheck"))
    return qcheck(argv[2], argv[3], atof(argv[4]), atoll(argv[5]));
  fprintf(stderr, "usage: vmtraffic udp ADDR PORT N | "
                  "tcp ADDR PORT M DELAY_MS|SHAPE GAP_MS | qcheck DIR READS T0 BASE | clamp PORT SECONDS [CPU] | "
                  "conc PORT FLOWS N block|spin | drops udp|tcp|rcvbuf PORT N | "
                  "stall PORT BYTES IDLE SECONDS\n");
  return 2;
}
