// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window: TCP receive-window clamps (BPF), TCP memory against
 * net.ipv4.tcp_mem, and stalled receivers (sock_diag). The three parts start
 * and fail independently; docs/tcp_window.md is the metric reference. This
 * file holds the block's settings and starts, reads and stops the parts
 * (internal.h names them). */
#define _GNU_SOURCE 1
#include "tcp_window/internal.h"

#include "common/netns.h"
#include "tcp_window/tcp_window.h"
#include "common/owners.h"
#include "tcp_window_iter.skel.h"
#include "tcp_window/parse.h"
#include "core/testenv.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define BLOCK "WindowClamp"

static struct tcpw_cfg cfg;

static void cfg_defaults(void) {
  free(cfg.netns);
  cfg.threshold = TCP_WINDOW_DEFAULT_THRESHOLD;
  cfg.stalled_after = 60;
  cfg.clamps = cfg.tcp_memory = cfg.stalled = true;
  cfg.stalled_notify = true;
  /* Off by default: its sk_storage work takes the tracepoint flavour from
   * ~1.3x to ~2.2x an empty program (docs/tcp_window.md). */
  cfg.transitions = false;
  cfg.netns = NULL;
}

/* ---------------------------------------------------------------- config */

static int tcp_window_config(const oconfig_item_t *ci) {
  int errors = 0;
  bool seen_thr = false, seen_sa = false, seen_cl = false, seen_tm = false,
       seen_st = false, seen_ns = false, seen_tr = false, seen_sn = false;
  cfg_defaults();
  for (int i = 0; i < ci->children_num; i++) {
    const oconfig_item_t *c = &ci->children[i];
    int st;
    if (strcasecmp(c->key, "Threshold") == 0)
      /* rcv_ssthresh is a u32 */
      st = cfg_once(c, &seen_thr) ||
           cfg_int_range(c, 1, UINT32_MAX, &cfg.threshold);
    else if (strcasecmp(c->key, "StalledAfter") == 0)
      /* tcpi_last_data_recv is u32 milliseconds */
      st = cfg_once(c, &seen_sa) ||
           cfg_seconds(c, 0.001, UINT32_MAX / 1000, &cfg.stalled_after);
    else if (strcasecmp(c->key, "Clamps") == 0)
      st = cfg_once(c, &seen_cl) || cfg_bool(c, &cfg.clamps);
    else if (strcasecmp(c->key, "ClampTransitions") == 0)
      st = cfg_once(c, &seen_tr) || cfg_bool(c, &cfg.transitions);
    else if (strcasecmp(c->key, "TcpMemory") == 0)
      st = cfg_once(c, &seen_tm) || cfg_bool(c, &cfg.tcp_memory);
    else if (strcasecmp(c->key, "StalledReceivers") == 0)
      st = cfg_once(c, &seen_st) || cfg_bool(c, &cfg.stalled);
    else if (strcasecmp(c->key, "StalledNotifications") == 0)
      st = cfg_once(c, &seen_sn) || cfg_bool(c, &cfg.stalled_notify);
    else if (strcasecmp(c->key, "NetworkNamespace") == 0)
      st = cfg_once(c, &seen_ns) || cfg_string(c, &cfg.netns);
    else
      st = cfg_unknown(c, BLOCK);
    if (st)
      errors++;
  }
  if (!errors && cfg.stalled && cfg.netns && !strcasecmp(cfg.netns, "all")) {
    E_ERROR("option \"NetworkNamespace\" \"all\" in block <" BLOCK "> "
            "needs \"StalledReceivers false\": sock_diag reads one "
            "namespace at a time; or name one namespace.");
    errors++;
  }
  if (!errors && !cfg.clamps && !cfg.tcp_memory && !cfg.stalled) {
    E_ERROR("block <" BLOCK "> has Clamps, TcpMemory and StalledReceivers "
            "all false: nothing to read.");
    errors++;
  }
  if (!errors && seen_sn && cfg.stalled_notify && !cfg.stalled) {
    E_ERROR("option \"StalledNotifications\" true in block <" BLOCK "> "
            "needs StalledReceivers true.");
    errors++;
  }
  return errors ? -1 : 0;
}

/* ----------------------------------------------------------------- state */

static uint32_t netns_ino; /* BPF filter; 0: all */
static bool clamps_on;
static bool tcp_memory_on;

static bool stalled_on;

/* The identity of every tcp_window value (plugin "tcp_window", no
 * plugin_instance), made once. */
static value_list_t *tw_vl(void) {
  static value_list_t vl;
  static bool ready;
  if (!ready) {
    vl_prepare(&vl, FEATURE, "");
    ready = true;
  }
  return &vl;
}

/* ------------------------------------- stalled receivers: notifications */

/* One WARNING when a socket becomes stalled, one OKAY when it no longer is
 * (it read: "resumed") or is gone ("closed"). The sockets are tracked by
 * their cookie from one read to the next; the owning process is looked up
 * (from the socket's inode, in /proc/<pid>/fd) once, when the socket
 * becomes stalled, so the cost follows the stalled sockets, not all of
 * them. Both are bounded: */
#define STALLED_TRACK_MAX 4096 /* beyond: counted, not notified */
#define OWNER_SCAN_MAX_FDS 65536 /* /proc/<pid>/fd entries per read */

/* The iterator's map of tracked cookies holds every tracked socket. */
_Static_assert(STALLED_TRACK_MAX == TCPW_TRACK_MAX, "tcpw_tracked size");
static size_t st_track_max = STALLED_TRACK_MAX; /* the unit test lowers them */
static size_t st_scan_max = OWNER_SCAN_MAX_FDS;

struct st_entry {
  uint64_t cookie;
  uint32_t inode, rqueue, last_ms; /* rqueue, last_ms: when last stalled */
  uint32_t seen_gen, stalled_gen; /* the last dump that saw it (stalled) */
  int32_t pid;                     /* 0: no owner found */
  char comm[17];                   /* "" when unknown */
  char cgroup[EBPF_NAME_LEN];      /* "" when unknown */
  char local[56], remote[56];      /* "[v6]:port" or "v4:port" */
};

struct st_cand {
  struct diag_sock s;
  int32_t pid;
  bool described;              /* comm and cgroup set (by owners_find) */
  char comm[17];
  char cgroup[EBPF_NAME_LEN];
};

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

struct st_want {
  uint32_t inode;
  uint32_t i; /* index into the candidates */
};

static int st_want_cmp(const void *a, const void *b) {
  const struct st_want *x = a, *y = b;
  return x->inode < y->inode ? -1 : x->inode > y->inode;
}

/* The process holding each candidate's inode: one pass over
 * /proc/<pid>/fd (whatever network namespace the socket lives in), until
 * every inode is found or st_scan_max entries have been looked at. The
 * first process found is the owner (a socket shared after fork has
 * several). Returns the number of entries looked at. */
static size_t st_owners(struct st_cand *c, size_t n) {
  struct st_want *w = malloc(n * sizeof(*w));
  if (!w)
    return 0;
  size_t nw = 0, found = 0, looked = 0;
  for (size_t i = 0; i < n; i++)
    if (c[i].s.inode) /* 0: no file refers to it (orphaned) */
      w[nw++] = (struct st_want){.inode = c[i].s.inode, .i = (uint32_t)i};
  qsort(w, nw, sizeof(*w), st_want_cmp);
  DIR *proc = nw ? opendir("/proc") : NULL;
  struct dirent *de;
  while (proc && found < nw && looked < st_scan_max &&
         (de = readdir(proc)) != NULL) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0)
      continue;
    char path[32];
    snprintf(path, sizeof(path), "%ld/fd", pid);
    int dfd = openat(dirfd(proc), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
      continue; /* exited, or a kernel thread */
    DIR *fds = fdopendir(dfd);
    if (!fds) {
      close(dfd);
      continue;
    }
    struct dirent *fe;
    while (found < nw && looked < st_scan_max &&
           (fe = readdir(fds)) != NULL) {
      if (fe->d_name[0] == '.')
        continue;
      looked++;
      char l[32];
      ssize_t k = readlinkat(dfd, fe->d_name, l, sizeof(l) - 1);
      if (k < 10 || memcmp(l, "socket:[", 8) != 0)
        continue;
      l[k] = 0;
      struct st_want key = {.inode = (uint32_t)strtoul(l + 8, NULL, 10)};
      struct st_want *hit = bsearch(&key, w, nw, sizeof(*w), st_want_cmp);
      if (hit && c[hit->i].pid == 0) {
        c[hit->i].pid = (int32_t)pid;
        found++;
      }
    }
    closedir(fds);
  }
  if (proc)
    closedir(proc);
  free(w);
  return looked;
}

/* The owners by the BPF task_file iterator (plugin/common/owners.c), where it
 * loads: host pids, the cgroup's full path from the kernel, no cap on the
 * descriptors looked at. Else the /proc scan below. */
static void st_owners_cb(const struct owner *o, void *arg) {
  struct st_cand *c = arg;
  for (size_t i = 0; i < st.ncand; i++) {
    if (c[i].s.inode != o->inode || c[i].pid)
      continue;
    c[i].pid = o->pid;
    memcpy(c[i].comm, o->comm, sizeof(c[i].comm));
    const char *path = o->cgroup;
    while (*path == '/')
      path++;
    instance_from_path(*path ? path : "root", c[i].cgroup);
    c[i].described = true;
  }
}

static void st_find_owners(struct st_cand *c, size_t n) {
  if (!owners_ready()) {
    st_owners(c, n);
    return;
  }
  uint64_t *inodes = malloc((n ? n : 1) * sizeof(*inodes));
  if (!inodes)
    return;
  for (size_t i = 0; i < n; i++)
    inodes[i] = c[i].s.inode;
  int r = owners_find(inodes, n, st_owners_cb, c);
  free(inodes);
  if (r < 0) {
    E_NOTICE(FEATURE ": the owners of stalled receivers could not be looked "
             "up by the BPF iterator (%s): /proc this time.",
             ERRSTR(r));
    st_owners(c, n);
  }
}

/* A small /proc/<pid>/<name> file into buf; its length, or -1. */
static ssize_t st_proc_read(int32_t pid, const char *name, char *buf,
                            size_t len) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = 0;
  return n;
}

/* comm (control characters as '?', as ps shows them) and the cgroup2
 * path named by the shared rule ("root" for the root cgroup). */
static void st_describe(struct st_entry *e) {
  char buf[4096];
  e->comm[0] = e->cgroup[0] = 0;
  if (e->pid <= 0)
    return;
  if (st_proc_read(e->pid, "comm", buf, sizeof(e->comm)) > 0) {
    buf[strcspn(buf, "\n")] = 0;
    for (char *p = buf; *p; p++)
      if ((unsigned char)*p < ' ' || *p == 0x7f)
        *p = '?';
    memcpy(e->comm, buf, strlen(buf) + 1);
  }
  if (st_proc_read(e->pid, "cgroup", buf, sizeof(buf)) > 0) {
    /* The cgroup2 line is "0::<path>". */
    for (char *line = buf; line && *line;) {
      char *nl = strchr(line, '\n');
      if (nl)
        *nl = 0;
      if (strncmp(line, "0::", 3) == 0) {
        const char *path = line + 3;
        while (*path == '/')
          path++;
        instance_from_path(*path ? path : "root", e->cgroup);
        break;
      }
      line = nl ? nl + 1 : NULL;
    }
  }
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
  if (cfg.netns)
    f[n++] = NF_STR("netns", cfg.netns);
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

/* After a whole dump: OKAY for the tracked sockets it did not see
 * stalled, WARNING for the new ones. */
static void st_commit(void) {
  size_t w = 0, n0 = st.n;
  for (size_t i = 0; i < st.n; i++) {
    struct st_entry *e = &st.e[i];
    if (e->stalled_gen == st.gen) {
      if (w != i)
        st.e[w] = *e;
      w++;
      continue;
    }
    st_notify(e, NOTIF_OKAY, e->seen_gen == st.gen ? "resumed" : "closed");
    tcpw_iter_track(e->cookie, false);
  }
  st.n = w;
  if (st.ncand) {
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
    st_find_owners(st.cand, st.ncand);
    /* By owner, so that one process's sockets share one look at its
     * comm and cgroup. */
    qsort(st.cand, st.ncand, sizeof(*st.cand), st_cand_pid_cmp);
    for (size_t i = 0; i < st.ncand; i++) {
      const struct diag_sock *s = &st.cand[i].s;
      struct st_entry *e = &st.e[st.n++];
      *e = (struct st_entry){.cookie = s->cookie,
                             .inode = s->inode,
                             .rqueue = s->rqueue,
                             .last_ms = s->last_data_recv,
                             .seen_gen = st.gen,
                             .stalled_gen = st.gen,
                             .pid = st.cand[i].pid};
      st_addr(e->local, s->family, s->src, s->sport);
      st_addr(e->remote, s->family, s->dst, s->dport);
      if (st.cand[i].described) {
        memcpy(e->comm, st.cand[i].comm, sizeof(e->comm));
        memcpy(e->cgroup, st.cand[i].cgroup, sizeof(e->cgroup));
      } else if (i && e->pid > 0 && e[-1].pid == e->pid) {
        memcpy(e->comm, e[-1].comm, sizeof(e->comm));
        memcpy(e->cgroup, e[-1].cgroup, sizeof(e->cgroup));
      } else {
        st_describe(e);
      }
      st_notify(e, NOTIF_WARNING, "stalled");
      tcpw_iter_track(e->cookie, true);
    }
    st.ncand = 0;
  }
  if (st.n != n0 || w != n0)
    st_reindex();
  tcpw_iter_ntracked(st.n);
  if (st.overflow && !st.overflow_warned)
    E_WARNING(FEATURE ": more than %zu stalled receivers: the others are "
              "counted but get no notifications until fewer are stalled.",
              st_track_max);
  st.overflow_warned = st.overflow != 0;
}

static void st_free(void) {
  owners_free();
  free(st.e);
  free(st.index);
  free(st.cand);
  st = (typeof(st)){0};
}

static int st_init(void) {
  st_free();
  /* Test-only: EBPF_TEST_OWNERS=proc takes the /proc scan. */
  const char *force = test_switch(TEST_OWNERS);
  char why[256] = "";
  if (force || owners_init(why, sizeof(why)) != 0)
    E_INFO(FEATURE ": stalled receivers' owners are looked up in /proc (%s%s): "
           "pids and cgroups as collectd's namespaces show them, at most %d "
           "descriptors looked at per read.",
           why[0] ? "the BPF task_file iterator failed to " : "forced by "
                                                              "EBPF_TEST_OWNERS",
           why, OWNER_SCAN_MAX_FDS);
  else
    E_INFO(FEATURE ": stalled receivers' owners are found by a BPF "
           "iterator (iter/task_file): host pids, cgroup paths from the "
           "hierarchy's root.");
  st.index_size = 16;
  while (st.index_size < 2 * st_track_max)
    st.index_size *= 2;
  st.index = calloc(st.index_size, sizeof(*st.index));
  if (!st.index) {
    E_WARNING(FEATURE ": stalled-receiver notifications are off: out of "
              "memory.");
    return -ENOMEM;
  }
  st.on = true;
  return 0;
}

static void stalled_read(void) {
  struct stall_acc acc = {.each = st.on ? st_each : NULL};
  uint32_t ms = (uint32_t)(cfg.stalled_after * 1000.0);
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
  vl_gauge(tw_vl(), "count", "stalled_receivers", (double)acc.stalled);
  vl_gauge(tw_vl(), "bytes", "stalled_receivers",
               (double)acc.stalled_bytes);
}

/* The scan: the BPF iterator where it loads, else sock_diag (one INFO
 * line says why). EBPF_TEST_STALLED_SCAN=sock_diag or =iter forces one
 * (for the tests: both are tested on one kernel). */
static int stalled_init(const struct netns *ns) {
  tcpw_diag.buf = malloc(DIAG_BUF_SIZE);
  if (!tcpw_diag.buf)
    return -ENOMEM;
  const char *force = test_switch(TEST_STALLED_SCAN);
  if (!force || strcmp(force, "sock_diag")) {
    char why[256];
    int err = tcpw_iter_init(ns, cfg.netns, why, sizeof(why));
    if (!err) {
      E_INFO(FEATURE ": stalled receivers: whole walks by a BPF iterator "
             "(iter/tcp).");
      /* The marked scans' exact requests (marks_init) need sock_diag. */
      if (tcpw_diag_open() != 0)
        E_INFO(FEATURE ": no NETLINK_SOCK_DIAG socket: every scan is a "
               "whole walk.");
      if (cfg.stalled_notify)
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
  if (cfg.stalled_notify)
    st_init(); /* without it, the counts run on */
  return 0;
}

/* ---------------------------------------------------------------- feature */

static void tcp_window_shutdown(void);

static int tcp_window_init(void) {
  struct netns ns;
  int back, err = netns_resolve(cfg.netns, FEATURE, &ns);
  if (err)
    return err;
  /* One meaning with netstacklat: without the option, collectd's own
   * namespace; "all": clamps of every namespace (0 = no filter). */
  netns_ino = ns.inum;
  /* A netlink socket stays bound to the namespace it was opened in. */
  if ((err = netns_enter(&ns, FEATURE, &back)) != 0) {
    E_WARNING(FEATURE ": the feature is disabled.");
    return err;
  }
  stalled_on = cfg.stalled && stalled_init(&ns) == 0;
  netns_leave(back, FEATURE);
  if (stalled_on && tcpw_marks_start(netns_ino) != 0)
    stalled_on = false;
  /* TCP memory and net.ipv4.tcp_mem are host-wide (tcp_mem exists only in
   * the initial namespace): read them from collectd's own. */
  tcp_memory_on = cfg.tcp_memory && tcpw_mem_init() == 0;
  clamps_on = cfg.clamps && tcpw_clamps_init(&cfg, netns_ino) == 0;
  if (!clamps_on && !tcp_memory_on && !stalled_on) {
    E_WARNING(FEATURE ": nothing of this feature can run here; it is "
              "disabled.");
    tcp_window_shutdown();
    return -ENOTSUP;
  }
  return 0;
}

static int tcp_window_read(void) {
  if (clamps_on)
    tcpw_clamps_read(tw_vl());
  if (tcp_memory_on)
    tcpw_mem_read(tw_vl());
  if (stalled_on)
    stalled_read();
  return 0;
}

static void tcp_window_shutdown(void) {
  tcpw_marks_free();
  tcpw_iter_free();
  tcpw_clamps_free();
  tcpw_mem_free();
  tcpw_diag_close();
  free(tcpw_diag.buf);
  tcpw_diag.buf = NULL;
  st_free();
  clamps_on = tcp_memory_on = stalled_on = false;
  cfg_defaults();
}

static struct bpf_object *tcp_window_bpf_object(void) {
  return tcpw_clamps_object();
}

const struct ebpf_feature feature_tcp_window = {
    .block = BLOCK,
    .name = FEATURE,
    .config = tcp_window_config,
    .init = tcp_window_init,
    .read = tcp_window_read,
    .shutdown = tcp_window_shutdown,
    .bpf_object = tcp_window_bpf_object,
};
