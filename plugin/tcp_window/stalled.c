// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's stalled receivers: sockets holding unread data that nothing
 * was received on for StalledAfter. Each read counts them by a scan
 * (marks.c, over the whole walks of iter.c and sockdiag.c) and, with
 * StalledNotifications, keeps the set of stalled sockets from one read to
 * the next to notify when one stalls and when it ends. */
#include "tcp_window/internal.h"

#include "core/testenv.h"
#include "tcp_window/tcp_window.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const struct tcpw_cfg *cfg;

/* One WARNING when a socket becomes stalled, one OKAY when it no longer is
 * (it read: "resumed") or is gone ("closed"), at most StalledLimit a second
 * (the others wait, in turns by cgroup and oldest due first in each:
 * st_due). The sockets are tracked
 * by their cookie from one read to the next; the owning process is looked
 * up (from the socket's inode: owners.c) once, when its WARNING is sent, so
 * the cost follows the notifications, not the sockets. Both are bounded:
 * the descriptors looked at in /proc per read (OWNER_SCAN_MAX_FDS,
 * owners.c), and the tracked sockets: */
#define STALLED_TRACK_MAX 4096 /* beyond: counted, not notified */

/* The iterator's map of tracked cookies holds every tracked socket. */
_Static_assert(STALLED_TRACK_MAX == TCPW_TRACK_MAX, "tcpw_tracked size");
static size_t st_track_max = STALLED_TRACK_MAX; /* the unit test lowers it */

static struct {
  bool on;
  struct st_entry *e; /* the tracked sockets */
  size_t n, cap;
  uint32_t *index; /* open addressing on the cookie: entry + 1, 0 empty */
  size_t index_size;
  struct st_cand *cand; /* newly stalled in this dump */
  size_t ncand, cand_cap;
  uint64_t overflow; /* stalled in this dump, neither tracked nor new */
  bool overflow_warned;
  struct st_entry **due; /* st_track_max: the due notifications of a read */
  uint64_t suppressed;   /* notifications StalledLimit held back, once each */
  bool limited, limit_noted; /* StalledLimit held some back (this read) */
  uint32_t gen; /* the dump under way */
} st;

static size_t st_slot(uint64_t cookie) {
  return (size_t)((cookie * 0x9e3779b97f4a7c15ull) >> 32) &
         (st.index_size - 1);
}

static struct st_entry *st_find(uint64_t cookie) {
  for (size_t h = st_slot(cookie);; h = (h + 1) & (st.index_size - 1)) {
    uint32_t i = st.index[h];
    if (!i)
      return NULL;
    if (st.e[i - 1].cookie == cookie)
      return &st.e[i - 1];
  }
}

static void st_reindex(void) {
  memset(st.index, 0, st.index_size * sizeof(*st.index));
  for (size_t i = 0; i < st.n; i++) {
    size_t h = st_slot(st.e[i].cookie);
    while (st.index[h])
      h = (h + 1) & (st.index_size - 1);
    st.index[h] = (uint32_t)i + 1;
  }
}

static void st_begin(void) {
  st.gen++;
  st.ncand = 0;
  st.overflow = 0;
}

/* stall_acc.each: every socket of the dump; NULL when a dump starts
 * afresh (tcpw_acc_reset). */
static void st_each(const struct diag_sock *s, void *arg) {
  if (!s) {
    st_begin();
    return;
  }
  struct st_entry *e = st.n ? st_find(s->cookie) : NULL;
  if (e) {
    e->seen_gen = st.gen;
    if (s->stalled) {
      e->stalled_gen = st.gen;
      e->rqueue = s->rqueue;
      e->last_ms = s->last_data_recv;
    }
    return;
  }
  if (!s->stalled)
    return;
  /* Room is known once the dump has shown which tracked ones ended: up
   * to the maximum are kept, and st_commit takes what fits. */
  if (st.ncand >= st_track_max) {
    st.overflow++;
    return;
  }
  if (st.ncand == st.cand_cap) {
    size_t cap = st.cand_cap ? 2 * st.cand_cap : 16;
    struct st_cand *c = realloc(st.cand, cap * sizeof(*c));
    if (!c) {
      st.overflow++;
      return;
    }
    st.cand = c;
    st.cand_cap = cap;
  }
  st.cand[st.ncand++] = (struct st_cand){.s = *s};
}

static void st_addr(char out[56], uint8_t family, const uint8_t a[16],
                    uint16_t port) {
  char ip[INET6_ADDRSTRLEN] = "?";
  inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip));
  snprintf(out, 56, family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, port);
}

/* The socket's own notification identifier: plugin_instance
 * "<local>-<remote>", '.' and ':' as '_' and IPv6's brackets left out
 * ("10_1_2_3_8080-10_9_8_7_54321"), so that a consumer keeping state per
 * identifier (threshold-style OKAY after WARNING, notify_nagios, an
 * Alertmanager bridge) keeps one per socket. The port is always the last
 * '_' field of each side. */
static void st_instance(const struct st_entry *e, char *out, size_t len) {
  size_t o = 0;
  const char *side[2] = {e->local, e->remote};
  for (int s = 0; s < 2; s++) {
    if (s && o + 1 < len)
      out[o++] = '-';
    for (const char *p = side[s]; *p && o + 1 < len; p++) {
      if (*p == '[' || *p == ']')
        continue;
      out[o++] = (*p == '.' || *p == ':') ? '_' : *p;
    }
  }
  out[o] = 0;
}

/* The notification of one socket (fields: README, "Notifications"). */
static void st_notify(const struct st_entry *e, int severity,
                      const char *what) {
  struct ebpf_nfield f[10];
  size_t n = 0;
  f[n++] = NF_STR("receiver", what);
  f[n++] = NF_STR("local", e->local);
  f[n++] = NF_STR("remote", e->remote);
  f[n++] = NF_UINT("recv_q", e->rqueue);
  f[n++] = NF_DBL("stalled_s", e->last_ms / 1000.0);
  f[n++] = NF_UINT("inode", e->inode);
  if (e->pid > 0)
    f[n++] = NF_INT("pid", e->pid);
  if (e->comm[0])
    f[n++] = NF_STR("comm", e->comm);
  if (e->cgroup[0])
    f[n++] = NF_STR("cgroup", e->cgroup);
  if (cfg->netns)
    f[n++] = NF_STR("netns", cfg->netns);
  char inst[sizeof(e->local) + sizeof(e->remote)];
  st_instance(e, inst, sizeof(inst));
  ebpf_notify(severity, FEATURE, inst, "", "stalled_receiver", f, n);
}

static int st_cand_cmp(const void *a, const void *b) {
  const struct st_cand *x = a, *y = b;
  return x->s.cookie < y->s.cookie ? -1 : x->s.cookie > y->s.cookie;
}

static int st_cand_pid_cmp(const void *a, const void *b) {
  const struct st_cand *x = a, *y = b;
  if (x->pid != y->pid)
    return x->pid < y->pid ? -1 : 1;
  return st_cand_cmp(a, b);
}

/* Oldest due first (the dump it became due in), then by cookie. */
static int st_due_cmp(const void *a, const void *b) {
  const struct st_entry *x = *(struct st_entry *const *)a;
  const struct st_entry *y = *(struct st_entry *const *)b;
  if (x->due_gen != y->due_gen)
    return (int32_t)(x->due_gen - y->due_gen) < 0 ? -1 : 1;
  return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

/* By cgroup, then oldest due first: to number each one's due ones. */
static int st_cgroup_cmp(const void *a, const void *b) {
  const struct st_entry *x = *(struct st_entry *const *)a;
  const struct st_entry *y = *(struct st_entry *const *)b;
  if (x->cgroup_id != y->cgroup_id)
    return x->cgroup_id < y->cgroup_id ? -1 : 1;
  return st_due_cmp(a, b);
}

/* Each cgroup's oldest due first, then each one's second, and so on,
 * oldest first within a round. */
static int st_share_cmp(const void *a, const void *b) {
  const struct st_entry *x = *(struct st_entry *const *)a;
  const struct st_entry *y = *(struct st_entry *const *)b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  return st_due_cmp(a, b);
}

/* due[0..nd) in the order StalledLimit takes them: a fair share per
 * cgroup (the socket's, from the scan), so that a tenant with thousands
 * of stalled receivers does not keep another's one waiting behind them;
 * within a cgroup, oldest due first. */
static void st_share_order(struct st_entry **due, size_t nd) {
  qsort(due, nd, sizeof(*due), st_cgroup_cmp);
  for (size_t i = 0; i < nd; i++)
    due[i]->rank = i && due[i - 1]->cgroup_id == due[i]->cgroup_id
                       ? due[i - 1]->rank + 1
                       : 0;
  qsort(due, nd, sizeof(*due), st_share_cmp);
}

/* The notifications one read may send: StalledLimit a second over the
 * read's interval, at least one. */
static size_t st_budget(void) {
  double b = (double)cfg->stalled_limit *
             CDTIME_T_TO_DOUBLE(plugin_get_interval());
  return b < 1 ? 1 : (size_t)(b + 0.5);
}

static bool st_cand_room(size_t n) {
  if (n <= st.cand_cap)
    return true;
  struct st_cand *c = realloc(st.cand, n * sizeof(*c));
  if (!c)
    return false;
  st.cand = c;
  st.cand_cap = n;
  return true;
}

/* After a whole dump, the tracked sockets it did not see stalled: a
 * notified one's OKAY becomes due; one whose WARNING was never sent goes
 * without any (an OKAY alone would close nothing downstream). One seen
 * stalled again while its OKAY waits stays notified: its WARNING stands. */
static void st_end(void) {
  size_t w = 0;
  for (size_t i = 0; i < st.n; i++) {
    struct st_entry *e = &st.e[i];
    bool stalled = e->stalled_gen == st.gen;
    if (!stalled && e->state == ST_WAITING)
      continue;
    if (stalled && e->state == ST_ENDING) {
      e->state = ST_NOTIFIED;
      tcpw_iter_track(e->cookie, true);
    } else if (!stalled && e->state == ST_NOTIFIED) {
      e->state = ST_ENDING;
      e->due_gen = st.gen;
      e->held = false;
      e->closed = e->seen_gen != st.gen;
      tcpw_iter_track(e->cookie, false);
    }
    if (w != i)
      st.e[w] = *e;
    w++;
  }
  st.n = w;
}

/* The sockets newly stalled in this dump join, their WARNING due, as
 * long as there is room (beyond: counted, not notified). Returns whether
 * any joined. */
static bool st_add(void) {
  if (!st.ncand)
    return false;
  qsort(st.cand, st.ncand, sizeof(*st.cand), st_cand_cmp);
  size_t u = 0; /* a socket is in a dump once; be sure */
  for (size_t i = 0; i < st.ncand; i++)
    if (!u || st.cand[u - 1].s.cookie != st.cand[i].s.cookie)
      st.cand[u++] = st.cand[i];
  st.ncand = u;
  if (st.n + st.ncand > st_track_max) {
    st.overflow += st.n + st.ncand - st_track_max;
    st.ncand = st_track_max - st.n;
  }
  if (st.n + st.ncand > st.cap) {
    size_t cap = st.n + st.ncand;
    struct st_entry *e = realloc(st.e, cap * sizeof(*e));
    if (!e) {
      st.overflow += st.ncand;
      st.ncand = 0;
    } else {
      st.e = e;
      st.cap = cap;
    }
  }
  for (size_t i = 0; i < st.ncand; i++) {
    const struct diag_sock *s = &st.cand[i].s;
    struct st_entry *e = &st.e[st.n++];
    *e = (struct st_entry){.cookie = s->cookie,
                           .inode = s->inode,
                           .rqueue = s->rqueue,
                           .last_ms = s->last_data_recv,
                           .seen_gen = st.gen,
                           .stalled_gen = st.gen,
                           .state = ST_WAITING,
                           .due_gen = st.gen,
                           .cgroup_id = s->cgroup};
    st_addr(e->local, s->family, s->src, s->sport);
    st_addr(e->remote, s->family, s->dst, s->dport);
  }
  bool added = st.ncand != 0;
  st.ncand = 0;
  return added;
}

/* The WARNINGs of due[0..n): the owners of these only are looked up, in
 * one pass (its cost follows the notifications sent, not the sockets that
 * stalled), then sent by owner, so that one process's sockets share one
 * look at its comm and cgroup. The index is current. */
static void st_warn(struct st_entry **due, size_t n) {
  if (!n || !st_cand_room(n))
    return; /* out of memory: they wait for the next read */
  for (size_t i = 0; i < n; i++)
    st.cand[i] = (struct st_cand){
        .s = {.cookie = due[i]->cookie, .inode = due[i]->inode}};
  tcpw_owners_find(st.cand, n);
  qsort(st.cand, n, sizeof(*st.cand), st_cand_pid_cmp);
  const struct st_entry *prev = NULL;
  for (size_t i = 0; i < n; i++) {
    struct st_entry *e = st_find(st.cand[i].s.cookie);
    e->pid = st.cand[i].pid;
    if (st.cand[i].described) {
      memcpy(e->comm, st.cand[i].comm, sizeof(e->comm));
      memcpy(e->cgroup, st.cand[i].cgroup, sizeof(e->cgroup));
    } else if (prev && e->pid > 0 && prev->pid == e->pid) {
      memcpy(e->comm, prev->comm, sizeof(e->comm));
      memcpy(e->cgroup, prev->cgroup, sizeof(e->cgroup));
    } else {
      tcpw_owners_describe(e);
    }
    st_notify(e, NOTIF_WARNING, "stalled");
    e->state = ST_NOTIFIED;
    tcpw_iter_track(e->cookie, true);
    prev = e;
  }
}

/* The due notifications of one kind (ST_ENDING: OKAYs, ST_WAITING:
 * WARNINGs) into st.due, at most *budget of them, in turns by cgroup and
 * oldest due first in each (st_share_order); the
 * others wait for a later read, still due while their socket stays as it
 * is, and are counted as suppressed the first time they wait. Returns how
 * many may go now, and takes them from *budget. */
static size_t st_due(enum st_state state, size_t *budget) {
  size_t nd = 0;
  for (size_t i = 0; i < st.n; i++)
    if (st.e[i].state == state)
      st.due[nd++] = &st.e[i];
  if (nd > *budget) {
    st_share_order(st.due, nd);
    for (size_t i = *budget; i < nd; i++)
      if (!st.due[i]->held) {
        st.due[i]->held = true;
        st.suppressed++;
      }
    nd = *budget;
    st.limited = true;
  }
  *budget -= nd;
  return nd;
}

/* The due OKAYs first (they close what is open downstream, and free the
 * room their sockets hold), then the ended sockets leave. */
static void st_okays(size_t *budget) {
  size_t nd = st_due(ST_ENDING, budget);
  for (size_t i = 0; i < nd; i++) {
    st_notify(st.due[i], NOTIF_OKAY, st.due[i]->closed ? "closed" : "resumed");
    st.due[i]->state = ST_GONE;
  }
  size_t w = 0;
  for (size_t i = 0; i < st.n; i++)
    if (st.e[i].state != ST_GONE && w++ != i)
      st.e[w - 1] = st.e[i];
  st.n = w;
}

/* After a whole dump: the sockets that ended leave or have their OKAY
 * due, the due OKAYs go, the sockets that stalled join, and the due
 * WARNINGs go, all within StalledLimit. */
static void st_commit(void) {
  size_t budget = st_budget(), n0 = st.n;
  st.limited = false;
  st_end();
  st_okays(&budget);
  bool changed = st_add() || st.n != n0;
  if (changed)
    st_reindex();
  st_warn(st.due, st_due(ST_WAITING, &budget));
  size_t tracked = 0;
  for (size_t i = 0; i < st.n; i++)
    tracked += st.e[i].state == ST_NOTIFIED;
  tcpw_iter_ntracked(tracked);
  if (st.limited && !st.limit_noted)
    E_NOTICE(FEATURE ": more stalled-receiver notifications are due than "
             "StalledLimit allows (%lld a second): the others wait for "
             "later reads, in turns by cgroup, oldest first.",
             cfg->stalled_limit);
  st.limit_noted = st.limited;
  if (st.overflow && !st.overflow_warned)
    E_WARNING(FEATURE ": more than %zu stalled receivers: the others are "
              "counted but get no notifications until fewer are stalled.",
              st_track_max);
  st.overflow_warned = st.overflow != 0;
}

static void st_free(void) {
  tcpw_owners_free();
  free(st.e);
  free(st.index);
  free(st.cand);
  free(st.due);
  st = (typeof(st)){0};
}

static int st_init(void) {
  st_free();
  tcpw_owners_init();
  st.index_size = 16;
  while (st.index_size < 2 * st_track_max)
    st.index_size *= 2;
  st.index = calloc(st.index_size, sizeof(*st.index));
  st.due = calloc(st_track_max, sizeof(*st.due));
  if (!st.index || !st.due) {
    E_WARNING(FEATURE ": stalled-receiver notifications are off: out of "
              "memory.");
    return -ENOMEM;
  }
  st.on = true;
  return 0;
}

void tcpw_stalled_read(value_list_t *vl) {
  struct stall_acc acc = {.each = st.on ? st_each : NULL};
  uint32_t ms = (uint32_t)(cfg->stalled_after * 1000.0);
  /* A partial or failed count is not dispatched: it would read as a real
   * drop. A dump the kernel flags NLM_F_DUMP_INTR (its socket tables
   * changed meanwhile: sockets may be missing or counted twice) is done
   * again once; if that one is interrupted too, the interval has no
   * values. */
  for (int attempt = 0;; attempt++) {
    if (tcpw_scan(ms, &acc) != 0)
      return;
    if (!acc.interrupted)
      break;
    if (attempt == 1) {
      E_NOTICE(FEATURE ": sock_diag dump interrupted twice (sockets changed "
               "during the dump); stalled receivers are not reported for "
               "this interval.");
      return;
    }
  }
  if (st.on)
    st_commit();
  vl_gauge(vl, "count", "stalled_receivers", (double)acc.stalled);
  vl_gauge(vl, "bytes", "stalled_receivers", (double)acc.stalled_bytes);
  vl_derive(vl, "operations", "stalled_whole_walks",
            (int64_t)tcpw_whole_walks());
  if (st.on)
    vl_derive(vl, "operations", "stalled_notifications_suppressed",
              (int64_t)st.suppressed);
}

/* The scan: the BPF iterator where it loads, else sock_diag (one INFO
 * line says why). EBPF_TEST_STALLED_SCAN=sock_diag or =iter forces one
 * (for the tests: both are tested on one kernel). */
int tcpw_stalled_init(const struct tcpw_cfg *c, const struct netns *ns) {
  cfg = c;
  tcpw_diag.buf = malloc(DIAG_BUF_SIZE);
  if (!tcpw_diag.buf)
    return -ENOMEM;
  const char *force = test_switch(TEST_STALLED_SCAN);
  if (!force || strcmp(force, "sock_diag")) {
    char why[256];
    int err = tcpw_iter_init(ns, cfg->netns, why, sizeof(why));
    if (!err) {
      E_INFO(FEATURE ": stalled receivers: whole walks by a BPF iterator "
             "(iter/tcp).");
      /* The marked scans' exact requests (marks.c) need sock_diag. */
      if (tcpw_diag_open() != 0)
        E_INFO(FEATURE ": no NETLINK_SOCK_DIAG socket: every scan is a "
               "whole walk.");
      if (cfg->stalled_notify)
        st_init();
      return 0;
    }
    if (force && !strcmp(force, "marks"))
      force = NULL;
    if (force) {
      E_WARNING(FEATURE ": stalled receivers are not reported: the BPF "
                "iterator (forced by EBPF_TEST_STALLED_SCAN) failed to %s",
                why);
      free(tcpw_diag.buf);
      tcpw_diag.buf = NULL;
      return err;
    }
    E_INFO(FEATURE ": stalled receivers: no BPF iterator here (%s); using "
           "sock_diag, whose cost grows with every TCP socket.",
           why);
  }
  int err = tcpw_diag_open();
  if (err) {
    E_WARNING(FEATURE ": stalled receivers are not reported: cannot open a "
              "NETLINK_SOCK_DIAG socket: %s",
              ERRSTR(err));
    free(tcpw_diag.buf);
    tcpw_diag.buf = NULL;
    return err;
  }
  if (cfg->stalled_notify)
    st_init(); /* without it, the counts run on */
  return 0;
}

void tcpw_stalled_free(void) {
  tcpw_iter_free();
  tcpw_diag_close();
  free(tcpw_diag.buf);
  tcpw_diag.buf = NULL;
  st_free();
}
