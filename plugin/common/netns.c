// SPDX-License-Identifier: GPL-2.0-only
/* Network namespaces for every feature of the ebpf plugin. See netns.h. */
#define _GNU_SOURCE 1 /* setns(), CLONE_NEWNET */
#include "common/netns.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint32_t netns_self_inum(void) {
  struct stat st;
  if (stat("/proc/self/ns/net", &st) != 0)
    return 0;
  return (uint32_t)st.st_ino;
}

/* Open a namespace file and say which namespace the fd holds: the inode is
 * read from the fd, never from the path before (a path can change between
 * a stat() and an open()). */
static int open_ns(const char *path, uint32_t *inum) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = -errno;
    close(fd);
    return err;
  }
  *inum = (uint32_t)st.st_ino;
  return fd;
}

int netns_resolve(const char *opt, const char *feature, struct netns *out) {
  memset(out, 0, sizeof(*out));
  if (!opt || !strcasecmp(opt, "host")) {
    out->kind = NETNS_HOST;
    out->inum = netns_self_inum();
    return 0;
  }
  if (!strcasecmp(opt, "all")) {
    out->kind = NETNS_ALL;
    return 0;
  }
  int n = snprintf(out->path, sizeof(out->path), "%s%s",
                   opt[0] == '/' ? "" : "/run/netns/", opt);
  int fd = n < 0 || (size_t)n >= sizeof(out->path)
               ? -ENAMETOOLONG
               : open_ns(out->path, &out->inum);
  if (fd < 0) {
    E_ERROR("%s: option \"NetworkNamespace\" \"%s\": %s: %s; expected "
            "\"host\", \"all\", a name under /run/netns or the path of a "
            "network namespace file.",
            feature, opt, out->path, ERRSTR(-fd));
    out->path[0] = 0;
    return -EINVAL;
  }
  close(fd);
  out->kind = NETNS_NAMED;
  return 0;
}

int netns_enter_fd(int fd, int *back) {
  *back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (*back < 0)
    return -errno;
  if (setns(fd, CLONE_NEWNET) != 0) {
    int err = -errno;
    close(*back);
    *back = -1;
    return err;
  }
  return 0;
}

/* The path is opened again at each use, and what it names now must be
 * the namespace resolved at start (the one the BPF filter counts): a
 * /proc/<pid>/ns/net whose pid was reused, or a /run/netns name deleted
 * and made again, names another namespace, which is not entered. */
int netns_open(const struct netns *ns) {
  uint32_t now = 0;
  int fd = open_ns(ns->path, &now);
  if (fd < 0 || now == ns->inum)
    return fd;
  close(fd);
  static uint32_t warned; /* the last other namespace said */
  if (warned != now)
    E_WARNING("%s names network namespace %u now, not %u as at start (a "
              "reused pid, or a name made again): it is not entered; "
              "restart collectd to follow the new one.",
              ns->path, now, ns->inum);
  warned = now;
  return -ESTALE;
}

int netns_try_enter(const struct netns *ns, int *back) {
  *back = -1;
  if (ns->kind != NETNS_NAMED)
    return 0;
  int fd = netns_open(ns);
  if (fd < 0)
    return fd;
  int err = netns_enter_fd(fd, back);
  close(fd);
  return err;
}

int netns_enter(const struct netns *ns, const char *feature, int *back) {
  int err = netns_try_enter(ns, back);
  if (err)
    E_WARNING("%s: cannot enter network namespace %s: %s", feature, ns->path,
              ERRSTR(err));
  return err;
}

void netns_leave(int back, const char *feature) {
  if (back < 0)
    return;
  if (setns(back, CLONE_NEWNET) != 0)
    E_ERROR("%s: cannot return to collectd's network namespace: %s", feature,
            ERRSTR(errno));
  close(back);
}

/* ------------------------------------------- namespaces by inode number */

/* Where each namespace in use was found: a /run/netns name or one of its
 * processes' /proc/<pid>/ns/net. Only the path is kept between reads, not
 * an open fd: an fd keeps its namespace alive, and with it a stopped
 * container's interfaces (a veth's host end too), long after the container
 * is gone. So no fd is held between reads, whatever the number of
 * namespaces, and at most two (the namespace's and the way back) while one
 * is entered. */
struct ns_where {
  uint32_t inum;
  bool found;
  char path[300];
  char name[64]; /* the /run/netns name, else "" */
};
static struct ns_where *where; /* sorted by inum: those of the last lookup */
static size_t nwhere;

static int cmp_where(const void *a, const void *b) {
  uint32_t x = ((const struct ns_where *)a)->inum,
           y = ((const struct ns_where *)b)->inum;
  return x < y ? -1 : x > y;
}

static struct ns_where *where_in(struct ns_where *v, size_t n, uint32_t inum) {
  struct ns_where k = {.inum = inum};
  return n ? bsearch(&k, v, n, sizeof(*v), cmp_where) : NULL;
}

static void where_set(struct ns_where *e, const char *path, const char *name) {
  e->found = true;
  snprintf(e->path, sizeof(e->path), "%s", path);
  size_t n = strnlen(name, sizeof(e->name) - 1);
  memcpy(e->name, name, n);
  e->name[n] = 0;
}

/* One walk of /run/netns, then of /proc, for every entry not found. */
static void where_find_missing(struct ns_where *v, size_t n) {
  char path[300];
  struct stat st;
  struct dirent *e;
  DIR *d = opendir("/run/netns");
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "/run/netns/%s", e->d_name);
    struct ns_where *w;
    if (stat(path, &st) == 0 && (w = where_in(v, n, (uint32_t)st.st_ino)) &&
        !w->found)
      where_set(w, path, e->d_name);
  }
  if (d)
    closedir(d);
  /* A namespace nobody named (a container's): one of its processes. The
   * link's text "net:[<inum>]" saves opening every file. */
  d = opendir("/proc");
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9')
      continue;
    char link[64];
    snprintf(path, sizeof(path), "/proc/%s/ns/net", e->d_name);
    ssize_t k = readlink(path, link, sizeof(link) - 1);
    if (k <= 0)
      continue;
    link[k] = 0;
    unsigned inum;
    struct ns_where *w;
    if (sscanf(link, "net:[%u]", &inum) == 1 && (w = where_in(v, n, inum)) &&
        !w->found)
      where_set(w, path, "");
  }
  if (d)
    closedir(d);
}

void netns_lookup(const uint32_t *inums, size_t n) {
  struct ns_where *v = calloc(n ? n : 1, sizeof(*v));
  if (!v)
    return;
  size_t u = 0, missing = 0;
  for (size_t i = 0; i < n; i++)
    v[u++].inum = inums[i];
  qsort(v, u, sizeof(*v), cmp_where);
  size_t m = 0;
  for (size_t i = 0; i < u; i++) {
    if (m && v[m - 1].inum == v[i].inum)
      continue;
    struct ns_where *old = where_in(where, nwhere, v[i].inum);
    struct stat st;
    /* Still there: one stat(); a reused pid or a name made again names
     * another namespace and is looked for again. */
    if (old && old->found && stat(old->path, &st) == 0 &&
        (uint32_t)st.st_ino == v[i].inum)
      v[m] = *old;
    else
      v[m] = (struct ns_where){.inum = v[i].inum}, missing++;
    m++;
  }
  if (missing)
    where_find_missing(v, m);
  free(where);
  where = v;
  nwhere = m;
}

int netns_open_inum(uint32_t inum, char *name, size_t len) {
  if (len)
    name[0] = 0;
  struct ns_where *w = where_in(where, nwhere, inum);
  for (int tries = 0; w && tries < 2; tries++) {
    uint32_t now = 0;
    int fd = w->found ? open_ns(w->path, &now) : -ENOENT;
    if (fd >= 0 && now == inum) {
      if (len)
        snprintf(name, len, "%s", w->name);
      return fd;
    }
    if (fd >= 0)
      close(fd);
    if (!w->found || tries) /* not found at this read's walk */
      break;
    /* The process exited (or its pid was reused) since the lookup. */
    w->found = false;
    where_find_missing(where, nwhere);
  }
  return -ENOENT;
}

bool netns_found(uint32_t inum) {
  const struct ns_where *w = where_in(where, nwhere, inum);
  return w && w->found;
}

void netns_lookup_free(void) {
  free(where);
  where = NULL;
  nwhere = 0;
}
