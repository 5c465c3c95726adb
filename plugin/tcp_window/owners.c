// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's look-up of who holds a stalled receiver, once, when it
 * becomes stalled: by the BPF task_file iterator of plugin/common/owners.c
 * where it loads, else by a pass over /proc/<pid>/fd (from the socket's
 * inode); and the owner's comm and cgroup for the notifications. */
#include "tcp_window/internal.h"

#include "common/owners.h"
#include "core/testenv.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The /proc scan is bounded: */
#define OWNER_SCAN_MAX_FDS 65536 /* /proc/<pid>/fd entries per read */
static size_t st_scan_max = OWNER_SCAN_MAX_FDS; /* the unit test lowers it */

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
 * several); nothing is kept per descriptor, so the memory is the
 * candidates' whatever the processes hold. Returns the number of entries
 * looked at; *missed: the inodes not found when the cap stopped it. */
static size_t st_owners(struct st_cand *c, size_t n, size_t *missed) {
  *missed = 0;
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
  if (looked >= st_scan_max)
    *missed = nw - found;
  free(w);
  return looked;
}

/* The owners by the BPF task_file iterator (plugin/common/owners.c), where it
 * loads: host pids, the cgroup's full path from the kernel, no cap on the
 * descriptors looked at, one record per socket. Else the /proc scan. */
struct cands {
  struct st_cand *c;
  size_t n;
};

static void st_owners_cb(const struct owner *o, void *arg) {
  const struct cands *a = arg;
  struct st_cand *c = a->c;
  for (size_t i = 0; i < a->n; i++) {
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

/* The /proc scan, and one INFO line when its cap left sockets out (at most
 * one a read: the look-up runs once a read, for the newly stalled). */
static void st_owners_proc(struct st_cand *c, size_t n) {
  size_t missed = 0;
  size_t looked = st_owners(c, n, &missed);
  if (missed)
    E_INFO(FEATURE ": the owner lookup in /proc stopped after %zu "
           "descriptors: %zu stalled receivers get no owner this time.",
           looked, missed);
}

void tcpw_owners_find(struct st_cand *c, size_t n) {
  if (!owners_ready()) {
    st_owners_proc(c, n);
    return;
  }
  uint64_t *inodes = malloc((n ? n : 1) * sizeof(*inodes));
  if (!inodes)
    return;
  for (size_t i = 0; i < n; i++)
    inodes[i] = c[i].s.inode;
  struct cands a = {.c = c, .n = n};
  struct owners_left left;
  int r = owners_find(inodes, n, st_owners_cb, &a, &left);
  free(inodes);
  if (r < 0) {
    E_NOTICE(FEATURE ": the owners of stalled receivers could not be looked "
             "up by the BPF iterator (%s): /proc this time.",
             ERRSTR(r));
    st_owners_proc(c, n);
  } else if (left.fds) {
    E_INFO(FEATURE ": the owner lookup named the first process holding each "
           "of %d stalled receivers and left out %llu further descriptors, "
           "in %llu further processes, that refer to them.",
           r, (unsigned long long)left.fds, (unsigned long long)left.procs);
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

/* comm (its bytes as they are: the notification escapes them, base.h)
 * and the cgroup2 path named by the shared rule ("root" for the root
 * cgroup). */
void tcpw_owners_describe(struct st_entry *e) {
  char buf[4096];
  e->comm[0] = e->cgroup[0] = 0;
  if (e->pid <= 0)
    return;
  if (st_proc_read(e->pid, "comm", buf, sizeof(e->comm)) > 0) {
    /* /proc ends it with a newline: only that one goes, a comm may hold
     * newlines of its own. */
    size_t cl = strlen(buf);
    if (cl && buf[cl - 1] == '\n')
      buf[cl - 1] = 0;
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

void tcpw_owners_init(void) {
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
}

void tcpw_owners_free(void) { owners_free(); }
