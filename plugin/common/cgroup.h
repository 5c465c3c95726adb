// SPDX-License-Identifier: GPL-2.0-only
/* cgroup v2, once for every feature: where the hierarchy is mounted, the
 * Cgroup options (check, glob expansion, subtree), the id -> path table of
 * the whole tree (on cgroup2 a cgroup's id is its directory's inode number)
 * and a group's name. Used by pressure (PSI of cgroups) and netstacklat
 * (Cgroup filter, GroupBy cgroup). */
#ifndef EBPF_CGROUP_H
#define EBPF_CGROUP_H

#include "core/base.h"

/* Mount point of the cgroup2 hierarchy, from /proc/self/mountinfo; NULL
 * when there is none. The string is owned by the plugin. */
const char *cgroup2_root(void);
void cgroup2_reset(void);

/* Is the cgroup2 mount the whole hierarchy, so that a path's depth below
 * it is the cgroup's level in the kernel (struct cgroup's level)? True in
 * the initial cgroup namespace with the mount's root "/"; *why says what
 * is not so otherwise. */
bool cgroup2_is_whole(const char **why);
/* Does a Cgroup value use glob characters (* ? [)? */
bool cgroup_is_glob(const char *p);
/* The depth of a path below the root: its components, "." not counted
 * ("a/b" is 2; the cgroup's level when cgroup2_is_whole()). */
int cgroup_path_depth(const char *p);

/* Expand a glob below the cgroup2 root (leading '/' ignored) and call cb
 * for every matching directory with its path and its path below the root
 * (never empty: the root itself is skipped). Returns the number of
 * matches, or -1 when there is no cgroup2 mount. */
int cgroup2_glob(const char *pattern,
                 void (*cb)(const char *dir, const char *rel, void *arg),
                 void *arg);

/* Append the values of a Cgroup option (paths or globs below the cgroup2
 * root) to *list, refusing an empty path and any ".." component with an
 * ERROR that names the key and its block. Returns 0 or -1. */
int cfg_cgroups_append(const oconfig_item_t *ci, char ***list, size_t *n);

/* The group part of an instance for a cgroup path below the root: "root"
 * for the root itself, else the naming rule of instance_from_path(). */
void cgroup_name(const char *rel, char out[EBPF_NAME_LEN]);

/* id -> path below the root of every cgroup, sorted by id. */
struct cgroup_tree {
  struct cgroup_node *node;
  size_t n, cap;
  char *text; /* the paths, NUL-separated, reused between walks */
  size_t used, text_cap;
};
/* Walk the hierarchy again (a few µs per cgroup). */
void cgroup_tree_refresh(struct cgroup_tree *t);
/* Path below the root ("" for the root), or NULL when id is not known. */
const char *cgroup_tree_path(const struct cgroup_tree *t, uint64_t id);
void cgroup_tree_free(struct cgroup_tree *t);
/* The name of the cgroup with this id (cgroup_name() of its path) for a
 * notification: the tree is walked again on a miss, at most once per read
 * (*refreshed, reset by the caller at each read). False when the id is
 * not found, or there is no cgroup2 mount. */
bool cgroup_tree_name(struct cgroup_tree *t, uint64_t id, bool *refreshed,
                      char out[EBPF_NAME_LEN]);
/* Is the cgroup at rel (below the root) still the one with this id? One
 * fstatat(2): cheaper than walking the tree again to see that a known
 * cgroup is still there under the same path. */
bool cgroup_is(const char *rel, uint64_t id);
/* The id (inode number) of the cgroup at rel below the cgroup2 root
 * (leading '/' ignored), or 0 when there is none. */
uint64_t cgroup_id_of(const char *rel);

/* Subtree semantics of a Cgroup filter: the ids of every cgroup a glob
 * matches and of every cgroup below it, sorted and unique, in a malloc'd
 * array (*ids, NULL when none). Returns the count. */
size_t cgroup_subtree_ids(const struct cgroup_tree *t, char *const *globs,
                          size_t nglobs, uint64_t **ids);

/* The ids in a BPF hash map {u64 cgroup id -> u8}, kept in step with a new
 * sorted set: deletes the gone ones, then adds the new ones. Takes ownership of
 * ids. An id the map refused (full) is not kept as in it: *failed counts
 * them, and the next sync tries them again. */
struct cgroup_filter {
  uint64_t *ids;
  size_t n;
};
void cgroup_filter_sync(struct cgroup_filter *f, int map_fd, uint64_t *ids,
                        size_t n, size_t *added, size_t *removed,
                        size_t *failed);
void cgroup_filter_free(struct cgroup_filter *f);

#endif
