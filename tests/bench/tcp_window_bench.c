/* Measurements quoted in docs/tcp_window.md; not part of `make check`.
 *
 *   tcp_window_bench cost [N]  BPF run stats of tcp_window_sk_data_ready
 *                              and of the empty program on the same
 *                              tracepoint, N loopback TCP ping-pongs each
 *   tcp_window_bench read [N]  wall time of the stalled-receivers read
 *                              (a whole walk: the BPF iterator where it
 *                              loads, EBPF_TEST_STALLED_SCAN=sock_diag for
 *                              sock_diag's dumps), N rounds, for the
 *                              sockets that exist now in this netns
 *   tcp_window_bench notify [N] the same read with N stalled receivers of
 *                              its own: notifications off; the read in
 *                              which all N become stalled (owner lookup in
 *                              /proc, N WARNINGs); the reads after it
 *
 * Build: make build/tests/tcp_window_bench (root needed to run). */
#include "../../plugin/tcp_window/stalled.c"

#include "common/netns.h"
#include "tcp_window.skel.h"
#include "mock_collectd.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <time.h>


/* A block that sets nothing but what each mode says. */
static struct tcpw_cfg bench_cfg = {.threshold = TCP_WINDOW_DEFAULT_THRESHOLD,
                                    .stalled_after = 60,
                                    .stalled = true,
                                    .stalled_notify = true};
static value_list_t tw; /* the values' identity */

/* The stalled receivers in collectd's own namespace. */
static int start(void) {
  struct netns ns;
  vl_prepare(&tw, "tcp_window", "");
  if (netns_resolve(NULL, "tcp_window", &ns))
    return -1;
  return tcpw_stalled_init(&bench_cfg, &ns);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pingpong(int n) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr *)&a, &al)) {
    perror("listen");
    exit(1);
  }
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(c, (struct sockaddr *)&a, sizeof(a))) {
    perror("connect");
    exit(1);
  }
  int s = accept(ls, NULL, NULL);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char b[64] = {0};
  for (int i = 0; i < n; i++) {
    if (write(c, b, sizeof(b)) != sizeof(b) || read(s, b, sizeof(b)) <= 0 ||
        write(s, b, sizeof(b)) != sizeof(b) || read(c, b, sizeof(b)) <= 0) {
      perror("pingpong");
      exit(1);
    }
  }
  close(c);
  close(s);
  close(ls);
}

static void cost_of(const char *name, int n, bool transitions) {
  struct tcp_window_bpf *sk = tcp_window_bpf__open();
  sk->rodata->targ_transitions = transitions;
  struct bpf_program *p;
  struct bpf_program *want = NULL;
  bpf_object__for_each_program(p, sk->obj) {
    bool on = strcmp(bpf_program__name(p), name) == 0;
    bpf_program__set_autoload(p, on);
    if (on)
      want = p;
  }
  if (!want || tcp_window_bpf__load(sk)) {
    fprintf(stderr, "cannot load %s\n", name);
    exit(1);
  }
  struct bpf_link *l = bpf_program__attach(want);
  if (!l) {
    fprintf(stderr, "cannot attach %s\n", name);
    exit(1);
  }
  pingpong(n);
  struct bpf_prog_info info;
  __u32 len = sizeof(info);
  memset(&info, 0, sizeof(info));
  bpf_obj_get_info_by_fd(bpf_program__fd(want), &info, &len);
  printf("%-26s%s runs %9llu  ns/run %7.1f\n", name,
         transitions ? "" : " (no transitions)",
         (unsigned long long)info.run_cnt,
         info.run_cnt ? (double)info.run_time_ns / (double)info.run_cnt : 0);
  bpf_link__destroy(l);
  tcp_window_bpf__destroy(sk);
}

/* best and mean of `rounds` stalled reads, ms */
static void time_reads(const char *what, int rounds, void (*before)(void)) {
  double best = 1e9, sum = 0;
  for (int i = 0; i < rounds; i++) {
    if (before)
      before();
    mock_reset();
    double t = now_s();
    tcpw_stalled_read(&tw);
    t = now_s() - t;
    sum += t;
    if (t < best)
      best = t;
  }
  const struct mock_value *v =
      mock_find("tcp_window", "", "count", "stalled_receivers");
  printf("%-44s best %7.2f ms, mean %7.2f ms over %d (stalled: %g)\n", what,
         best * 1e3, sum / rounds * 1e3, rounds, v ? v->v.gauge : -1.0);
}

/* Tracking starts afresh: every stalled socket is new to the next read. */
static void forget_all(void) {
  if (st_init())
    exit(1);
}

/* n loopback connections whose receivers hold 100 unread bytes. */
static void stalled_sockets(int n) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 128) ||
      getsockname(ls, (struct sockaddr *)&a, &al)) {
    perror("listen");
    exit(1);
  }
  char b[100] = {0};
  for (int i = 0; i < n; i++) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) ||
        accept(ls, NULL, NULL) < 0 || write(c, b, sizeof(b)) != sizeof(b)) {
      perror("connection");
      exit(1);
    }
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int n = argc > 2 ? atoi(argv[2]) : 0;
  if (strcmp(mode, "cost") == 0) {
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (fd < 0) {
      perror("bpf_enable_stats");
      return 1;
    }
    for (int r = 0; r < 3; r++) {
      cost_of("tcp_window_empty", n ? n : 100000, true);
      cost_of("tcp_window_sk_data_ready", n ? n : 100000, true);
      cost_of("tcp_window_sk_data_ready", n ? n : 100000, false);
    }
    close(fd);
    return 0;
  }
  if (strcmp(mode, "read") == 0) {
    bench_cfg.stalled_notify = false; /* the walk alone; `notify`: the rest */
    if (start())
      return 1;
    n = n ? n : 20;
    double best = 1e9, sum = 0;
    for (int i = 0; i < n; i++) {
      mock_reset();
      double t = now_s();
      tcpw_stalled_read(&tw);
      t = now_s() - t;
      sum += t;
      if (t < best)
        best = t;
    }
    const struct mock_value *v =
        mock_find("tcp_window", "", "count", "stalled_receivers");
    printf("stalled read: best %.2f ms, mean %.2f ms over %d (stalled now: "
           "%g)\n",
           best * 1e3, sum / n * 1e3, n, v ? v->v.gauge : -1.0);
    return 0;
  }
  if (strcmp(mode, "notify") == 0) {
    n = n ? n : 1000;
    bench_cfg.stalled_after = 0.001;
    bench_cfg.stalled_notify = false; /* on from forget_all() */
    if (start())
      return 1;
    stalled_sockets(n);
    usleep(50000);
    char what[80];
    snprintf(what, sizeof(what), "%d stalled, notifications off:", n);
    time_reads(what, 20, NULL);
    snprintf(what, sizeof(what), "%d stalled, the read that notifies them:", n);
    time_reads(what, 10, forget_all);
    printf("  (notifications: %d dispatched to the mock, first has pid: %s)\n",
           mock_nnotif,
           mock_nnotif && mock_nmeta_find(&mock_notifs[0], "pid") ? "yes"
                                                                   : "no");
    snprintf(what, sizeof(what), "%d stalled, tracked, reads after:", n);
    time_reads(what, 20, NULL);
    return 0;
  }
  fprintf(stderr, "usage: %s cost|read|notify [N]\n", argv[0]);
  return 2;
}
