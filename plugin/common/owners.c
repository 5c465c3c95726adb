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

int owners_parse(const void *buf, size_t len,
                 void (*cb)(const struct owner *o, void *arg), void *arg) {
  const char *p = buf, *end = p + len;
  /* Each inode once: the first process found holds it. */
  uint64_t *seen = NULL;
  size_t nseen = 0, cap = 0;
  int reported = 0;
  char path[OWNERS_DEPTH_MAX * OWNERS_NAME_MAX + 8];
  while (p < end) {
    struct owners_rec r;
    if ((size_t)(end - p) < sizeof(r))
      goto short_buf;
    memcpy(&r, p, sizeof(r));
    p += sizeof(r);
    if (r.depth > OWNERS_DEPTH_MAX ||
        (size_t)(end - p) < (size_t)OWNERS_DEPTH_MAX * OWNERS_NAME_MAX)
      goto short_buf;
    /* The names come leaf first: put them root first. */
    size_t o = 0;
    if (r.truncated)
      o += (size_t)snprintf(path, sizeof(path), "/...");
    for (int i = (int)r.depth - 1; i >= 0; i--) {
      const char *name = p + (size_t)i * OWNERS_NAME_MAX;
      size_t nl = strnlen(name, OWNERS_NAME_MAX - 1);
      path[o++] = '/';
      memcpy(path + o, name, nl);
      o += nl;
    }
    if (!o)
      path[o++] = '/';
    path[o] = 0;
    p += (size_t)OWNERS_DEPTH_MAX * OWNERS_NAME_MAX;
    bool dup = false;
    for (size_t i = 0; i < nseen && !dup; i++)
      dup = seen[i] == r.inode;
    if (dup)
      continue;
    if (nseen == cap) {
      size_t c = cap ? 2 * cap : 16;
      uint64_t *s = realloc(seen, c * sizeof(*s));
      if (!s) {
        free(seen);
        return -ENOMEM;
      }
      seen = s;
      cap = c;
    }
    seen[nseen++] = r.inode;
    struct owner ow = {.inode = r.inode,
                       .pid = (int32_t)r.tgid,
                       .ns_pid = (int32_t)r.ns_pid,
                       .pid_ns = r.pid_ns,
                       .cgroup = path};
    memcpy(ow.comm, r.comm, sizeof(r.comm));
    ow.comm[16] = 0; /* its bytes as they are: escaped where shown */
    cb(&ow, arg);
    reported++;
  }
  free(seen);
  return reported;
short_buf:
  free(seen);
  return -EINVAL;
}

int owners_find(const uint64_t *inodes, size_t n,
                void (*cb)(const struct owner *o, void *arg), void *arg) {
  if (!iter_lnk)
    return -ENOENT;
  if (n > OWNERS_WANT_MAX)
    n = OWNERS_WANT_MAX;
  int mfd = bpf_map__fd(skel->maps.owners_want);
  uint8_t one = 1;
  size_t put = 0;
  int err = 0;
  for (size_t i = 0; i < n; i++)
    if (inodes[i] && bpf_map_update_elem(mfd, &inodes[i], &one, BPF_ANY) == 0)
      put++;
  if (!put)
    return 0;
  skel->bss->owners_nwant = (uint32_t)put;
  char *buf = NULL;
  size_t have = 0, cap = 0;
  int fd = bpf_iter_create(bpf_link__fd(iter_lnk));
  if (fd < 0)
    err = -errno;
  while (!err) {
    if (cap - have < 65536) {
      size_t c = cap ? 2 * cap : 1 << 17;
      char *b = realloc(buf, c);
      if (!b) {
        err = -ENOMEM;
        break;
      }
      buf = b;
      cap = c;
    }
    ssize_t k = read(fd, buf + have, cap - have);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      err = -errno;
    if (k <= 0)
      break;
    have += (size_t)k;
  }
  if (fd >= 0)
    close(fd);
  skel->bss->owners_nwant = 0;
  for (size_t i = 0; i < n; i++)
    if (inodes[i])
      bpf_map_delete_elem(mfd, &inodes[i]);
  int found = err ? err : owners_parse(buf, have, cb, arg);
  free(buf);
  return found;
}
