// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's stalled receivers by marked sockets, and the whole walks
 * (iter.c, sockdiag.c) they fall back to: a scan counts every socket,
 * whichever way it runs. The announcements come from the receive path's
 * TCP enqueue programs (rx.c, tcpw_rx_serve_marks()). */
#define _GNU_SOURCE 1 /* recvmmsg() */
#include "tcp_window/internal.h"

#include "common/ring.h"
#include "core/testenv.h"
#include "tcp_window/tcp_window.h"

#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

/* One whole count of the sockets into *acc: 0 or a negative errno (after
 * one WARNING). */
static uint64_t walks; /* operations-stalled_whole_walks */

static int walk_count(uint32_t ms, struct stall_acc *acc) {
  walks++;
  if (tcpw_iter_on())
    return tcpw_iter_count(ms, acc);
  return tcpw_diag_walk(ms, acc);
}

/* While the receive path's TCP enqueue program runs (any flavour), it
 * announces every socket of the namespace that is given data, once per
 * scan (tcpw_rx_serve_marks(), bpf/tcp_window/rx.h). A scan then asks
 * sock_diag about those sockets and the ones that still held unread data
 * at the last scan, one exact request each, instead of walking every
 * socket: its cost follows the sockets that receive, and idle sockets cost
 * nothing. A whole walk (walk_count) seeds the set at the first scan and
 * runs every MARKS_WALK_EVERY_S, a safety net for data that no enqueue
 * program saw (a socket whose reader set SO_RCVLOWAT, say, is still
 * found); any other whole walk is a fall-back (enum walk_why), logged once
 * per cause and counted in operations-stalled_whole_walks. */
#define MARKS_WALK_EVERY_S 3600
/* Sockets asked about in one scan, announced and kept, each once: a busy
 * host's (8,000 heartbeat connections and 500 new ones a second at a 10 s
 * interval make 13,000), and within what the ring buffer holds in one
 * interval (TCPW_MARK_RB_BYTES: 74,898 announcements). */
#define MARKS_MAX 65536
#define MARKS_BATCH 64 /* exact requests per send(): replies fit rcvbuf */

/* Why a scan walks every socket. */
enum walk_why {
  WALK_SEED,    /* the first scan */
  WALK_HOURLY,  /* MARKS_WALK_EVERY_S */
  WALK_LOST,    /* announcements lost: the ring buffer was full */
  WALK_STOPPED, /* the ring buffer's read stopped at its time budget */
  WALK_MANY,    /* more than MARKS_MAX sockets to ask about */
  WALK_NOMEM,   /* out of memory for the sockets to ask about */
  WALK_FAILED,  /* the last scan failed or was interrupted */
  WALK_N
};

static const char *const walk_cause[WALK_N] = {
    [WALK_LOST] = "announcements were lost: the ring buffer was full "
                  "(more than it holds were given data in one interval)",
    [WALK_STOPPED] = "reading the announcements stopped at its time budget",
    [WALK_MANY] = "more sockets to ask about than the marked scan's limit",
    [WALK_NOMEM] = "out of memory for the sockets to ask about",
    [WALK_FAILED] = "the last scan failed or was interrupted",
};

/* A socket to ask about: what an exact request names. */
struct mark_tuple {
  uint8_t family, pad;
  uint16_t sport, dport; /* host order; sport is the local port */
  uint16_t pad2;
  uint8_t src[16], dst[16];
  /* The device it is bound to, or 0: the kernel's lookup skips a socket
   * bound to a device (SO_BINDTODEVICE, a VRF, an IPv6 link-local
   * address) unless the request names that device in idiag_if. */
  uint32_t bound_if;
};

static struct {
  bool on;
  struct ebpf_ring ring; /* bounded reads: common/ring.h */
  uint32_t epoch;
  uint64_t lost;          /* the programs' count at the last scan */
  double walk_due;        /* CLOCK_MONOTONIC s of the next whole walk */
  struct mark_tuple *cand; /* to ask about */
  size_t ncand, cand_cap;
  struct mark_tuple *keep; /* this scan's sockets with unread data */
  size_t nkeep, keep_cap;
  /* Announced in this scan's read: the next scan asks about them too
   * (marks_on_rec). */
  struct mark_tuple *fresh;
  size_t nfresh, fresh_cap;
  bool overflow;          /* out of memory for the lists above */
  enum walk_why pending;  /* the next scan walks for it (WALK_N: none) */
  bool told[WALK_N];      /* each fall-back's cause logged once */
  /* The notifications' callback, called from marks_each. */
  void (*each)(const struct diag_sock *s, void *arg);
  void *arg;
} mk;

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int tuple_push(struct mark_tuple **v, size_t *n, size_t *cap,
                      const struct mark_tuple *t) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 64;
    struct mark_tuple *nv = realloc(*v, c * sizeof(*nv));
    if (!nv)
      return -ENOMEM;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = *t;
  return 0;
}

static int tuple_cmp(const void *a, const void *b) {
  return memcmp(a, b, sizeof(struct mark_tuple));
}

static struct mark_tuple tuple_of(uint8_t family, uint16_t sport,
                                  uint16_t dport, const uint8_t src[16],
                                  const uint8_t dst[16], uint32_t bound_if) {
  struct mark_tuple t = {.family = family, .sport = sport, .dport = dport,
                         .bound_if = bound_if};
  memcpy(t.src, src, sizeof(t.src));
  memcpy(t.dst, dst, sizeof(t.dst));
  return t;
}

/* ring_buffer callback: one announced socket. */
static int marks_on_rec(void *ctx, void *data, size_t size) {
  (void)ctx;
  struct tcpw_mark_rec r;
  if (size < sizeof(r))
    return 0;
  memcpy(&r, data, sizeof(r));
  /* At most what the ring holds per read (common/ring.h), each socket
   * mostly once: MARKS_MAX is checked once they are sorted, each once. */
  struct mark_tuple t =
      tuple_of(r.family, r.sport, r.dport, r.src, r.dst, r.bound_dev_if);
  /* Asked about by this scan and the next (mk.fresh), whatever its
   * epoch: this scan's request may come before the data it was announced
   * for is on the queue (the kprobe flavour marks at tcp_queue_rcv's
   * entry; a vCPU or a softirq held between the two widens that to
   * milliseconds), and its slot keeps the socket from being announced
   * again for data in the same epoch. Written after this scan's bump, it
   * is not announced again before the next one either. A socket given
   * data at every interval is announced at each anyway (asked once a
   * scan, the lists are merged); one given data once costs one request
   * more. */
  if (tuple_push(&mk.cand, &mk.ncand, &mk.cand_cap, &t) ||
      tuple_push(&mk.fresh, &mk.nfresh, &mk.fresh_cap, &t))
    mk.overflow = true;
  return 0;
}

/* stall_acc.each during a marked scan or its seeding walk: the sockets
 * with unread data are asked about again at the next scan. The
 * notifications' callback sees every call, NULL (a dump that starts
 * afresh) too. */
static void marks_each(const struct diag_sock *s, void *arg) {
  (void)arg;
  if (s && s->rqueue > 0) {
    struct mark_tuple t = tuple_of(s->family, s->sport, s->dport, s->src,
                                   s->dst, s->bound_if);
    if (tuple_push(&mk.keep, &mk.nkeep, &mk.keep_cap, &t))
      mk.overflow = true;
  }
  if (mk.each)
    mk.each(s, mk.arg);
}

void tcpw_marks_free(void) {
  if (mk.on)
    tcpw_rx_unserve_marks();
  ebpf_ring_close(&mk.ring);
  free(mk.cand);
  free(mk.keep);
  free(mk.fresh);
  mk = (typeof(mk)){0};
}

/* 0 when the scans can ask about announced sockets only. */
static int marks_init(uint32_t netns_ino) {
  int fd;
  if (tcpw_diag.fd < 0)
    return -ENOTCONN;
  int err = tcpw_rx_serve_marks(netns_ino, &fd);
  if (err)
    return err;
  err = ebpf_ring_open(&mk.ring, fd, sizeof(struct tcpw_mark_rec),
                       marks_on_rec, NULL);
  if (err) {
    ebpf_ring_close(&mk.ring);
    tcpw_rx_unserve_marks();
    return err;
  }
  mk.on = true;
  mk.pending = WALK_SEED; /* the first scan is a whole walk */
  return 0;
}

/* The kernel answers each exact request in a datagram of its own: up to
 * MARKS_RECV of them are taken by one recvmmsg() (one recv() each cost
 * about 3.5 us of a request's CPU at 8,500 requests a read), each in a
 * MARKS_SLICE of the buffer. Into *got the requests answered; 0 or a
 * negative errno. */
#define MARKS_SLICE 4096
#define MARKS_RECV (DIAG_BUF_SIZE / MARKS_SLICE)
static int marks_replies(uint32_t seq0, uint32_t n, uint32_t *got,
                         uint32_t ms, struct stall_acc *acc) {
  struct mmsghdr mm[MARKS_RECV];
  struct iovec iov[MARKS_RECV];
  unsigned want = n - *got < MARKS_RECV ? n - *got : MARKS_RECV;
  for (unsigned i = 0; i < want; i++) {
    iov[i] = (struct iovec){tcpw_diag.buf + i * MARKS_SLICE, MARKS_SLICE};
    mm[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
  }
  /* The first waits (SO_RCVTIMEO), the others are what has come. */
  int k = recvmmsg(tcpw_diag.fd, mm, want, MSG_WAITFORONE, NULL);
  if (k < 0 && errno == EINTR)
    return 0;
  if (k <= 0)
    return k == 0 ? -EPIPE
           : errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT
                                                     : -errno;
  for (int j = 0; j < k; j++) {
    if (mm[j].msg_hdr.msg_flags & MSG_TRUNC)
      return -EMSGSIZE;
    int st = sockdiag_exact_walk(iov[j].iov_base, mm[j].msg_len, seq0, n, ms,
                                 acc);
    if (st < 0)
      return st;
    *got += (uint32_t)st;
  }
  return 0;
}

/* Ask sock_diag about mk.cand[0..n), MARKS_BATCH at a time, into *acc.
 * 0 or a negative errno (after one WARNING). */
static int marks_ask(uint32_t ms, struct stall_acc *acc) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } req[MARKS_BATCH];
  for (size_t at = 0; at < mk.ncand; at += MARKS_BATCH) {
    uint32_t n = (uint32_t)(mk.ncand - at < MARKS_BATCH ? mk.ncand - at
                                                          : MARKS_BATCH);
    uint32_t seq0 = tcpw_diag.seq + 1;
    tcpw_diag.seq += n;
    memset(req, 0, sizeof(req));
    for (uint32_t i = 0; i < n; i++) {
      const struct mark_tuple *t = &mk.cand[at + i];
      req[i].nlh = (struct nlmsghdr){.nlmsg_len = sizeof(req[i]),
                                     .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                                     .nlmsg_flags = NLM_F_REQUEST,
                                     .nlmsg_seq = seq0 + i};
      req[i].r.sdiag_family = t->family;
      req[i].r.sdiag_protocol = IPPROTO_TCP;
      req[i].r.idiag_ext = 1u << (INET_DIAG_INFO - 1);
      req[i].r.idiag_states = ~0u;
      req[i].r.id.idiag_sport = htons(t->sport);
      req[i].r.id.idiag_dport = htons(t->dport);
      memcpy(req[i].r.id.idiag_src, t->src, sizeof(t->src));
      memcpy(req[i].r.id.idiag_dst, t->dst, sizeof(t->dst));
      req[i].r.id.idiag_if = t->bound_if;
      req[i].r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
      req[i].r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    }
    int err = 0;
    if (send(tcpw_diag.fd, req, n * sizeof(req[0]), 0) < 0)
      err = -errno;
    for (uint32_t got = 0; !err && got < n;)
      err = marks_replies(seq0, n, &got, ms, acc);
    if (err) {
      tcpw_diag_drain();
      E_WARNING(FEATURE ": sock_diag requests about %zu sockets failed: %s; "
                "stalled receivers are not reported for this interval.",
                mk.ncand, ERRSTR(err));
      return err;
    }
  }
  return 0;
}

/* The sockets to ask about, each once (the ring may hold a socket twice:
 * two sockets sharing a slot alternate). */
static void cand_unique(void) {
  qsort(mk.cand, mk.ncand, sizeof(*mk.cand), tuple_cmp);
  size_t u = 0;
  for (size_t i = 0; i < mk.ncand; i++)
    if (!u || tuple_cmp(&mk.cand[u - 1], &mk.cand[i]))
      mk.cand[u++] = mk.cand[i];
  mk.ncand = u;
}

/* A fall-back to a whole walk: one WARNING per cause, the first time. */
static void walk_told(enum walk_why why, uint64_t lost) {
  if (why < WALK_LOST || why >= WALK_N || mk.told[why])
    return;
  mk.told[why] = true;
  char n[64] = "";
  if (why == WALK_LOST)
    snprintf(n, sizeof(n), " (%llu announcements lost so far)",
             (unsigned long long)lost);
  else if (why == WALK_MANY)
    snprintf(n, sizeof(n), " (%zu sockets, limit %d)", mk.ncand, MARKS_MAX);
  E_WARNING(FEATURE ": stalled receivers: a scan walked every TCP socket "
            "instead of asking about the sockets given data: %s%s. Every "
            "whole walk is counted in operations-stalled_whole_walks; this "
            "cause is logged once.",
            walk_cause[why], n);
}

/* The scan after the epoch bump and the ring buffer's read: a whole walk
 * for `why` (WALK_N: none; too many to ask about makes one), else the
 * exact requests about the announced and the kept sockets. 0 or a
 * negative errno. */
static int marks_scan(uint32_t ms, struct stall_acc *acc, enum walk_why why,
                      uint64_t lost) {
  /* The kept sockets join the announced ones, once each. */
  for (size_t i = 0; why == WALK_N && i < mk.nkeep; i++)
    if (tuple_push(&mk.cand, &mk.ncand, &mk.cand_cap, &mk.keep[i]))
      mk.overflow = true;
  if (why == WALK_N && mk.overflow)
    why = WALK_NOMEM;
  if (why == WALK_N) {
    cand_unique();
    if (mk.ncand > MARKS_MAX)
      why = WALK_MANY;
  }
  walk_told(why, lost);
  mk.each = acc->each;
  mk.arg = acc->arg;
  acc->each = marks_each;
  acc->arg = NULL;
  mk.nkeep = 0;
  mk.overflow = false;
  int err;
  if (why != WALK_N) {
    err = walk_count(ms, acc);
    mk.pending = WALK_N;
    if (!err && !acc->interrupted)
      mk.walk_due = mono_s() + MARKS_WALK_EVERY_S;
    else if (!err) /* it may have missed sockets: walk again next time */
      mk.pending = why < WALK_LOST ? why : WALK_FAILED;
  } else {
    tcpw_acc_reset(acc);
    err = marks_ask(ms, acc);
  }
  acc->each = mk.each;
  acc->arg = mk.arg;
  mk.ncand = 0;
  for (size_t i = 0; i < mk.nfresh; i++)
    if (tuple_push(&mk.keep, &mk.nkeep, &mk.keep_cap, &mk.fresh[i]))
      mk.overflow = true;
  mk.nfresh = 0;
  if (err || mk.overflow) {
    /* What has unread data is not known: walk next time. */
    mk.nkeep = 0;
    mk.pending = err ? WALK_FAILED : WALK_NOMEM;
  }
  return err;
}

/* One whole count of the sockets into *acc: a marked scan where it can
 * run, else a whole walk. 0 or a negative errno (after one WARNING). */
int tcpw_scan(uint32_t ms, struct stall_acc *acc) {
  if (!mk.on)
    return walk_count(ms, acc);
  /* A new epoch first: data given to a socket from here on announces it
   * again, for the next scan; what came before is announced already, in
   * the ring buffer, or seen by this scan's requests. A socket announced
   * in the read below is asked about by this scan and the next (mk.fresh,
   * marks_on_rec): its data may land after this scan's request, and its
   * slot may keep that data from announcing it again. */
  uint64_t lost = 0;
  if (++mk.epoch == 0)
    mk.epoch = 1;
  if (tcpw_rx_epoch(mk.epoch, &lost) != 0) {
    E_INFO(FEATURE ": the receive path stopped; stalled receivers are "
           "found by a whole walk again.");
    tcpw_marks_free();
    return walk_count(ms, acc);
  }
  mk.overflow = false;
  /* At most what the ring holds: a read that stops leaves announcements
   * unread, so this scan walks every socket. */
  bool stopped =
      ebpf_ring_read(&mk.ring, ebpf_ring_budget_ns()) < 0 || mk.ring.stopped;
  enum walk_why why = mk.pending;
  if (why == WALK_N && lost != mk.lost)
    why = WALK_LOST;
  else if (why == WALK_N && stopped)
    why = WALK_STOPPED;
  else if (why == WALK_N && mono_s() >= mk.walk_due)
    why = WALK_HOURLY;
  mk.lost = lost;
  return marks_scan(ms, acc, why, lost);
}

uint64_t tcpw_whole_walks(void) { return walks; }

/* Whether the scans may ask about marked sockets (not forced to whole
 * walks by a test): the receive path's marks are then wanted. */
bool tcpw_marks_wanted(void) {
  const char *force = test_switch(TEST_STALLED_SCAN);
  return !(force && (!strcmp(force, "iter") || !strcmp(force, "sock_diag")));
}

/* After tcpw_stalled_init and the receive path's start: marked scans where
 * they can run, else whole walks (one INFO line says which). 0, or a
 * negative errno when the stalled receivers are not to be reported at
 * all. */
int tcpw_marks_start(uint32_t netns_ino) {
  /* EBPF_TEST_STALLED_SCAN=iter or =sock_diag: whole walks only (the
   * tests of each walk); =marks: marked scans or no stalled receivers. */
  const char *force = test_switch(TEST_STALLED_SCAN);
  bool walks_only = force && (!strcmp(force, "iter") ||
                              !strcmp(force, "sock_diag"));
  int merr = walks_only ? -ECANCELED : marks_init(netns_ino);
  if (!merr)
    E_INFO(FEATURE ": stalled receivers: each scan asks sock_diag about "
           "the sockets given data since the last one (announced by the "
           "receive path's tcp_socket_enqueued program) and those holding "
           "unread data; a whole walk every %d s.",
           MARKS_WALK_EVERY_S);
  else if (!walks_only)
    E_INFO(FEATURE ": stalled receivers: every scan walks every TCP socket "
           "(%s), a cost that grows with the sockets, idle ones too.",
           merr == -ENOENT ? "the receive path's tcp_socket_enqueued "
                             "program, which would announce the sockets "
                             "given data, does not run"
                           : ERRSTR(merr));
  if (merr && force && !strcmp(force, "marks")) {
    E_WARNING(FEATURE ": stalled receivers are not reported: marked scans "
              "forced by EBPF_TEST_STALLED_SCAN cannot run.");
    return merr;
  }
  return 0;
}
