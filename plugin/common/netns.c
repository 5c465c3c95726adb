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
  struct stat st;
  int err = 0;
  if (n < 0 || (size_t)n >= sizeof(out->path))
    err = ENAMETOOLONG;
  else if (stat(out->path, &st) != 0)
    err = errno;
  if (err) {
    E_ERROR("%s: option \"NetworkNamespace\" \"%s\": %s: %s; expected "
            "\"host\", \"all\", a name under /run/netns or the path of a "
            "network namespace file.",
            feature, opt, out->path, ERRSTR(err));
    out->path[0] = 0;
    return -EINVAL;
  }
  out->kind = NETNS_NAMED;
  out->inum = (uint32_t)st.st_ino;
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

int netns_try_enter(const struct netns *ns, int *back) {
  *back = -1;
  if (ns->kind != NETNS_NAMED)
    return 0;
  int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
  int err = fd < 0 ? -errno : netns_enter_fd(fd, back);
  if (fd >= 0)
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

/* The fd of a namespace file if its inode is inum. */
static int open_if(const char *path, uint32_t inum) {
  struct stat st;
  if (stat(path, &st) != 0 || (uint32_t)st.st_ino != inum)
    return -1;
  return open(path, O_RDONLY | O_CLOEXEC);
}

/* Where a namespace was found last time: looked at first, so that a
 * namespace seen every interval costs one stat, not a walk of /proc. */
#define NHINTS 32
static struct {
  uint32_t inum;
  char path[300];
  char name[64];
} hint[NHINTS];
static unsigned next_hint;

static void hint_put(uint32_t inum, const char *path, const char *name) {
  unsigned i = next_hint++ % NHINTS;
  hint[i].inum = inum;
  snprintf(hint[i].path, sizeof(hint[i].path), "%s", path);
  size_t n = strnlen(name, sizeof(hint[i].name) - 1);
  memcpy(hint[i].name, name, n);
  hint[i].name[n] = 0;
}

int netns_open_inum(uint32_t inum, char *name, size_t len) {
  if (len)
    name[0] = 0;
  for (unsigned i = 0; i < NHINTS; i++) {
    if (!hint[i].inum || hint[i].inum != inum)
      continue;
    int fd = open_if(hint[i].path, inum);
    if (fd >= 0) {
      if (len)
        snprintf(name, len, "%s", hint[i].name);
      return fd;
    }
    hint[i].inum = 0;
  }
  char path[300];
  DIR *d = opendir("/run/netns");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "/run/netns/%s", e->d_name);
    int fd = open_if(path, inum);
    if (fd >= 0) {
      if (len)
        snprintf(name, len, "%s", e->d_name);
      hint_put(inum, path, e->d_name);
      closedir(d);
      return fd;
    }
  }
  if (d)
    closedir(d);
  /* A namespace nobody named (a container's): one of its processes. The
   * link's text "net:[<inum>]" saves opening every file. */
  char want[32];
  snprintf(want, sizeof(want), "net:[%u]", inum);
  d = opendir("/proc");
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9')
      continue;
    char link[64];
    snprintf(path, sizeof(path), "/proc/%s/ns/net", e->d_name);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0)
      continue;
    link[n] = 0;
    if (strcmp(link, want) != 0)
      continue;
    int fd = open_if(path, inum);
    if (fd >= 0) {
      hint_put(inum, path, "");
      closedir(d);
      return fd;
    }
  }
  if (d)
    closedir(d);
  return -ENOENT;
}
