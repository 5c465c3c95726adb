// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's Cgroup filter, user space's side: it keeps what the BPF
 * programs compare a socket's cgroup with in step with the cgroups that
 * exist now. Three ways, chosen by netstacklat_init():
 * - ancestors: a few configured paths without globs; the id at each path
 *   (a path removed and made again has a new id) is written to the
 *   programs' anc_id[], whose k-th entry is the configured path at
 *   anc_path[k] (deepest first: the kernel walks up from the socket's
 *   cgroup);
 * - storage (kernel >= 6.2): the cgroups the globs match now are marked in
 *   cgroup storage; the kernel decides the cgroups below them, again when
 *   the generation counter moves;
 * - hash: every matching cgroup and every cgroup below it in a hash map
 *   (kept as well when a socket hook runs as a kprobe).
 * The Cgroup paths and the cgroup tree are the caller's. */
#ifndef EBPF_NSL_CGFILTER_H
#define EBPF_NSL_CGFILTER_H

#include "common/cgroup.h"
#include "netstacklat/netstacklat.h"

#include <linux/types.h>

struct nsl_cgfilter {
  char *const *paths; /* the Cgroup values */
  size_t npaths;
  bool anc, storage, hash; /* the ways in use */
  /* The ancestors way: the ids last written (0: no cgroup at the path). */
  size_t anc_path[NSL_CG_ANC_MAX];
  uint64_t anc_ids[NSL_CG_ANC_MAX];
  /* The storage way: the cgroups marked now. */
  struct cgroup_filter marks;
  /* The hash way: what is in the map. */
  struct cgroup_filter in_map;
  size_t failed_said; /* ids the full map refused, as last said */
  /* Bound to the BPF object (nsl_cgf_opened(), nsl_cgf_loaded()): */
  int state_fd, hash_fd;
  uint32_t hash_size;
  __u32 *gen;    /* the programs' cg_filter_gen */
  __u64 *anc_id; /* the programs' anc_id[NSL_CG_ANC_MAX] */
};

/* Start with the configured paths (kept, not copied) and the ways chosen;
 * with the ancestors way the paths are ordered deepest first. */
void nsl_cgf_init(struct nsl_cgfilter *f, char *const *paths, size_t n,
                  bool anc, bool storage, bool hash);
/* A BPF object was opened (not loaded): its variables start at zero. Give
 * it the level of each ancestor (levels[k] for anc_path[k]) and, with the
 * ancestors way, the ids there now (in force from the first event). */
void nsl_cgf_opened(struct nsl_cgfilter *f, __u32 levels[NSL_CG_ANC_MAX],
                    __u32 *gen, __u64 *anc_id);
/* It is loaded: its variables (mapped now) and maps. */
void nsl_cgf_loaded(struct nsl_cgfilter *f, __u32 *gen, __u64 *anc_id,
                    int state_fd, int hash_fd, uint32_t hash_size);
/* Follow the cgroups that exist now (tree: walked by the caller, used by
 * the hash way), logging what changed when log_changes. Returns how many
 * cgroups are selected: marked, existing at a path, or in the map. */
size_t nsl_cgf_refresh(struct nsl_cgfilter *f, const struct cgroup_tree *tree,
                       bool log_changes);
void nsl_cgf_free(struct nsl_cgfilter *f);

#endif
