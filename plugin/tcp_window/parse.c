// SPDX-License-Identifier: GPL-2.0-only
/* Pure readers of the tcp_window feature; see parse.h. */
#include "tcp_window/parse.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <linux/types.h>

#include "tcp_window/tcp_window.h"
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* One decimal number at *p (< end); advances *p. */
static int parse_u64(const char **p, const char *end, uint64_t *out) {
  const char *s = *p;
  uint64_t v = 0;
  if (s >= end || *s < '0' || *s > '9')
    return -EINVAL;
  for (; s < end && *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -ERANGE;
    v = v * 10 + d;
  }
  *p = s;
  *out = v;
  return 0;
}

int sockstat_tcp_mem(const char *buf, size_t len, uint64_t *pages) {
  const char *p = buf, *end = buf + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end;
    if (le - p >= 4 && memcmp(p, "TCP:", 4) == 0) {
      /* "key value" pairs after the tag */
      const char *s = p + 4;
      for (;;) {
        while (s < le && is_blank(*s))
          s++;
        if (s >= le)
          return -ENOENT;
        const char *k = s;
        while (s < le && !is_blank(*s))
          s++;
        size_t klen = (size_t)(s - k);
        while (s < le && is_blank(*s))
          s++;
        if (s >= le)
          return -EINVAL; /* key without value */
        if (klen == 3 && memcmp(k, "mem", 3) == 0) {
          int err = parse_u64(&s, le, pages);
          if (err)
            return err;
          if (s < le && !is_blank(*s))
            return -EINVAL;
          return 0;
        }
        while (s < le && !is_blank(*s))
          s++;
      }
    }
    p = eol ? eol + 1 : end;
  }
  return -ENOENT;
}

int tcp_mem_parse(const char *buf, size_t len, uint64_t out[3]) {
  const char *p = buf, *end = buf + len;
  uint64_t v[3];
  for (int i = 0; i < 3; i++) {
    const char *before = p;
    while (p < end && is_blank(*p))
      p++;
    if (i > 0 && p == before)
      return -EINVAL; /* numbers must be separated */
    int err = parse_u64(&p, end, &v[i]);
    if (err)
      return err;
  }
  while (p < end && is_blank(*p))
    p++;
  if (p < end && *p == '\n')
    p++;
  if (p != end)
    return -EINVAL;
  memcpy(out, v, sizeof(v));
  return 0;
}

/* Offset and size of the one tcp_info field we need: older kernels send a
 * shorter struct, and anything shorter than this is unusable. */
#define LAST_DATA_RECV_END                                                     \
  (offsetof(struct tcp_info, tcpi_last_data_recv) +                            \
   sizeof(((struct tcp_info *)0)->tcpi_last_data_recv))

/* Finds INET_DIAG_INFO in the attributes and reads tcpi_last_data_recv,
 * and the socket's cgroup id where the kernel sends it (INET_DIAG_CGROUP_ID,
 * 5.8; *cgroup stays as it is where not). Returns 1 found, 0 absent or too short, -EBADMSG
 * malformed. */
static int find_last_data_recv(const unsigned char *a, size_t len,
                               uint32_t *out, uint64_t *cgroup) {
  int found = 0;
  while (len >= sizeof(struct rtattr)) {
    struct rtattr rta;
    memcpy(&rta, a, sizeof(rta));
    if (rta.rta_len < sizeof(rta) || rta.rta_len > len)
      return -EBADMSG;
    if (rta.rta_type == INET_DIAG_INFO && !found &&
        rta.rta_len - RTA_LENGTH(0) >= LAST_DATA_RECV_END) {
      memcpy(out,
             a + RTA_LENGTH(0) + offsetof(struct tcp_info, tcpi_last_data_recv),
             sizeof(*out));
      found = 1;
    } else if (rta.rta_type == INET_DIAG_CGROUP_ID &&
               rta.rta_len - RTA_LENGTH(0) >= sizeof(*cgroup)) {
      memcpy(cgroup, a + RTA_LENGTH(0), sizeof(*cgroup));
    }
    size_t step = RTA_ALIGN(rta.rta_len);
    if (step >= len)
      break;
    a += step;
    len -= step;
  }
  return found;
}

/* One inet_diag_msg (pl, pllen: the payload): counted, and handed to
 * acc->each unless it is a listener. 0 or -EBADMSG. */
static int diag_msg(const unsigned char *pl, size_t pllen,
                    uint32_t stalled_ms, struct stall_acc *acc) {
  struct inet_diag_msg m;
  if (pllen < sizeof(m))
    return -EBADMSG;
  memcpy(&m, pl, sizeof(m));
  acc->sockets++;
  if (m.idiag_state == 10 /* TCP_LISTEN */)
    return 0;
  uint32_t last = 0;
  uint64_t cgroup = 0;
  bool stalled = false;
  if (m.idiag_rqueue > 0) {
    int st = find_last_data_recv(pl + NLMSG_ALIGN(sizeof(m)),
                                 pllen > NLMSG_ALIGN(sizeof(m))
                                     ? pllen - NLMSG_ALIGN(sizeof(m))
                                     : 0,
                                 &last, &cgroup);
    if (st < 0)
      return st;
    if (st == 0) {
      acc->no_info++;
    } else if (last > stalled_ms) {
      stalled = true;
      acc->stalled++;
      acc->stalled_bytes += m.idiag_rqueue;
    }
  }
  if (acc->each) {
    struct diag_sock s = {
        .cookie = (uint64_t)m.id.idiag_cookie[0] |
                  (uint64_t)m.id.idiag_cookie[1] << 32,
        .inode = m.idiag_inode,
        .rqueue = m.idiag_rqueue,
        .last_data_recv = last,
        .bound_if = m.id.idiag_if,
        .sport = ntohs(m.id.idiag_sport),
        .dport = ntohs(m.id.idiag_dport),
        .family = m.idiag_family,
        .stalled = stalled,
        .cgroup = cgroup,
    };
    memcpy(s.src, m.id.idiag_src, sizeof(s.src));
    memcpy(s.dst, m.id.idiag_dst, sizeof(s.dst));
    acc->each(&s, acc->arg);
  }
  return 0;
}

int sockdiag_walk(const void *buf, size_t len, uint32_t seq,
                  uint32_t stalled_ms, struct stall_acc *acc) {
  const unsigned char *p = buf;
  while (len >= sizeof(struct nlmsghdr)) {
    struct nlmsghdr h;
    memcpy(&h, p, sizeof(h));
    if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
      return -EBADMSG;
    const unsigned char *pl = p + NLMSG_HDRLEN;
    size_t pllen = h.nlmsg_len - NLMSG_HDRLEN;
    if (h.nlmsg_len < NLMSG_HDRLEN)
      return -EBADMSG;

    if (h.nlmsg_seq != seq) {
      acc->foreign++;
      goto next;
    }
    if (h.nlmsg_flags & NLM_F_DUMP_INTR)
      acc->interrupted++;
    if (h.nlmsg_type == NLMSG_DONE)
      return 1;
    if (h.nlmsg_type == NLMSG_ERROR) {
      struct nlmsgerr e;
      if (pllen < sizeof(e.error))
        return -EBADMSG;
      memcpy(&e.error, pl, sizeof(e.error));
      if (e.error < 0 && e.error > -4096)
        return e.error;
      return -EPROTO;
    }
    /* Replies carry the request's type: SOCK_DIAG_BY_FAMILY, or
     * TCPDIAG_GETSOCK for the one-walk dump of both families. */
    if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY ||
        h.nlmsg_type == TCPDIAG_GETSOCK) {
      int st = diag_msg(pl, pllen, stalled_ms, acc);
      if (st < 0)
        return st;
    }
    /* Other types (NLMSG_NOOP, NLMSG_OVERRUN...) carry nothing for us. */
  next:;
    size_t step = NLMSG_ALIGN(h.nlmsg_len);
    if (step >= len)
      break;
    p += step;
    len -= step;
  }
  return len && len < sizeof(struct nlmsghdr) ? -EBADMSG : 0;
}

int sockdiag_exact_walk(const void *buf, size_t len, uint32_t seq0,
                        uint32_t n, uint32_t stalled_ms,
                        struct stall_acc *acc) {
  const unsigned char *p = buf;
  int answered = 0;
  while (len >= sizeof(struct nlmsghdr)) {
    struct nlmsghdr h;
    memcpy(&h, p, sizeof(h));
    if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len)
      return -EBADMSG;
    const unsigned char *pl = p + NLMSG_HDRLEN;
    size_t pllen = h.nlmsg_len - NLMSG_HDRLEN;
    if (h.nlmsg_seq - seq0 >= n) {
      acc->foreign++;
    } else if (h.nlmsg_type == NLMSG_ERROR) {
      /* The socket is gone (ENOENT), or the lookup failed: no answer but
       * this one for that request. */
      if (pllen < sizeof(int))
        return -EBADMSG;
      answered++;
    } else if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
      int st = diag_msg(pl, pllen, stalled_ms, acc);
      if (st < 0)
        return st;
      answered++;
    }
    size_t step = NLMSG_ALIGN(h.nlmsg_len);
    if (step >= len)
      break;
    p += step;
    len -= step;
  }
  if (len && len < sizeof(struct nlmsghdr))
    return -EBADMSG;
  return answered;
}

size_t scanrec_walk(const void *buf, size_t len, uint32_t stalled_ms,
                    struct stall_acc *acc) {
  const unsigned char *p = buf;
  size_t used = 0;
  for (; len - used >= sizeof(struct tcpw_scan_rec);
       used += sizeof(struct tcpw_scan_rec)) {
    struct tcpw_scan_rec r;
    memcpy(&r, p + used, sizeof(r));
    acc->sockets++;
    bool stalled = r.rqueue > 0 && r.last_data_recv > stalled_ms;
    if (stalled) {
      acc->stalled++;
      acc->stalled_bytes += r.rqueue;
    }
    if (acc->each) {
      struct diag_sock s = {
          .cookie = r.cookie,
          .inode = r.inode,
          .rqueue = r.rqueue,
          .last_data_recv = r.rqueue > 0 ? r.last_data_recv : 0,
          .bound_if = r.bound_dev_if,
          .sport = r.sport,
          .dport = r.dport,
          .family = r.family,
          .stalled = stalled,
          .cgroup = r.cgroup,
      };
      memcpy(s.src, r.src, sizeof(s.src));
      memcpy(s.dst, r.dst, sizeof(s.dst));
      acc->each(&s, acc->arg);
    }
  }
  return used;
}
