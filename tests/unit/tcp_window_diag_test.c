/* The stalled-receivers reader of plugin/tcp_window.c against a stand-in
 * for the kernel: one end of an AF_UNIX datagram socket pair takes the
 * place of the NETLINK_SOCK_DIAG socket (one send() = one datagram = one
 * recv(), as with netlink), and the test queues the kernel's replies on
 * the other end before the read. What is checked is what the read
 * dispatches: late replies of an earlier request are ignored, a dump
 * flagged NLM_F_DUMP_INTR is done again once (twice: nothing dispatched),
 * and a kernel that never answers does not block the read thread. */
#include "../../plugin/tcp_window.c"

#include "mock_collectd.h"
#include "testlib.h"

#include <linux/rtnetlink.h>
#include <linux/tcp.h>
#include <signal.h>
#include <time.h>


static int kernel_end = -1; /* the stand-in kernel's end of the pair */

/* One datagram of replies. */
struct dgram {
  unsigned char b[4096];
  size_t len;
};

static void put(struct dgram *d, const void *p, size_t n) {
  memcpy(d->b + d->len, p, n);
  d->len += NLMSG_ALIGN(n);
}

/* An established socket with `rqueue` unread bytes, nothing received for
 * 10 minutes (stalled for StalledAfter 60). */
static void add_sock(struct dgram *d, uint32_t seq, uint16_t flags,
                     uint32_t rqueue) {
  size_t start = d->len;
  struct nlmsghdr h = {.nlmsg_type = TCPDIAG_GETSOCK,
                       .nlmsg_flags = NLM_F_MULTI | flags,
                       .nlmsg_seq = seq};
  put(d, &h, sizeof(h));
  struct inet_diag_msg m = {.idiag_family = AF_INET, .idiag_state = 1,
                            .idiag_rqueue = rqueue};
  put(d, &m, sizeof(m));
  struct tcp_info ti;
  memset(&ti, 0, sizeof(ti));
  ti.tcpi_last_data_recv = 600000;
  struct rtattr a = {.rta_len = (unsigned short)RTA_LENGTH(sizeof(ti)),
                     .rta_type = INET_DIAG_INFO};
  put(d, &a, sizeof(a));
  put(d, &ti, sizeof(ti));
  uint32_t len = (uint32_t)(d->len - start);
  memcpy(d->b + start, &len, sizeof(len));
}

static void add_done(struct dgram *d, uint32_t seq, uint16_t flags) {
  struct nlmsghdr h = {.nlmsg_len = NLMSG_LENGTH(sizeof(int)),
                       .nlmsg_type = NLMSG_DONE,
                       .nlmsg_flags = NLM_F_MULTI | flags,
                       .nlmsg_seq = seq};
  put(d, &h, sizeof(h));
  int zero = 0;
  put(d, &zero, sizeof(zero));
}

static void queue(const struct dgram *d) {
  if (send(kernel_end, d->b, d->len, 0) != (ssize_t)d->len) {
    perror("send");
    exit(1);
  }
}

/* Requests the reader sent since the last call; their sequence numbers
 * into seqs[]. */
static int requests(uint32_t seqs[8]) {
  int n = 0;
  unsigned char b[512];
  ssize_t got;
  while ((got = recv(kernel_end, b, sizeof(b), MSG_DONTWAIT)) > 0) {
    struct nlmsghdr h;
    memcpy(&h, b, sizeof(h));
    if (n < 8)
      seqs[n] = h.nlmsg_seq;
    n++;
  }
  return n;
}

static int setup(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
    return -1;
  cfg_defaults();
  diag_fd = sv[0];
  kernel_end = sv[1];
  diag_buf = malloc(DIAG_BUF_SIZE);
  diag_one_walk = true;
  mock_reset();
  return diag_socket_setup(diag_fd);
}

static void teardown(void) {
  close(diag_fd);
  close(kernel_end);
  diag_fd = kernel_end = -1;
  free(diag_buf);
  diag_buf = NULL;
}

static const struct mock_value *stalled_count_value(void) {
  return mock_find("tcp_window", "", "count", "stalled_receivers");
}
static const struct mock_value *stalled_bytes_value(void) {
  return mock_find("tcp_window", "", "bytes", "stalled_receivers");
}

/* The rest of a dump whose request failed arrives after the next request
 * went out: its sockets and its DONE are not the new dump's. */
DEF_TEST(late_replies_of_an_earlier_request) {
  CHECK_EQ_INT(0, setup());
  uint32_t seq = diag_seq + 1; /* the next request's */
  struct dgram old = {.len = 0}, ours = {.len = 0};
  add_sock(&old, seq - 1, 0, 5000);
  add_done(&old, seq - 1, 0);
  add_sock(&ours, seq, 0, 300);
  add_done(&ours, seq, 0);
  queue(&old);
  queue(&ours);
  stalled_read();
  uint32_t seqs[8];
  CHECK_EQ_INT(1, requests(seqs));
  CHECK_EQ_U64(seq, seqs[0]);
  const struct mock_value *c = stalled_count_value(),
                          *b = stalled_bytes_value();
  CHECK(c && b);
  CHECK_EQ_INT(1, c->v.gauge);
  CHECK_EQ_INT(300, b->v.gauge);
  teardown();
  return 0;
}

/* NLM_F_DUMP_INTR: the dump is done again once, and the second count is
 * the one dispatched. */
DEF_TEST(interrupted_dump_is_retried_once) {
  CHECK_EQ_INT(0, setup());
  uint32_t seq = diag_seq + 1;
  struct dgram first = {.len = 0}, second = {.len = 0};
  add_sock(&first, seq, NLM_F_DUMP_INTR, 5000);
  add_sock(&first, seq, NLM_F_DUMP_INTR, 5000); /* seen twice */
  add_done(&first, seq, NLM_F_DUMP_INTR);
  add_sock(&second, seq + 1, 0, 5000);
  add_done(&second, seq + 1, 0);
  queue(&first);
  queue(&second);
  stalled_read();
  uint32_t seqs[8];
  CHECK_EQ_INT(2, requests(seqs));
  CHECK_EQ_U64(seq + 1, seqs[1]);
  const struct mock_value *c = stalled_count_value();
  CHECK(c);
  CHECK_EQ_INT(1, c->v.gauge);
  CHECK_EQ_INT(5000, stalled_bytes_value()->v.gauge);
  teardown();
  return 0;
}

DEF_TEST(interrupted_twice_dispatches_nothing) {
  CHECK_EQ_INT(0, setup());
  uint32_t seq = diag_seq + 1;
  for (uint32_t i = 0; i < 2; i++) {
    struct dgram d = {.len = 0};
    add_sock(&d, seq + i, 0, 700);
    add_done(&d, seq + i, NLM_F_DUMP_INTR); /* on DONE only */
    queue(&d);
  }
  stalled_read();
  uint32_t seqs[8];
  CHECK_EQ_INT(2, requests(seqs));
  CHECK(stalled_count_value() == NULL);
  CHECK(stalled_bytes_value() == NULL);
  CHECK(mock_log_find(LOG_NOTICE, "interrupted twice") >= 0);
  teardown();
  return 0;
}

static void blocked(int sig) {
  (void)sig;
  static const char m[] =
      "  the read blocked on a silent kernel for 10 s\n"
      "FAIL: tcp_window_diag_test.silent_kernel_does_not_block\n";
  if (write(1, m, sizeof(m) - 1) < 0)
    _exit(2);
  _exit(1);
}

/* A kernel that never answers: the read gives up after the receive
 * timeout, dispatches nothing, says so, and keeps the one-walk dump (a
 * timeout is not a refusal). */
DEF_TEST(silent_kernel_does_not_block) {
  CHECK_EQ_INT(0, setup());
  fflush(stdout);
  signal(SIGALRM, blocked);
  alarm(10);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  stalled_read();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  alarm(0);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK(s >= DIAG_RECV_TIMEOUT_S - 0.05 && s < DIAG_RECV_TIMEOUT_S + 1);
  CHECK(stalled_count_value() == NULL);
  CHECK(mock_log_find(LOG_WARNING, "no sock_diag reply") >= 0);
  CHECK(diag_one_walk);
  /* The late answer to that request is ignored by the next read. */
  uint32_t seq = diag_seq;
  struct dgram late = {.len = 0}, ours = {.len = 0};
  add_sock(&late, seq, 0, 5000);
  add_done(&late, seq, 0);
  add_done(&ours, seq + 1, 0);
  queue(&late);
  queue(&ours);
  mock_reset();
  stalled_read();
  const struct mock_value *c = stalled_count_value();
  CHECK(c);
  CHECK_EQ_INT(0, c->v.gauge);
  teardown();
  return 0;
}

int main(void) {
  tl_prog = "tcp_window_diag_test";
  RUN_TEST(late_replies_of_an_earlier_request);
  RUN_TEST(interrupted_dump_is_retried_once);
  RUN_TEST(interrupted_twice_dispatches_nothing);
  RUN_TEST(silent_kernel_does_not_block);
  END_TEST;
}
