// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's Cgroup filter, user space's side (see cgfilter.h). */
#include "netstacklat/cgfilter.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void nsl_cgf_init(struct nsl_cgfilter *f, char *const *paths, size_t n,
                  bool anc, bool storage, bool hash) {
  *f = (struct nsl_cgfilter){.paths = paths,
                             .npaths = n,
                             .anc = anc,
                             .storage = storage,
                             .hash = hash,
                             .state_fd = -1,
                             .hash_fd = -1};
  size_t m = anc && n < NSL_CG_ANC_MAX ? n : anc ? NSL_CG_ANC_MAX : 0;
  for (size_t k = 0; k < m; k++)
    f->anc_path[k] = k;
  for (size_t k = 1; k < m; k++) /* by depth, deepest first; stable */
    for (size_t j = k; j > 0 && cgroup_path_depth(paths[f->anc_path[j]]) >
                                    cgroup_path_depth(paths[f->anc_path[j - 1]]);
         j--) {
      size_t t = f->anc_path[j];
      f->anc_path[j] = f->anc_path[j - 1];
      f->anc_path[j - 1] = t;
    }
}

static size_t anc_refresh(struct nsl_cgfilter *f, bool log_changes);

void nsl_cgf_opened(struct nsl_cgfilter *f, __u32 levels[NSL_CG_ANC_MAX],
                    __u32 *gen, __u64 *anc_id) {
  f->gen = gen;
  f->anc_id = anc_id;
  memset(f->anc_ids, 0, sizeof(f->anc_ids));
  if (!f->anc)
    return;
  for (size_t k = 0; k < f->npaths && k < NSL_CG_ANC_MAX; k++)
    levels[k] = (__u32)cgroup_path_depth(f->paths[f->anc_path[k]]);
  anc_refresh(f, false);
}

void nsl_cgf_loaded(struct nsl_cgfilter *f, __u32 *gen, __u64 *anc_id,
                    int state_fd, int hash_fd, uint32_t hash_size) {
  f->gen = gen;
  f->anc_id = anc_id;
  f->state_fd = state_fd;
  f->hash_fd = hash_fd;
  f->hash_size = hash_size;
}

/* Cgroup storage: write the state of one cgroup (its mark), through its
 * directory. The kernel's derived decision is reset by it. */
static int state_write(const struct nsl_cgfilter *f, const char *dir,
                       uint64_t id) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return -errno;
  struct nsl_cg_state v = {0};
  v.mark = f->marks.n && bsearch(&id, f->marks.ids, f->marks.n,
                                 sizeof(*f->marks.ids), cmp_u64) != NULL;
  int err = bpf_map_update_elem(f->state_fd, &dfd, &v, BPF_ANY);
  err = err ? -errno : 0;
  close(dfd);
  return err;
}

struct glob_hit {
  uint64_t id;
  char *dir;
};
struct glob_hits {
  struct glob_hit *v;
  size_t n, cap;
};

static void glob_hit(const char *dir, const char *rel, void *arg) {
  (void)rel;
  struct glob_hits *h = arg;
  struct stat st;
  if (stat(dir, &st) != 0)
    return;
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 16;
    struct glob_hit *v = realloc(h->v, cap * sizeof(*v));
    if (!v)
      return;
    h->v = v;
    h->cap = cap;
  }
  char *d = strdup(dir);
  if (d)
    h->v[h->n++] = (struct glob_hit){(uint64_t)st.st_ino, d};
}

/* Cgroup storage: mark the configured cgroups (the directories the Cgroup
 * globs match now), unmark the ones no longer matched, and when anything
 * changed make the kernel decide the cgroups below them again. Only the
 * globs are expanded: the cgroups below are the kernel's business.
 * Returns how many are marked. */
static size_t marks_refresh(struct nsl_cgfilter *f, bool log_changes) {
  struct glob_hits h = {0};
  for (size_t p = 0; p < f->npaths; p++)
    cgroup2_glob(f->paths[p], glob_hit, &h);
  uint64_t *ids = malloc((h.n ? h.n : 1) * sizeof(*ids));
  if (!ids)
    goto out;
  size_t n = 0;
  for (size_t i = 0; i < h.n; i++)
    ids[n++] = h.v[i].id;
  qsort(ids, n, sizeof(*ids), cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || ids[u - 1] != ids[i])
      ids[u++] = ids[i];
  n = u;
  struct cgroup_filter old = f->marks;
  f->marks = (struct cgroup_filter){ids, n};
  size_t added = 0, removed = 0;
  for (size_t i = 0; i < h.n; i++)
    if (!old.n || !bsearch(&h.v[i].id, old.ids, old.n, sizeof(*old.ids),
                           cmp_u64)) {
      int err = state_write(f, h.v[i].dir, h.v[i].id);
      if (err)
        E_WARNING("netstacklat: cannot mark cgroup %s for the Cgroup "
                  "filter: %s",
                  h.v[i].dir, ERRSTR(err));
      added++;
    }
  /* A cgroup no longer matched was removed (its storage went with it):
   * nothing to write. (One renamed away keeps its mark.) */
  for (size_t i = 0; i < old.n; i++)
    if (!n || !bsearch(&old.ids[i], ids, n, sizeof(*ids), cmp_u64))
      removed++;
  free(old.ids);
  if ((added || removed) && f->gen)
    __atomic_add_fetch(f->gen, 1, __ATOMIC_RELEASE);
  if (log_changes && (added || removed))
    E_INFO("netstacklat: cgroup filter now marks %zu configured cgroups (%zu "
           "new, %zu gone); the kernel decides the cgroups below them.",
           n, added, removed);
out:
  for (size_t i = 0; i < h.n; i++)
    free(h.v[i].dir);
  free(h.v);
  return f->marks.n;
}

/* Ancestors way: the id of each configured path now (0: none), written
 * to the kernel when it changed (a path removed and made again keeps its
 * level, with a new id). Returns how many exist. */
static size_t anc_refresh(struct nsl_cgfilter *f, bool log_changes) {
  size_t n = 0, added = 0, removed = 0;
  for (size_t k = 0; k < f->npaths && k < NSL_CG_ANC_MAX; k++) {
    uint64_t id = cgroup_id_of(f->paths[f->anc_path[k]]);
    n += id != 0;
    if (id == f->anc_ids[k])
      continue;
    added += id != 0;
    removed += f->anc_ids[k] != 0;
    f->anc_ids[k] = id;
    if (f->anc_id)
      __atomic_store_n(&f->anc_id[k], id, __ATOMIC_RELEASE);
  }
  if (log_changes && (added || removed))
    E_INFO("netstacklat: cgroup filter now compares %zu configured cgroups "
           "(%zu new, %zu gone) with each socket cgroup's ancestors.",
           n, added, removed);
  return n;
}

size_t nsl_cgf_refresh(struct nsl_cgfilter *f, const struct cgroup_tree *tree,
                       bool log_changes) {
  if (!cgroup2_root())
    return 0;
  size_t marked = f->storage ? marks_refresh(f, log_changes)
                  : f->anc   ? anc_refresh(f, log_changes)
                             : 0;
  if (!f->hash)
    return marked;
  uint64_t *ids;
  size_t n = cgroup_subtree_ids(tree, f->paths, f->npaths, &ids);
  size_t added, removed, failed;
  cgroup_filter_sync(&f->in_map, f->hash_fd, ids, n, &added, &removed,
                     &failed);
  if (log_changes && (added || removed))
    E_INFO("netstacklat: cgroup filter now matches %zu cgroups (%zu new, "
           "%zu gone).",
           n, added, removed);
  /* Said when the number changes, not every interval. */
  if (!failed && f->failed_said)
    E_INFO("netstacklat: every matching cgroup is in the cgroup filter's "
           "map again (%zu).",
           n);
  else if (failed != f->failed_said)
    E_WARNING("netstacklat: the cgroup filter's map (%u entries) is full: "
              "%zu of %zu matching cgroups are not in it, and their packets "
              "are not counted (tried again every interval, as cgroups go).",
              f->hash_size, failed, n);
  f->failed_said = failed;
  return n;
}

void nsl_cgf_free(struct nsl_cgfilter *f) {
  cgroup_filter_free(&f->marks);
  cgroup_filter_free(&f->in_map);
  *f = (struct nsl_cgfilter){.state_fd = -1, .hash_fd = -1};
}
