/* Unit tests for plugin/tcp_window/parse.c. Every buffer is an exact-size
 * heap copy (no NUL, odd alignment for the netlink walk) so that ASan or
 * valgrind catch any read past the end. */
#include "testlib.h"

#include "../../plugin/tcp_window/parse.c"

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

/* The sequence number of the request the walk expects (SEQ), and the one
 * the helpers below give the messages they add (msg_seq). */
#define SEQ 4242u
static uint32_t msg_seq = SEQ;

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

static uint64_t msg_cgroup; /* INET_DIAG_CGROUP_ID to attach; 0: none */

/* One SOCK_DIAG_BY_FAMILY message. info_len: bytes of tcp_info to attach
 * (0: no INET_DIAG_INFO attribute). */
static void add_sock(struct nlbuf *nb, uint8_t state, uint32_t rqueue,
                     uint32_t last_data_recv_ms, size_t info_len) {
  size_t start = nb->len;
  struct nlmsghdr h = {.nlmsg_type = SOCK_DIAG_BY_FAMILY,
                       .nlmsg_flags = NLM_F_MULTI,
                       .nlmsg_seq = msg_seq};
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
  if (msg_cgroup) {
    struct rtattr a = {.rta_len = RTA_LENGTH(sizeof(msg_cgroup)),
                       .rta_type = INET_DIAG_CGROUP_ID};
    unsigned char ab[RTA_SPACE(sizeof(msg_cgroup))];
    memcpy(ab, &a, sizeof(a));
    memcpy(ab + RTA_LENGTH(0), &msg_cgroup, sizeof(msg_cgroup));
    put(nb, ab, sizeof(ab));
  }
  struct nlmsghdr *hp = (struct nlmsghdr *)(nb->b + start);
  hp->nlmsg_len = (uint32_t)(nb->len - start);
}

static void add_done(struct nlbuf *nb) {
  struct nlmsghdr h = {.nlmsg_len = NLMSG_LENGTH(sizeof(int)),
                       .nlmsg_type = NLMSG_DONE,
                       .nlmsg_flags = NLM_F_MULTI,
                       .nlmsg_seq = msg_seq};
  put(nb, &h, sizeof(h));
  int zero = 0;
  put(nb, &zero, sizeof(zero));
}

/* Walk through an exact-size copy at an odd address. */
static int walk(const struct nlbuf *nb, size_t len, uint32_t ms,
                struct stall_acc *acc) {
  unsigned char *c = malloc(len + 1);
  memcpy(c + 1, nb->b, len);
  int st = sockdiag_walk(c + 1, len, SEQ, ms, acc);
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
                       .nlmsg_type = NLMSG_ERROR,
                       .nlmsg_seq = SEQ};
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

struct seen {
  uint64_t sockets;
};
static void count_each(const struct diag_sock *s, void *arg) {
  (void)s;
  ((struct seen *)arg)->sockets++;
}

/* The replies to a batch of exact requests (seq SEQ .. SEQ + 3): each
 * socket reply and each error (a socket gone) answers one request; a
 * listener answers without being handed on; a reply of another batch is
 * foreign. */
DEF_TEST(diag_exact_batch) {
  struct nlbuf nb = {.len = 0};
  msg_seq = SEQ;
  add_sock(&nb, 1, 5000, 3000, sizeof(struct tcp_info)); /* stalled */
  msg_seq = SEQ + 1;
  add_sock(&nb, 1, 0, 3000, sizeof(struct tcp_info)); /* read since */
  msg_seq = SEQ + 9;
  add_sock(&nb, 1, 7000, 3000, sizeof(struct tcp_info)); /* foreign */
  struct nlmsghdr h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
                       .nlmsg_type = NLMSG_ERROR,
                       .nlmsg_seq = SEQ + 2};
  put(&nb, &h, sizeof(h));
  struct nlmsgerr err = {.error = -ENOENT};
  put(&nb, &err, sizeof(err));
  msg_seq = SEQ + 3;
  add_sock(&nb, 10, 0, 0, sizeof(struct tcp_info)); /* a listener */
  msg_seq = SEQ;
  struct seen n = {0};
  struct stall_acc acc = {.each = count_each, .arg = &n};
  unsigned char *c = malloc(nb.len + 1);
  memcpy(c + 1, nb.b, nb.len);
  CHECK_EQ_INT(4, sockdiag_exact_walk(c + 1, nb.len, SEQ, 4, 2000, &acc));
  CHECK_EQ_U64(3, acc.sockets);
  CHECK_EQ_U64(1, acc.stalled);
  CHECK_EQ_U64(5000, acc.stalled_bytes);
  CHECK_EQ_U64(1, acc.foreign);
  CHECK_EQ_U64(2, n.sockets); /* the stalled one and the one read */
  /* A batch of two: the rest is foreign. */
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_INT(2, sockdiag_exact_walk(c + 1, nb.len, SEQ, 2, 2000, &acc));
  CHECK_EQ_U64(3, acc.foreign);
  /* Truncated: refused, never read past (ASan). */
  for (size_t k = 1; k < NLMSG_HDRLEN + sizeof(struct inet_diag_msg); k++) {
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_INT(-EBADMSG, sockdiag_exact_walk(c + 1, k, SEQ, 4, 2000, &acc));
  }
  free(c);
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
  struct nlmsghdr h = {.nlmsg_len = NLMSG_HDRLEN, .nlmsg_type = NLMSG_NOOP,
                       .nlmsg_seq = SEQ};
  put(&u, &h, sizeof(h));
  add_done(&u);
  CHECK_EQ_INT(1, walk(&u, u.len, 1, &acc));
  return 0;
}

/* Deterministic garbage in one valid message (its length field left
 * alone: the cases above cover lengths), against an oracle that reads the
 * mutated header on its own: what the walk returns and counts follows
 * from the type, flags and sequence number alone, except that a mutated
 * attribute may make the message malformed. ASan checks the reads. */
DEF_TEST(diag_garbage_against_oracle) {
  struct nlbuf nb = {.len = 0};
  add_sock(&nb, 1, 5000, 99999, sizeof(struct tcp_info));
  const size_t attrs = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct inet_diag_msg));
  unsigned x = 12345;
  int kinds[6] = {0};
  for (int round = 0; round < 4000; round++) {
    struct nlbuf g = nb;
    bool attr_hit = false;
    for (int k = 0; k < 4; k++) {
      x = x * 1103515245u + 12345u;
      size_t at = 4 + (x >> 8) % (g.len - 4);
      attr_hit |= at >= attrs;
      g.b[at] = (unsigned char)(x >> 16);
    }
    /* Every fourth round: a type the walk acts on, so that each branch
     * is reached often. */
    struct nlmsghdr h;
    memcpy(&h, g.b, sizeof(h));
    static const uint16_t types[] = {NLMSG_DONE, NLMSG_ERROR,
                                     SOCK_DIAG_BY_FAMILY, TCPDIAG_GETSOCK};
    if (round % 4 == 0)
      h.nlmsg_type = types[(round / 4) % 4];
    if (round % 8 == 0)
      h.nlmsg_seq = SEQ; /* ours, with whatever flags */
    memcpy(g.b, &h, sizeof(h));

    struct stall_acc acc = {0};
    int st = walk(&g, g.len, 1, &acc);
    bool ours = h.nlmsg_seq == SEQ;
    CHECK_EQ_U64(ours ? 0 : 1, acc.foreign);
    CHECK_EQ_U64(ours && (h.nlmsg_flags & NLM_F_DUMP_INTR) ? 1 : 0,
                 acc.interrupted);
    if (!ours) {
      kinds[0]++;
      CHECK_EQ_INT(0, st);
      CHECK_EQ_U64(0, acc.sockets);
    } else if (h.nlmsg_type == NLMSG_DONE) {
      kinds[1]++;
      CHECK_EQ_INT(1, st);
    } else if (h.nlmsg_type == NLMSG_ERROR) {
      kinds[2]++;
      int e;
      memcpy(&e, g.b + NLMSG_HDRLEN, sizeof(e));
      CHECK_EQ_INT(e < 0 && e > -4096 ? e : -EPROTO, st);
    } else if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY ||
               h.nlmsg_type == TCPDIAG_GETSOCK) {
      kinds[3]++;
      if (st == 0) {
        kinds[4]++;
        CHECK_EQ_U64(1, acc.sockets);
        CHECK(acc.stalled <= 1);
      } else {
        CHECK_EQ_INT(-EBADMSG, st);
        CHECK(attr_hit);
      }
    } else {
      kinds[5]++;
      CHECK_EQ_INT(0, st);
      CHECK_EQ_U64(0, acc.sockets);
    }
    CHECK(acc.stalled <= acc.sockets);
  }
  /* every branch of the oracle was taken */
  for (int k = 0; k < 6; k++)
    CHECK(kinds[k] > 10);
  return 0;
}

/* Replies to an earlier request (a dump that failed or timed out, whose
 * rest arrives late) are not ours: not counted, and their DONE or ERROR
 * does not end our dump. */
DEF_TEST(diag_ignores_other_requests) {
  struct nlbuf nb = {.len = 0};
  msg_seq = SEQ - 1;
  add_sock(&nb, 1, 5000, 99999, sizeof(struct tcp_info));
  add_done(&nb);
  struct nlmsghdr eh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
                        .nlmsg_type = NLMSG_ERROR,
                        .nlmsg_seq = SEQ + 1};
  put(&nb, &eh, sizeof(eh));
  struct nlmsgerr err = {.error = -ENOENT};
  put(&nb, &err, sizeof(err));
  size_t foreign_len = nb.len;
  msg_seq = SEQ;
  add_sock(&nb, 1, 300, 99999, sizeof(struct tcp_info));
  add_sock(&nb, 1, 20, 99999, sizeof(struct tcp_info));
  add_done(&nb);

  struct stall_acc acc = {0};
  CHECK_EQ_INT(1, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(2, acc.sockets);
  CHECK_EQ_U64(2, acc.stalled);
  CHECK_EQ_U64(320, acc.stalled_bytes);
  CHECK_EQ_U64(3, acc.foreign);
  CHECK_EQ_U64(0, acc.interrupted);
  /* a datagram of foreign messages only: nothing counted, more to come */
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_INT(0, walk(&nb, foreign_len, 2000, &acc));
  CHECK_EQ_U64(0, acc.sockets);
  CHECK_EQ_U64(3, acc.foreign);
  return 0;
}

/* NLM_F_DUMP_INTR on any message of ours (the kernel puts it on the
 * messages built after its tables changed, and on DONE) is reported; the
 * walk still goes on to DONE so that nothing of the dump stays queued. */
DEF_TEST(diag_dump_interrupted) {
  struct nlbuf nb = {.len = 0};
  add_sock(&nb, 1, 5000, 99999, sizeof(struct tcp_info));
  size_t first = nb.len;
  add_sock(&nb, 1, 300, 99999, sizeof(struct tcp_info));
  add_done(&nb);
  struct stall_acc acc = {0};
  CHECK_EQ_INT(1, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(0, acc.interrupted);

  struct nlmsghdr h;
  memcpy(&h, nb.b + first, sizeof(h));
  h.nlmsg_flags |= NLM_F_DUMP_INTR;
  memcpy(nb.b + first, &h, sizeof(h));
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_INT(1, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(1, acc.interrupted);
  CHECK_EQ_U64(2, acc.stalled);
  CHECK_EQ_U64(5300, acc.stalled_bytes);

  /* on DONE only */
  memcpy(&h, nb.b + first, sizeof(h));
  h.nlmsg_flags &= (uint16_t)~NLM_F_DUMP_INTR;
  memcpy(nb.b + first, &h, sizeof(h));
  size_t done = nb.len - NLMSG_ALIGN(NLMSG_LENGTH(sizeof(int)));
  memcpy(&h, nb.b + done, sizeof(h));
  h.nlmsg_flags |= NLM_F_DUMP_INTR;
  memcpy(nb.b + done, &h, sizeof(h));
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_INT(1, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(1, acc.interrupted);
  /* a foreign message's flag is not ours */
  h.nlmsg_seq = SEQ + 9;
  memcpy(nb.b + done, &h, sizeof(h));
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_INT(0, walk(&nb, nb.len, 2000, &acc));
  CHECK_EQ_U64(0, acc.interrupted);
  CHECK_EQ_U64(1, acc.foreign);
  return 0;
}

/* The socket's cgroup id (INET_DIAG_CGROUP_ID, after INFO) reaches each(),
 * for StalledLimit's shares; 0 where the kernel sends none. */
static struct diag_sock seen[8];
static size_t nseen;
static void collect(const struct diag_sock *s, void *arg);

DEF_TEST(diag_cgroup_id) {
  struct nlbuf nb = {.len = 0};
  msg_cgroup = 0x1234567890ull;
  add_sock(&nb, 1, 100, 5000, sizeof(struct tcp_info));
  msg_cgroup = 0;
  add_sock(&nb, 1, 100, 5000, sizeof(struct tcp_info));
  add_done(&nb);
  struct stall_acc acc = {.each = collect};
  nseen = 0;
  walk(&nb, nb.len, 1000, &acc);
  CHECK_EQ_U64(2, nseen);
  CHECK_EQ_U64(0x1234567890ull, seen[0].cgroup);
  CHECK_EQ_U64(0, seen[1].cgroup);
  CHECK(seen[0].stalled && seen[1].stalled);
  return 0;
}

/* The iterator's records: the same decisions as the sock_diag walk (stalled
 * when rqueue > 0 and last_data_recv > limit), every record handed to
 * each() with its fields, a partial record left for the next read. */
static void collect(const struct diag_sock *s, void *arg) {
  if (nseen < 8)
    seen[nseen++] = *s;
}

DEF_TEST(scanrec_counts_stalled) {
  struct tcpw_scan_rec r[4];
  memset(r, 0, sizeof(r));
  r[0] = (struct tcpw_scan_rec){.cookie = 11, .inode = 101, .rqueue = 5000,
                                .last_data_recv = 2001, .sport = 80,
                                .dport = 40000, .family = AF_INET};
  r[0].src[0] = 127, r[0].src[3] = 1, r[0].dst[0] = 10;
  r[0].cgroup = 4242;
  /* not > limit */
  r[1] = (struct tcpw_scan_rec){.cookie = 12, .rqueue = 700,
                                .last_data_recv = 2000, .family = AF_INET6};
  /* tracked, read since: no unread data (its time means nothing) */
  r[2] = (struct tcpw_scan_rec){.cookie = 13, .rqueue = 0,
                                .last_data_recv = 999999, .family = AF_INET};
  r[3] = (struct tcpw_scan_rec){.cookie = 14, .inode = 104, .rqueue = 300,
                                .last_data_recv = 60000, .family = AF_INET6};
  r[3].dst[15] = 1;
  r[3].bound_dev_if = 7; /* SO_BINDTODEVICE, a VRF, IPv6 link-local */
  size_t len = sizeof(r) + 10; /* and the start of a fifth */
  unsigned char *c = malloc(len + 1);
  memcpy(c + 1, r, sizeof(r));
  memset(c + 1 + sizeof(r), 0xab, 10);
  struct stall_acc acc = {.each = collect};
  nseen = 0;
  CHECK_EQ_U64(sizeof(r), scanrec_walk(c + 1, len, 2000, &acc));
  CHECK_EQ_U64(4, acc.sockets);
  CHECK_EQ_U64(2, acc.stalled);
  CHECK_EQ_U64(5300, acc.stalled_bytes);
  CHECK_EQ_U64(4, nseen);
  CHECK_EQ_U64(11, seen[0].cookie);
  CHECK_EQ_U64(101, seen[0].inode);
  CHECK_EQ_U64(5000, seen[0].rqueue);
  CHECK_EQ_U64(2001, seen[0].last_data_recv);
  CHECK_EQ_U64(80, seen[0].sport);
  CHECK_EQ_U64(40000, seen[0].dport);
  CHECK_EQ_U64(AF_INET, seen[0].family);
  CHECK_EQ_U64(4242, seen[0].cgroup); /* StalledLimit's shares */
  CHECK(seen[0].stalled && !seen[1].stalled && !seen[2].stalled &&
        seen[3].stalled);
  CHECK(seen[0].src[0] == 127 && seen[0].src[3] == 1 && seen[0].dst[0] == 10);
  CHECK_EQ_U64(0, seen[2].last_data_recv); /* as the walk: 0 when empty */
  CHECK(seen[3].family == AF_INET6 && seen[3].dst[15] == 1);
  CHECK(seen[0].bound_if == 0 && seen[3].bound_if == 7);
  /* less than one record: nothing used */
  memset(&acc, 0, sizeof(acc));
  CHECK_EQ_U64(0, scanrec_walk(c + 1, sizeof(r[0]) - 1, 0, &acc));
  CHECK_EQ_U64(0, acc.sockets);
  free(c);
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
  RUN_TEST(diag_exact_batch);
  RUN_TEST(diag_garbage_against_oracle);
  RUN_TEST(diag_ignores_other_requests);
  RUN_TEST(diag_dump_interrupted);
  RUN_TEST(scanrec_counts_stalled);
  RUN_TEST(diag_cgroup_id);
  END_TEST;
}
