// SPDX-License-Identifier: GPL-2.0-only
/* pressure: Linux PSI (pressure stall information) for the host and for
 * cgroup v2 groups. Files are opened once and pread() every interval (PSI
 * files are seq_files, and a pread at offset 0 re-renders them without the
 * open/close and path walk of a fresh read), up to FD_KEEP of the cgroups'
 * files; those past it are opened at each read. */
#include "common/cgroup.h"
#include "common/newnames.h"
#include "pressure/internal.h"
#include "pressure/psi_parse.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>




struct psi_source {
  char *rel;                 /* cgroup path below the root; NULL for host */
  char instance[EBPF_NAME_LEN]; /* the part after "<res>-" */
  char base[EBPF_NAME_LEN];     /* instance by the naming rule alone */
  uint32_t hash;                /* path_hash(rel) */
  /* plugin_instance of each resource's values, made once (source_name) */
  char inst[RES_COUNT][DATA_MAX_NAME_LEN];
  char *dir;        /* the cgroup's directory; NULL for host */
  unsigned have;    /* bitmask of the resources whose file reads */
  int fd[RES_COUNT]; /* kept open (fds_kept), or -1: opened at each read */
  ino_t ino[RES_COUNT]; /* each file's inode when first opened */
  bool seen;  /* matched in this interval's scan */
  bool stale; /* a read of its files failed: the cgroup was removed */
};

static struct psi_source host = {.fd = {-1, -1, -1, -1}};
static struct psi_source *groups;
static size_t ngroups;
static unsigned host_res; /* resources the host actually provides */
/* NewGroupsPerHour: the names given to cgroups; the cgroups left out at
 * the last scan. */
static struct newnames names;
static int refused_said;
static bool warned_no_cg2;

/* ------------------------------------------------------------------ read */

/* The cgroups' files kept open, at most FD_KEEP: a PSI file is a
 * seq_file, and a pread at offset 0 of an open one reads it afresh, one
 * system call a read. Past FD_KEEP files a cgroup's are opened, read and
 * closed at every read (four calls: the inode is compared with the one
 * seen first, so that a cgroup removed and made again at the same path is
 * noticed as with an open file), so that the plugin's descriptors stay
 * bounded: 1,000 cgroups with their 4 files each would be 4,000, past
 * systemd's default LimitNOFILE=1024, and every other part of collectd
 * would then fail to open its own. */
#define FD_KEEP 256
static unsigned fds_kept;

static void fd_drop(struct psi_source *s, int r) {
  if (s->fd[r] >= 0) {
    close(s->fd[r]);
    if (s->rel)
      fds_kept--;
  }
  s->fd[r] = -1;
}

static void source_close(struct psi_source *s) {
  for (int r = 0; r < RES_COUNT; r++)
    fd_drop(s, r);
  s->have = 0;
  free(s->rel);
  s->rel = NULL;
  free(s->dir);
  s->dir = NULL;
}

/* Read and parse one PSI file. Returns 0, or a negative errno. */
static int read_psi(int fd, struct psi_stats *st) {
  char buf[512];
  ssize_t n = pread(fd, buf, sizeof(buf), 0);
  if (n < 0)
    return -errno;
  return psi_parse(buf, (size_t)n, st);
}

static int open_psi(const char *dir, int r) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s.pressure", dir,
                       res_name[r]) >= sizeof(path))
    return -ENAMETOOLONG;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

/* One file of a source: through its open descriptor, or opened for this
 * read; -ESTALE when the file at the path is not the one first seen (its
 * cgroup was removed and made again). */
static int read_file(const struct psi_source *s, int r, struct psi_stats *st) {
  if (s->fd[r] >= 0)
    return read_psi(s->fd[r], st);
  int fd = open_psi(s->dir, r);
  if (fd < 0)
    return fd;
  struct stat sb;
  int err = fstat(fd, &sb) ? -errno : sb.st_ino != s->ino[r] ? -ESTALE : 0;
  if (!err)
    err = read_psi(fd, st);
  close(fd);
  return err;
}

static void submit_line(value_list_t *vl, int full, const struct psi_line *l) {
  static const char *const ti[2][3] = {
      {"some-avg10", "some-avg60", "some-avg300"},
      {"full-avg10", "full-avg60", "full-avg300"}};
  const double avg[3] = {l->avg10, l->avg60, l->avg300};
  for (int i = 0; i < 3; i++)
    if (cfg.averages & (1u << i))
      vl_gauge(vl, "percent", ti[full][i], avg[i]);
  vl_derive(vl, "total_time_in_ms", full ? "full" : "some",
            (int64_t)(l->total_us / 1000));
}

/* The plugin_instance of each resource: "<res>" for the host,
 * "<res>-<cgroup>" for a cgroup. Once, when the source is made. */
static void source_name(struct psi_source *s) {
  for (int r = 0; r < RES_COUNT; r++)
    if (s->rel)
      snprintf(s->inst[r], sizeof(s->inst[r]), "%s-%s", res_name[r],
               s->instance);
    else
      snprintf(s->inst[r], sizeof(s->inst[r]), "%s", res_name[r]);
}

static int read_source(struct psi_source *s, int r) {
  struct psi_stats st;
  int err = read_file(s, r, &st);
  if (err)
    return err;
  value_list_t vl;
  vl_prepare(&vl, FEATURE, s->inst[r]);
  if (st.some.present)
    submit_line(&vl, 0, &st.some);
  if (st.full.present)
    submit_line(&vl, 1, &st.full);
  return 0;
}

/* Open the PSI files of one cgroup (g->rel set); returns how many read.
 * *emfile: one failed because collectd has no descriptor left. */
static int group_open(struct psi_source *g, const char *dir, bool *emfile) {
  int n = 0;
  g->have = 0;
  if (!g->dir || strcmp(g->dir, dir) != 0) {
    free(g->dir);
    g->dir = strdup(dir);
    if (!g->dir)
      return 0;
  }
  for (int r = 0; r < RES_COUNT; r++) {
    fd_drop(g, r);
    if (!(cfg.resources & (1u << r)))
      continue;
    int fd = open_psi(dir, r);
    if (fd == -EMFILE || fd == -ENFILE)
      *emfile = true;
    if (fd < 0)
      continue;
    struct psi_stats st;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || read_psi(fd, &st) != 0) { /* irq: EOPNOTSUPP */
      close(fd);
      continue;
    }
    g->ino[r] = sb.st_ino;
    g->have |= 1u << r;
    n++;
    if (fds_kept < FD_KEEP) {
      g->fd[r] = fd;
      fds_kept++;
    } else {
      close(fd);
    }
  }
  return n;
}

/* Append names to a one-line summary of changes, without flooding. */
static void note(char *buf, size_t len, int *count, const char *name) {
  size_t off = strlen(buf);
  (*count)++;
  if (*count <= 5 && off < len)
    snprintf(buf + off, len - off, "%s%s", *count > 1 ? ", " : "", name);
  else if (*count == 6 && off < len)
    snprintf(buf + off, len - off, ", ...");
}

/* Matching cgroups without PSI files, said once each while they exist:
 * one no longer matched at a scan is forgotten, so that the list follows
 * the cgroups there are (pods come and go) instead of growing. */
static struct skipped {
  char *rel;
  bool seen;
} *skipped;
static size_t nskipped;

static bool skipped_has(const char *rel) {
  for (size_t i = 0; i < nskipped; i++)
    if (strcmp(skipped[i].rel, rel) == 0) {
      skipped[i].seen = true;
      return true;
    }
  return false;
}

static void skipped_add(const char *rel) {
  struct skipped *t = realloc(skipped, (nskipped + 1) * sizeof(*t));
  if (!t)
    return;
  skipped = t;
  if ((skipped[nskipped].rel = strdup(rel)) != NULL)
    skipped[nskipped++].seen = true;
}

static void skipped_forget_unseen(void) {
  size_t kept = 0;
  for (size_t i = 0; i < nskipped; i++) {
    if (skipped[i].seen) {
      skipped[i].seen = false; /* for the next scan */
      skipped[kept++] = skipped[i];
    } else {
      free(skipped[i].rel);
    }
  }
  nskipped = kept;
}

struct scan {
  char added[512], removed[512];
  int nadded, nremoved;
  int nrefused;        /* cgroups left out: NewGroupsPerHour */
  char refused[256];   /* the first of them */
  int nemfile;         /* cgroups left out: no descriptor left */
  char emfile[256];    /* the first of them */
};

/* groups[] is sorted by rel: where rel is, or would go. */
static size_t group_find(const char *rel, bool *found) {
  size_t lo = 0, hi = ngroups;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(groups[mid].rel, rel);
    if (c == 0) {
      *found = true;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = false;
  return lo;
}

/* A cgroup the globs matched: mark it seen, or open it. */
static void scan_one(const char *dir, const char *rel, void *arg) {
  struct scan *s = arg;
  bool found;
  size_t at = group_find(rel, &found);
  if (found) {
    struct psi_source *g = &groups[at];
    g->seen = true;
    if (g->stale) {
      /* Removed, and a cgroup is at the same path again (a restarted
       * service or pod of the same name): open the new one's files. */
      bool emfile = false;
      g->stale = group_open(g, dir, &emfile) == 0;
      if (g->stale && emfile && s->nemfile++ == 0)
        snprintf(s->emfile, sizeof(s->emfile), "%s", rel);
      if (!g->stale)
        E_INFO("pressure: cgroup %s was made again; reading the new one.",
               rel);
    }
    return;
  }
  struct psi_source g = {.seen = true, .hash = path_hash(rel),
                         .fd = {-1, -1, -1, -1}, .rel = strdup(rel)};
  if (!g.rel)
    return;
  cgroup_name(rel, g.base);
  if (!newnames_admit(&names, g.base)) {
    if (s->nrefused++ == 0)
      snprintf(s->refused, sizeof(s->refused), "%s", rel);
    source_close(&g);
    return;
  }
  memcpy(g.instance, g.base, sizeof(g.instance));
  bool emfile = false;
  if (group_open(&g, dir, &emfile) == 0) {
    source_close(&g);
    if (emfile) {
      /* Not "no PSI files": tried again at the next scan. */
      if (s->nemfile++ == 0)
        snprintf(s->emfile, sizeof(s->emfile), "%s", rel);
      return;
    }
    if (!skipped_has(rel)) {
      E_INFO("pressure: cgroup %s has no readable PSI files (cgroup.pressure "
             "0, or PSI off); it is skipped.",
             rel);
      skipped_add(rel);
    }
    return;
  }
  struct psi_source *ng = realloc(groups, (ngroups + 1) * sizeof(*ng));
  if (!ng) {
    source_close(&g);
    return;
  }
  groups = ng;
  source_name(&g);
  memmove(&groups[at + 1], &groups[at], (ngroups - at) * sizeof(*groups));
  groups[at] = g;
  ngroups++;
  note(s->added, sizeof(s->added), &s->nadded, rel);
}

/* Two cgroups whose paths the naming rule maps to one name
 * (foo-bar.service and foo_bar.service) would be dispatched under one
 * identifier: each gets the hash of its path (names_unshare()), while both
 * are watched. After every scan. */
static void groups_unshare(void) {
  struct name_use *u = malloc((ngroups ? ngroups : 1) * sizeof(*u));
  char(*nm)[EBPF_NAME_LEN] = malloc((ngroups ? ngroups : 1) * sizeof(*nm));
  if (!u || !nm) {
    free(u);
    free(nm);
    return;
  }
  for (size_t i = 0; i < ngroups; i++) {
    memcpy(nm[i], groups[i].base, sizeof(nm[i]));
    u[i] = (struct name_use){nm[i], groups[i].hash};
  }
  names_unshare(u, ngroups);
  for (size_t i = 0; i < ngroups; i++) {
    struct psi_source *g = &groups[i];
    if (strcmp(nm[i], g->instance) == 0)
      continue;
    bool shared = strcmp(nm[i], g->base) != 0;
    memcpy(g->instance, nm[i], sizeof(g->instance));
    source_name(g);
    if (shared)
      E_INFO("pressure: cgroup %s is named %s: another cgroup watched is "
             "also %s by the naming rule.",
             g->rel, g->instance, g->base);
    else
      E_INFO("pressure: cgroup %s is named %s again: no other cgroup "
             "watched shares that name now.",
             g->rel, g->instance);
  }
  free(u);
  free(nm);
}

static void scan_cgroups(void) {
  if (!cgroup2_root()) {
    if (!warned_no_cg2)
      E_WARNING("pressure: no cgroup2 hierarchy is mounted; the Cgroup "
                "option is ignored.");
    warned_no_cg2 = true;
    return;
  }
  for (size_t i = 0; i < ngroups; i++)
    groups[i].seen = false;

  struct scan s = {"", "", 0, 0, 0, "", 0, ""};
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  newnames_tick(&names, now.tv_sec + now.tv_nsec / 1e9);
  for (size_t p = 0; p < cfg.ncgroups; p++)
    cgroup2_glob(cfg.cgroups[p], scan_one, &s);
  skipped_forget_unseen();

  size_t kept = 0; /* keeps the order */
  for (size_t i = 0; i < ngroups; i++) {
    if (groups[i].seen) {
      groups[kept++] = groups[i];
      continue;
    }
    note(s.removed, sizeof(s.removed), &s.nremoved, groups[i].rel);
    source_close(&groups[i]);
  }
  ngroups = kept;
  if (s.nadded)
    E_INFO("pressure: watching %d new cgroup%s: %s", s.nadded,
           s.nadded == 1 ? "" : "s", s.added);
  if (s.nremoved)
    E_INFO("pressure: %d cgroup%s gone: %s", s.nremoved,
           s.nremoved == 1 ? "" : "s", s.removed);
  if (s.nadded || s.nremoved)
    groups_unshare();
  if (s.nrefused != refused_said)
    E_INFO("pressure: %d matching cgroup%s (%s%s) not watched: more new "
           "cgroups than NewGroupsPerHour %u (%u a scan); each is tried "
           "again at the next scans.",
           s.nrefused, s.nrefused == 1 ? "" : "s", s.refused,
           s.nrefused > 1 ? ", ..." : "", names.per_hour, names.per_read);
  refused_said = s.nrefused;
  if (s.nemfile) {
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    E_WARNING("pressure: %d cgroup%s (%s%s) left out for now: collectd has "
              "no file descriptor left (EMFILE: its limit, RLIMIT_NOFILE, is "
              "%llu, LimitNOFILE= in its systemd unit); the next scan tries "
              "again.",
              s.nemfile, s.nemfile == 1 ? "" : "s", s.emfile,
              s.nemfile > 1 ? ", ..." : "", (unsigned long long)rl.rlim_cur);
  }
}

/* The glob(3) of every Cgroup pattern was a third of a read with 50
 * cgroups (and grows with them): the scan runs when it can find something.
 * A cgroup that goes away shows as a failed read of its open files, which
 * asks for a scan at the next read; a path without glob characters that
 * matches nothing yet is looked for every read; new matches of a glob are
 * picked up within SCAN_EVERY reads. */
#define SCAN_EVERY 5
static unsigned reads_since_scan = SCAN_EVERY; /* scan at the first read */
static bool scan_asked;

static bool scan_due(void) {
  if (scan_asked || ++reads_since_scan >= SCAN_EVERY)
    return true;
  for (size_t p = 0; p < cfg.ncgroups; p++) {
    if (cgroup_is_glob(cfg.cgroups[p]))
      continue;
    const char *rel = cfg.cgroups[p];
    while (*rel == '/')
      rel++;
    bool found;
    group_find(rel, &found);
    if (!found)
      return true;
  }
  return false;
}

static int pressure_read(void) {
  if (cfg.host)
    for (int r = 0; r < RES_COUNT; r++)
      if (host.fd[r] >= 0)
        read_source(&host, r);
  if (cfg.ncgroups) {
    if (scan_due()) {
      scan_cgroups();
      reads_since_scan = 0;
      scan_asked = false;
    }
    for (size_t i = 0; i < ngroups; i++)
      for (int r = 0; r < RES_COUNT; r++)
        if ((groups[i].have & (1u << r)) && read_source(&groups[i], r) != 0) {
          /* Removed (the kernel's files of a removed cgroup fail to
           * read; a file opened for the read is another one): the next
           * read scans, which drops it, or reopens it when a cgroup is at
           * its path again. */
          fd_drop(&groups[i], r);
          groups[i].have &= ~(1u << r);
          groups[i].stale = true;
          scan_asked = true;
        }
  }
  return 0;
}

static int pressure_init(void) {
  for (int r = 0; r < RES_COUNT; r++)
    host.fd[r] = -1;
  host.have = 0;
  host_res = 0;
  source_name(&host);
  if (cfg.host) {
    for (int r = 0; r < RES_COUNT; r++) {
      if (!(cfg.resources & (1u << r)))
        continue;
      char path[64];
      snprintf(path, sizeof(path), "/proc/pressure/%s", res_name[r]);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      int err = fd < 0 ? -errno : 0;
      struct psi_stats st;
      if (!err)
        err = read_psi(fd, &st);
      if (err) {
        E_INFO("pressure: %s is not available (%s); resource \"%s\" is "
               "skipped%s.",
               path, ERRSTR(err), res_name[r],
               r == RES_IRQ ? " (kernel without CONFIG_IRQ_TIME_ACCOUNTING "
                              "or PSI disabled)"
                            : " (kernel without PSI, or booted with psi=0)");
        if (fd >= 0)
          close(fd);
        continue;
      }
      host.fd[r] = fd;
      host.have |= 1u << r;
      host_res |= 1u << r;
    }
  }
  if (newnames_init(&names, (unsigned)cfg.new_groups))
    return -ENOMEM;
  if (cfg.ncgroups && !cgroup2_root()) {
    E_WARNING("pressure: no cgroup2 hierarchy is mounted; the Cgroup option "
              "is ignored.");
    warned_no_cg2 = true;
  }
  if (!host_res && (cfg.ncgroups == 0 || !cgroup2_root())) {
    E_WARNING("pressure: PSI is not available on this kernel; the pressure "
              "feature is disabled.");
    return -ENOTSUP;
  }
  return 0;
}

static void pressure_shutdown(void) {
  reads_since_scan = SCAN_EVERY;
  scan_asked = false;
  source_close(&host);
  for (size_t i = 0; i < ngroups; i++)
    source_close(&groups[i]);
  free(groups);
  groups = NULL;
  ngroups = 0;
  fds_kept = 0;
  for (size_t i = 0; i < nskipped; i++)
    free(skipped[i].rel);
  free(skipped);
  skipped = NULL;
  nskipped = 0;
  pressure_config_reset();
  warned_no_cg2 = false;
  newnames_free(&names);
  refused_said = 0;
}

const struct ebpf_feature feature_pressure = {
    .block = "Pressure",
    .name = FEATURE,
    .config = pressure_config,
    .keys = &pressure_keys,
    .init = pressure_init,
    .read = pressure_read,
    .shutdown = pressure_shutdown,
};
