// SPDX-License-Identifier: GPL-2.0-only
#include "common/owners.h"

#include "core/base.h"
#include "common/owners_rec.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "owners_iter.skel.h"

static struct owners_iter_bpf *skel;
static struct bpf_link *iter_lnk;

void owners_free(void) {
  bpf_link__destroy(iter_lnk);
  iter_lnk = NULL;
  owners_iter_bpf__destroy(skel);
  skel = NULL;
}

int owners_ready(void) { return iter_lnk != NULL; }

int owners_init(char *why, size_t len) {
  int err = 0;
  const char *step = "open";
  owners_free();
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  skel = owners_iter_bpf__open_opts(&opts);
  if (!skel) {
    err = -errno;
    goto fail;
  }
  if ((err = owners_iter_bpf__load(skel)) != 0) {
    step = err == -EPERM ? "load (needs CAP_BPF and CAP_PERFMON)"
                         : "load (needs iter/task_file, 5.8)";
    goto fail;
  }
  step = "attach";
  iter_lnk = bpf_program__attach_iter(skel->progs.owners_scan, NULL);
  if (!iter_lnk) {
    err = -errno;
    goto fail;
  }
  return 0;
fail:
  snprintf(why, len, "%s: %s", step, ERRSTR(err ? err : -EINVAL));
  owners_free();
  return err ? err : -EINVAL;
}

_Static_assert(OWNERS_BUF_LEN >= 2 * OWNERS_REC_LEN, "a record fits twice");

struct pass {
  const uint64_t *want;
  size_t n;
  uint8_t *done; /* want[i] reported */
  void (*cb)(const struct owner *o, void *arg);
  void *arg;
  struct owners_left *left;
  int reported;
};

static size_t want_find(const uint64_t *w, size_t n, uint64_t v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && w[lo] == v ? lo : n;
}

/* One whole record at p (OWNERS_REC_LEN bytes). */
static int parse_one(const char *p, struct pass *ps) {
  struct owners_rec r;
  memcpy(&r, p, sizeof(r));
  p += sizeof(r);
  if (r.depth > OWNERS_DEPTH_MAX)
    return -EINVAL;
  size_t i = want_find(ps->want, ps->n, r.inode);
  if (i == ps->n || ps->done[i]) {
    ps->left->fds++;
    return 0;
  }
  ps->done[i] = 1;
  /* The names come leaf first: put them root first. */
  char path[OWNERS_DEPTH_MAX * OWNERS_NAME_MAX + 8];
  size_t o = 0;
  if (r.truncated)
    o += (size_t)snprintf(path, sizeof(path), "/...");
  for (int d = (int)r.depth - 1; d >= 0; d--) {
    const char *name = p + (size_t)d * OWNERS_NAME_MAX;
    size_t nl = strnlen(name, OWNERS_NAME_MAX - 1);
    path[o++] = '/';
    memcpy(path + o, name, nl);
    o += nl;
  }
  if (!o)
    path[o++] = '/';
  path[o] = 0;
  struct owner ow = {.inode = r.inode,
                     .pid = (int32_t)r.tgid,
                     .ns_pid = (int32_t)r.ns_pid,
                     .pid_ns = r.pid_ns,
                     .cgroup = path};
  memcpy(ow.comm, r.comm, sizeof(r.comm));
  ow.comm[16] = 0; /* its bytes as they are: escaped where shown */
  ps->cb(&ow, ps->arg);
  ps->reported++;
  return 0;
}

int owners_drain(int fd, const uint64_t *want, size_t n,
                 void (*cb)(const struct owner *o, void *arg), void *arg,
                 struct owners_left *left) {
  struct owners_left none = {0};
  struct pass ps = {.want = want, .n = n, .cb = cb, .arg = arg,
                    .left = left ? left : &none};
  char *buf = malloc(OWNERS_BUF_LEN);
  ps.done = calloc(n ? n : 1, 1);
  int err = buf && ps.done ? 0 : -ENOMEM;
  size_t have = 0;
  while (!err) {
    ssize_t k = read(fd, buf + have, OWNERS_BUF_LEN - have);
    /* EAGAIN: the iterator went through a million objects with nothing
     * to show; the next read goes on from there. */
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (k < 0)
      err = -errno;
    if (k == 0 && have)
      err = -EINVAL; /* cut short */
    if (k <= 0)
      break;
    have += (size_t)k;
    size_t o = 0;
    for (; !err && have - o >= OWNERS_REC_LEN; o += OWNERS_REC_LEN)
      err = parse_one(buf + o, &ps);
    memmove(buf, buf + o, have - o);
    have -= o;
  }
  free(buf);
  free(ps.done);
  return err ? err : ps.reported;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int owners_find(const uint64_t *inodes, size_t n,
                void (*cb)(const struct owner *o, void *arg), void *arg,
                struct owners_left *left) {
  struct owners_left none;
  if (!left)
    left = &none;
  *left = (struct owners_left){0};
  if (!iter_lnk)
    return -ENOENT;
  uint64_t *want = malloc((n ? n : 1) * sizeof(*want));
  if (!want)
    return -ENOMEM;
  size_t nw = 0, put = 0;
  for (size_t i = 0; i < n; i++)
    if (inodes[i])
      want[nw++] = inodes[i];
  qsort(want, nw, sizeof(*want), u64_cmp);
  int mfd = bpf_map__fd(skel->maps.owners_want);
  uint32_t zero = 0;
  for (size_t i = 0; i < nw && put < OWNERS_WANT_MAX; i++)
    if ((!put || want[put - 1] != want[i]) &&
        bpf_map_update_elem(mfd, &want[i], &zero, BPF_ANY) == 0)
      want[put++] = want[i];
  int found = 0;
  if (put) {
    skel->bss->owners_more_fds = 0;
    skel->bss->owners_more_procs = 0;
    skel->bss->owners_nwant = (uint32_t)put;
    int fd = bpf_iter_create(bpf_link__fd(iter_lnk));
    found = fd < 0 ? -errno : owners_drain(fd, want, put, cb, arg, left);
    if (fd >= 0)
      close(fd);
    skel->bss->owners_nwant = 0;
    left->fds += skel->bss->owners_more_fds;
    left->procs += skel->bss->owners_more_procs;
  }
  for (size_t i = 0; i < put; i++)
    bpf_map_delete_elem(mfd, &want[i]);
  free(want);
  return found;
}
