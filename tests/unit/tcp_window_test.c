/* Unit tests for plugin/tcp_window_parse.c. Every buffer is an exact-size
 * heap copy (no NUL, odd alignment for the netlink walk) so that ASan or
 * valgrind catch any read past the end. */
#include "testlib.h"

#include "../../plugin/tcp_window_parse.c"

#include <errno.h>
#include <sys/socket.h>

static int sockstat(const char *s, uint64_t *pages) {
  size_t n = strlen(s);
  char *c = malloc(n ? n : 1);
  memcpy(c, s, n);
  *pages = 777;
  int st = sockstat_tcp_mem(c, n, pages);
  free(c);
  return st;
}

static int tcpmem(const char *s, uint64_t out[3]) {
  size_t n = strlen(s);
  char *c = malloc(n ? n : 1);
  memcpy(c, s, n);
  out[0] = out[1] = out[2] = 777;
  int st = tcp_mem_parse(c, n, out);
  free(c);
  return st;
}

DEF_TEST(sockstat_good) {
  uint64_t p;
  CHECK_EQ_INT(0, sockstat("sockets: used 11\n"
                           "TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 114\n"
                           "UDP: inuse 0 mem 0\n",
                           &p));
  CHECK_EQ_U64(114, p);
  /* no final newline, mem last */
  CHECK_EQ_INT(0, sockstat("TCP: inuse 5 orphan 0 tw 2 alloc 9 mem 0", &p));
  CHECK_EQ_U64(0, p);
  /* TCP6 (sockstat6) and UDP mem must not be taken for TCP's */
  CHECK_EQ_INT(0, sockstat("UDP: inuse 0 mem 99\nTCP6: inuse 1\n"
                           "TCP: mem 18446744073709551615 inuse 1\n",
                           &p));
  CHECK_EQ_U64(UINT64_MAX, p);
  return 0;
}

DEF_TEST(sockstat_bad) {
  uint64_t p;
  CHECK_EQ_INT(-ENOENT, sockstat("", &p));
  CHECK_EQ_INT(-ENOENT, sockstat("UDP: inuse 0 mem 3\n", &p));
  CHECK_EQ_INT(-ENOENT, sockstat("TCP: inuse 1 orphan 0\n", &p));
  CHECK_EQ_INT(-EINVAL, sockstat("TCP: inuse 1 mem\n", &p));
  CHECK_EQ_INT(-EINVAL, sockstat("TCP: mem -4\n", &p));
  CHECK_EQ_INT(-EINVAL, sockstat("TCP: mem 12abc\n", &p));
  CHECK_EQ_INT(-ERANGE, sockstat("TCP: mem 18446744073709551616\n", &p));
  CHECK_EQ_U64(777, p); /* untouched on error */
  return 0;
}

DEF_TEST(tcp_mem_good) {
  uint64_t v[3];
  CHECK_EQ_INT(0, tcpmem("287901\t383868\t575802\n", v));
  CHECK_EQ_U64(287901, v[0]);
  CHECK_EQ_U64(383868, v[1]);
  CHECK_EQ_U64(575802, v[2]);
  CHECK_EQ_INT(0, tcpmem("1 2 3", v));
  CHECK_EQ_U64(3, v[2]);
  CHECK_EQ_INT(0, tcpmem(" 1  2 \t 3 \n", v));
  return 0;
}

DEF_TEST(tcp_mem_bad) {
  uint64_t v[3];
  CHECK_EQ_INT(-EINVAL, tcpmem("", v));
  CHECK_EQ_INT(-EINVAL, tcpmem("1 2\n", v));
  CHECK_EQ_INT(-EINVAL, tcpmem("1 2 3 4\n", v));
  CHECK_EQ_INT(-EINVAL, tcpmem("1 2 3\n\n", v));
  CHECK_EQ_INT(-EINVAL, tcpmem("1 -2 3\n", v));
  CHECK_EQ_INT(-EINVAL, tcpmem("1,2,3\n", v));
  CHECK_EQ_INT(-EINVAL, tcpmem("1 2 3x", v));
  CHECK_EQ_INT(-ERANGE, tcpmem("1 99999999999999999999 3", v));
  CHECK_EQ_U64(777, v[0]);
  return 0;
}

/* ---- crafted netlink buffers ---- */

struct nlbuf {
  unsigned char b[8192];
  size_t len;
};

static void *put(struct nlbuf *nb, const void *p, size_t n) {
  void *at = nb->b + nb->len;
  memcpy(at, p, n);
  nb->len += NLMSG_ALIGN(n);
  return at;
}

/* One SOCK_DIAG_BY_FAMILY message. info_len: bytes of tcp_info to attach
 * (0: no INET_DIAG_INFO attribute). */
static void add_sock(struct nlbuf *nb, uint8_t state, uint32_t rqueue,
                     uint32_t last_data_recv_ms, size_t info_len) {
  size_t start = nb->len;
  struct nlmsghdr h = {.nlmsg_type = SOCK_DIAG_BY_FAMILY,
                       .nlmsg_flags = NLM_F_MULTI};
  put(nb, &h, sizeof(h));
  struct inet_diag_msg m = {.idiag_family = AF_INET,
                            .idiag_state = state,
                            .idiag_rqueue = rqueue};
  put(nb, &m, sizeof(m));
  /* an attribute before INFO, as the kernel sends INET_DIAG_SHUTDOWN */
  struct rtattr sh = {.rta_len = RTA_LENGTH(1), .rta_type = INET_DIAG_SHUTDOWN};
  unsigned char shb[RTA_SPACE(1)] = {0};
  memcpy(shb, &sh, sizeof(sh));
  put(nb, shb, sizeof(shb));
  if (info_len) {
    struct tcp_info ti;
    memset(&ti, 0, sizeof(ti));
    ti.tcpi_last_data_recv = last_data_recv_ms;
    struct rtattr a = {.rta_len = (unsigned short)RTA_LENGTH(info_len),
                       .rta_type = INET_DIAG_INFO};
    put(nb, &a, sizeof(a));
    nb->len -= NLMSG_ALIGN(sizeof(a)) - sizeof(a);
    put(nb, &ti, info_len);
  }
  struct nlmsghdr *hp = (struct nlmsghdr *)(nb->b + start);
  hp->nlmsg_len = (uint32_t)(nb->len - start);
}

static void add_done(struct nlbuf *nb) {
  struct nlmsghdr h = {.nlmsg_len = NLMSG_LENGTH(sizeof(int)),
                       .nlmsg_type = NLMSG_DONE};
  put(nb, &h, sizeof(h));
  int zero = 0;
  put(nb, &zero, sizeof(zero));
}

/* Walk through an exact-size copy at an odd address. */
static int walk(const struct nlbuf *nb, size_t len, uint32_t ms,
                struct stall_acc *acc) {
  unsigned char *c = malloc(len + 1);
  memcpy(c + 1, nb->b, len);
  int st = sockdiag_walk(c + 1, len, ms, acc);
  free(c);
  return st;
}

DEF_TEST(diag_counts_stalled) {
  struct nlbuf nb = {.len = 0};
  add_sock(&nb, 1, 0, 999999, sizeof(struct tcp_info)); /* empty queue */
  add_sock(&nb, 1, 5000, 2001, sizeof(struct tcp_info)); /* stalled */
  add_sock(&nb, 8, 300, 60000, sizeof(struct tcp_info)); /* CLOSE_WAIT */
  add_sock(&nb, 1, 700, 2000, sizeof(struct tcp_info));  /* not > limit */
  add_sock(&nb, 10, 4, 999999, sizeof(struct tcp_info)); /* LISTEN backlog */
  add_sock(&nb, 1, 100, 999999, LAST_DATA_RECV_END);     /* short, enough */
  add_sock(&nb, 1, 100, 999999, LAST_DATA_RECV_END - 1); /* too short */
  add_sock(&nb, 1, 100, 999999, 0);                      /* no INFO */
  struct stall_acc acc = {0};
  CHECK_EQ_INT(0, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(8, acc.sockets);
  CHECK_EQ_U64(3, acc.stalled);
  CHECK_EQ_U64(5400, acc.stalled_bytes);
  CHECK_EQ_U64(2, acc.no_info);
  add_done(&nb);
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_INT(1, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(3, acc.stalled);
  return 0;
}

/* The one-walk dump's replies carry TCPDIAG_GETSOCK: counted the same;
 * any other type (here 99) carries nothing for us. */
DEF_TEST(diag_compat_reply_type) {
  struct nlbuf nb = {.len = 0};
  add_sock(&nb, 1, 5000, 3000, sizeof(struct tcp_info));
  add_sock(&nb, 1, 700, 3000, sizeof(struct tcp_info));
  add_sock(&nb, 1, 900, 3000, sizeof(struct tcp_info));
  /* Retype the first and third message (memcpy: no alignment assumed). */
  struct nlmsghdr h;
  size_t off = 0;
  for (int i = 0; i < 3; i++) {
    memcpy(&h, nb.b + off, sizeof(h));
    if (i != 1) {
      h.nlmsg_type = i == 0 ? TCPDIAG_GETSOCK : 99;
      memcpy(nb.b + off, &h, sizeof(h));
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  struct stall_acc acc = {0};
  CHECK_EQ_INT(0, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(2, acc.sockets);
  CHECK_EQ_U64(2, acc.stalled);
  CHECK_EQ_U64(5700, acc.stalled_bytes);
  return 0;
}

DEF_TEST(diag_done_and_error) {
  struct nlbuf nb = {.len = 0};
  add_done(&nb);
  add_sock(&nb, 1, 5000, 99999, sizeof(struct tcp_info)); /* after DONE */
  struct stall_acc acc = {0};
  CHECK_EQ_INT(1, walk(&nb, nb.len, 1, &acc));
  CHECK_EQ_U64(0, acc.sockets);

  struct nlbuf e = {.len = 0};
  struct nlmsghdr h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
                       .nlmsg_type = NLMSG_ERROR};
  put(&e, &h, sizeof(h));
  struct nlmsgerr err = {.error = -ENOENT};
  put(&e, &err, sizeof(err));
  CHECK_EQ_INT(-ENOENT, walk(&e, e.len, 1, &acc));
  ((struct nlmsgerr *)(e.b + NLMSG_HDRLEN))->error = 0;
  CHECK_EQ_INT(-EPROTO, walk(&e, e.len, 1, &acc));
  ((struct nlmsgerr *)(e.b + NLMSG_HDRLEN))->error = -100000;
  CHECK_EQ_INT(-EPROTO, walk(&e, e.len, 1, &acc));
  /* an error message too short for its errno */
  ((struct nlmsghdr *)e.b)->nlmsg_len = NLMSG_HDRLEN + 2;
  CHECK_EQ_INT(-EBADMSG, walk(&e, NLMSG_HDRLEN + 2, 1, &acc));
  return 0;
}

DEF_TEST(diag_malformed) {
  struct nlbuf nb = {.len = 0};
  add_sock(&nb, 1, 5000, 99999, sizeof(struct tcp_info));
  struct stall_acc acc = {0};
  /* Every truncation of a valid message is refused or ignored, never
   * read past: ASan is the real check here. */
  for (size_t n = 0; n < nb.len; n++) {
    memset(&acc, 0, sizeof(acc));
    int st = walk(&nb, n, 1, &acc);
    if (n == 0)
      CHECK_EQ_INT(0, st);
    else
      CHECK_EQ_INT(-EBADMSG, st);
    CHECK_EQ_U64(0, acc.stalled);
  }
  /* nlmsg_len smaller than the header */
  struct nlbuf b = nb;
  ((struct nlmsghdr *)b.b)->nlmsg_len = 8;
  CHECK_EQ_INT(-EBADMSG, walk(&b, b.len, 1, &acc));
  /* nlmsg_len larger than the buffer */
  b = nb;
  ((struct nlmsghdr *)b.b)->nlmsg_len = (uint32_t)b.len + 4;
  CHECK_EQ_INT(-EBADMSG, walk(&b, b.len, 1, &acc));
  /* payload shorter than inet_diag_msg */
  b = nb;
  ((struct nlmsghdr *)b.b)->nlmsg_len = NLMSG_HDRLEN + 10;
  CHECK_EQ_INT(-EBADMSG, walk(&b, NLMSG_HDRLEN + 12, 1, &acc));
  /* attribute with rta_len 2, and one running past the message */
  b = nb;
  struct rtattr *a =
      (struct rtattr *)(b.b + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct inet_diag_msg)));
  a->rta_len = 2;
  CHECK_EQ_INT(-EBADMSG, walk(&b, b.len, 1, &acc));
  a->rta_len = 4000;
  CHECK_EQ_INT(-EBADMSG, walk(&b, b.len, 1, &acc));
  /* unknown message types are skipped */
  struct nlbuf u = {.len = 0};
  struct nlmsghdr h = {.nlmsg_len = NLMSG_HDRLEN, .nlmsg_type = NLMSG_NOOP};
  put(&u, &h, sizeof(h));
  add_done(&u);
  CHECK_EQ_INT(1, walk(&u, u.len, 1, &acc));
  /* deterministic garbage: no crash, no over-read */
  unsigned x = 12345;
  for (int round = 0; round < 2000; round++) {
    struct nlbuf g = nb;
    for (int k = 0; k < 8; k++) {
      x = x * 1103515245u + 12345u;
      g.b[(x >> 8) % g.len] = (unsigned char)(x >> 16);
    }
    memset(&acc, 0, sizeof(acc));
    int st = walk(&g, g.len, 1, &acc);
    CHECK(st == 0 || st == 1 || st < 0);
    CHECK(acc.stalled <= 1);
  }
  return 0;
}

int main(void) {
  tl_prog = "tcp_window_test";
  RUN_TEST(sockstat_good);
  RUN_TEST(sockstat_bad);
  RUN_TEST(tcp_mem_good);
  RUN_TEST(tcp_mem_bad);
  RUN_TEST(diag_counts_stalled);
  RUN_TEST(diag_compat_reply_type);
  RUN_TEST(diag_done_and_error);
  RUN_TEST(diag_malformed);
  END_TEST;
}
