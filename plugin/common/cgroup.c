// SPDX-License-Identifier: GPL-2.0-only
/* cgroup v2 for every feature of the ebpf plugin. See cgroup.h. */
#define _GNU_SOURCE 1 /* O_PATH */
#include "common/cgroup.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ root */

static char *cg2_root;
static bool cg2_looked, cg2_root_is_slash;
static bool warned_long; /* a cgroup path of PATH_MAX bytes or more */

/* Undo the octal escapes (\040 for a space) of /proc/self/mountinfo. */
static void unescape_mount(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
        p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
      *o++ = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
      p += 3;
    } else {
      *o++ = *p;
    }
  }
  *o = 0;
}

const char *cgroup2_root(void) {
  if (cg2_looked)
    return cg2_root;
  cg2_looked = true;
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return NULL;
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    /* id parent maj:min root mountpoint options [optional...] - fstype src */
    char *sep = strstr(line, " - ");
    if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
      continue;
    char *save = NULL, *tok = strtok_r(line, " ", &save);
    for (int i = 0; tok && i < 3; i++) /* to the mount's root */
      tok = strtok_r(NULL, " ", &save);
    if (!tok)
      continue;
    cg2_root_is_slash = strcmp(tok, "/") == 0;
    tok = strtok_r(NULL, " ", &save); /* the mount point */
    if (!tok)
      continue;
    unescape_mount(tok);
    cg2_root = strdup(tok);
    break;
  }
  fclose(f);
  return cg2_root;
}

/* The initial cgroup namespace has a fixed inode number (PROC_CGROUP_INIT_INO
 * in include/linux/proc_ns.h). */
bool cgroup2_is_whole(const char **why) {
  if (!cgroup2_root()) {
    *why = "no cgroup2 mount";
    return false;
  }
  if (!cg2_root_is_slash) {
    *why = "the cgroup2 mount is a subtree of the hierarchy";
    return false;
  }
  char ns[64];
  ssize_t n = readlink("/proc/self/ns/cgroup", ns, sizeof(ns) - 1);
  if (n < 0) {
    *why = "cannot read /proc/self/ns/cgroup";
    return false;
  }
  ns[n] = 0;
  if (strcmp(ns, "cgroup:[4026531835]") != 0) {
    *why = "collectd runs in a cgroup namespace of its own";
    return false;
  }
  *why = NULL;
  return true;
}

/* A backslash counts too: glob(3) reads it as an escape, so the path the
 * glob finds is not the string as written. */
bool cgroup_is_glob(const char *p) { return strpbrk(p, "*?[\\") != NULL; }

int cgroup_path_depth(const char *p) {
  int d = 0;
  while (*p) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    const char *e = strchr(p, '/');
    if (!e)
      e = p + strlen(p);
    if (!(e - p == 1 && *p == '.'))
      d++;
    p = e;
  }
  return d;
}

static int cg2_root_fd = -1;

/* fstatat() of a path below dfd of any length: the kernel refuses a path
 * of PATH_MAX bytes or more (ENAMETOOLONG), so a longer one is walked in
 * parts, each directory opened (O_PATH) below the last. */
static int stat_below(int dfd, const char *rel, struct stat *st) {
  int at = dfd;
  while (strlen(rel) >= PATH_MAX) {
    const char *cut = rel + PATH_MAX - 1;
    while (cut > rel && *cut != '/')
      cut--;
    char part[PATH_MAX];
    memcpy(part, rel, (size_t)(cut - rel));
    part[cut - rel] = 0;
    int fd = cut == rel ? -1
                        : openat(at, part,
                                 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (at != dfd)
      close(at);
    if (fd < 0)
      return -1;
    at = fd;
    rel = cut + 1;
  }
  int r = fstatat(at, *rel ? rel : ".", st, AT_SYMLINK_NOFOLLOW);
  if (at != dfd)
    close(at);
  return r;
}

uint64_t cgroup_id_of(const char *rel) {
  if (cg2_root_fd < 0) {
    const char *root = cgroup2_root();
    if (!root)
      return 0;
    cg2_root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg2_root_fd < 0)
      return 0;
  }
  while (*rel == '/')
    rel++;
  struct stat st;
  if (stat_below(cg2_root_fd, rel, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  return (uint64_t)st.st_ino;
}

bool cgroup_is(const char *rel, uint64_t id) {
  return id && cgroup_id_of(rel) == id;
}

void cgroup2_reset(void) {
  if (cg2_root_fd >= 0)
    close(cg2_root_fd);
  cg2_root_fd = -1;
  free(cg2_root);
  cg2_root = NULL;
  cg2_looked = cg2_root_is_slash = false;
  warned_long = false;
}

int cgroup2_glob(const char *pattern,
                 void (*cb)(const char *dir, const char *rel, void *arg),
                 void *arg) {
  const char *root = cgroup2_root();
  if (!root)
    return -1;
  size_t rootlen = strlen(root);
  while (*pattern == '/')
    pattern++;
  char full[4096];
  snprintf(full, sizeof(full), "%s/%s", root, pattern);
  glob_t gl = {0};
  int st = glob(full, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &gl);
  int n = 0;
  /* glob(3) may have allocated even when it fails (GLOB_NOMATCH,
   * GLOB_ABORTED, GLOB_NOSPACE): free after every call. */
  for (size_t k = 0; st == 0 && k < gl.gl_pathc; k++) {
    const char *rel = gl.gl_pathv[k] + rootlen;
    while (*rel == '/')
      rel++;
    if (*rel == 0)
      continue;
    cb(gl.gl_pathv[k], rel, arg);
    n++;
  }
  globfree(&gl);
  return n;
}

/* ---------------------------------------------------------------- config */

/* Below the root, not empty, no ".." component. */
static bool cgroup_path_ok(const char *p) {
  while (*p == '/')
    p++;
  if (*p == 0)
    return false;
  for (const char *s = p; *s; s++)
    if ((s == p || s[-1] == '/') && s[0] == '.' && s[1] == '.' &&
        (s[2] == '/' || s[2] == 0))
      return false;
  return true;
}

int cfg_cgroups_append(const oconfig_item_t *ci, char ***list, size_t *n) {
  size_t before = *n;
  if (cfg_strings_append(ci, list, n))
    return -1;
  int st = 0;
  for (size_t j = before; j < *n; j++)
    if (!cgroup_path_ok((*list)[j])) {
      E_ERROR("invalid value \"%s\" for option \"%s\" in block <%s>: "
              "expected a cgroup path or glob below the cgroup2 root, not "
              "empty and without \"..\", like \"system.slice/*\".",
              (*list)[j], ci->key, cfg_block_of(ci));
      st = -1;
    }
  return st;
}

void cgroup_name(const char *rel, char out[EBPF_NAME_LEN]) {
  while (*rel == '/')
    rel++;
  instance_from_path(*rel ? rel : "root", out);
}

/* ------------------------------------------------------------------ tree */

struct cgroup_node {
  uint64_t id;
  size_t off; /* of its path in text */
};

static int cmp_node(const void *a, const void *b) {
  return cmp_u64(&((const struct cgroup_node *)a)->id,
                 &((const struct cgroup_node *)b)->id);
}

static void tree_add(struct cgroup_tree *t, uint64_t id, const char *rel) {
  size_t len = strlen(rel) + 1;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct cgroup_node *v = realloc(t->node, cap * sizeof(*v));
    if (!v)
      return;
    t->node = v;
    t->cap = cap;
  }
  if (t->used + len > t->text_cap) {
    size_t cap = t->text_cap ? t->text_cap : 16384;
    while (t->used + len > cap)
      cap *= 2;
    char *s = realloc(t->text, cap);
    if (!s)
      return;
    t->text = s;
    t->text_cap = cap;
  }
  memcpy(t->text + t->used, rel, len);
  t->node[t->n++] = (struct cgroup_node){id, t->used};
  t->used += len;
}

/* The path of the walk, below the root: grown as deep as the tree goes.
 * A path of PATH_MAX bytes or more (cgroups nested under long names) is
 * kept whole, so that its name (by the hash of the whole path) is its own
 * and cgroup_id_of() finds it again; before, it was cut at 4,095 bytes,
 * where it matched nothing (a walk at every read) and every path below
 * shared the one cut name. */
struct walk_path {
  char *s;
  size_t cap;
};

static bool walk_path_put(struct walk_path *w, size_t at, const char *name) {
  size_t need = at + 1 + strlen(name) + 1;
  if (need > w->cap) {
    size_t cap = w->cap ? w->cap : 1024;
    while (cap < need)
      cap *= 2;
    char *s = realloc(w->s, cap);
    if (!s)
      return false;
    w->s = s;
    w->cap = cap;
  }
  snprintf(w->s + at, w->cap - at, "%s%s", at ? "/" : "", name);
  return true;
}

static void say_long(const char *rel) {
  if (warned_long)
    return;
  warned_long = true;
  char name[EBPF_NAME_LEN];
  cgroup_name(rel, name);
  E_WARNING("cgroup %s: its path is %zu bytes long, past PATH_MAX (%d): it is "
            "named by the hash of its whole path, and its files cannot be "
            "opened by path (said for the first such cgroup only).",
            name, strlen(rel), PATH_MAX);
}

/* Depth-first walk of the cgroup2 tree: directories only. */
static void tree_walk(struct cgroup_tree *t, int dfd, struct walk_path *w,
                      size_t len, int depth) {
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
        !walk_path_put(w, len, e->d_name))
      continue;
    int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      continue;
    size_t sublen = strlen(w->s + len) + len;
    if (sublen >= PATH_MAX)
      say_long(w->s);
    struct stat st;
    if (fstat(fd, &st) == 0)
      tree_add(t, (uint64_t)st.st_ino, w->s);
    if (depth < 64)
      tree_walk(t, fd, w, sublen, depth + 1);
    else
      close(fd);
  }
  closedir(d);
}

void cgroup_tree_refresh(struct cgroup_tree *t) {
  /* Keep the arrays: the walk runs every interval, and reusing them keeps
   * the heap from being cut up by thousands of small strings. */
  t->n = 0;
  t->used = 0;
  const char *root = cgroup2_root();
  if (!root)
    return;
  int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) == 0)
    tree_add(t, (uint64_t)st.st_ino, "");
  struct walk_path w = {0};
  tree_walk(t, fd, &w, 0, 0);
  free(w.s);
  qsort(t->node, t->n, sizeof(*t->node), cmp_node);
}

const char *cgroup_tree_path(const struct cgroup_tree *t, uint64_t id) {
  struct cgroup_node k = {.id = id};
  if (!t->n)
    return NULL;
  const struct cgroup_node *n =
      bsearch(&k, t->node, t->n, sizeof(*t->node), cmp_node);
  return n ? t->text + n->off : NULL;
}

bool cgroup_tree_name(struct cgroup_tree *t, uint64_t id, bool *refreshed,
                      char out[EBPF_NAME_LEN]) {
  if (!id || !cgroup2_root())
    return false;
  const char *rel = cgroup_tree_path(t, id);
  if (!rel && !*refreshed) {
    cgroup_tree_refresh(t);
    *refreshed = true;
    rel = cgroup_tree_path(t, id);
  }
  if (!rel)
    return false;
  cgroup_name(rel, out);
  return true;
}

void cgroup_tree_free(struct cgroup_tree *t) {
  free(t->node);
  free(t->text);
  memset(t, 0, sizeof(*t));
}

/* ----------------------------------------------------------- subtrees */

struct id_list {
  const struct cgroup_tree *t;
  uint64_t *ids;
  size_t n, cap;
};

/* Every known cgroup at or below rel. */
static void collect(const char *dir, const char *rel, void *arg) {
  struct id_list *l = arg;
  size_t rl = strlen(rel);
  for (size_t i = 0; i < l->t->n; i++) {
    const char *r = l->t->text + l->t->node[i].off;
    if (strncmp(r, rel, rl) != 0 || (r[rl] != 0 && r[rl] != '/'))
      continue;
    if (l->n == l->cap) {
      size_t cap = l->cap ? l->cap * 2 : 64;
      uint64_t *v = realloc(l->ids, cap * sizeof(*v));
      if (!v)
        return;
      l->ids = v;
      l->cap = cap;
    }
    l->ids[l->n++] = l->t->node[i].id;
  }
}

size_t cgroup_subtree_ids(const struct cgroup_tree *t, char *const *globs,
                          size_t nglobs, uint64_t **ids) {
  struct id_list l = {.t = t};
  for (size_t p = 0; p < nglobs; p++)
    cgroup2_glob(globs[p], collect, &l);
  if (l.n)
    qsort(l.ids, l.n, sizeof(*l.ids), cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < l.n; i++)
    if (u == 0 || l.ids[u - 1] != l.ids[i])
      l.ids[u++] = l.ids[i];
  *ids = l.ids;
  return u;
}

void cgroup_filter_sync(struct cgroup_filter *f, int map_fd, uint64_t *ids,
                        size_t n, size_t *added, size_t *removed,
                        size_t *failed) {
  __u8 one = 1;
  *added = *removed = *failed = 0;
  /* The entries of cgroups gone first: a full map of them would refuse
   * the cgroups made meanwhile for a whole interval (a tenant that makes
   * and removes cgroups kept everyone's new ones out). */
  for (size_t i = 0; i < f->n; i++)
    if (!n || !bsearch(&f->ids[i], ids, n, sizeof(*ids), cmp_u64))
      *removed += bpf_map_delete_elem(map_fd, &f->ids[i]) == 0;
  /* ids keeps its order; those that could not be inserted (a full map)
   * are left out, so that the next sync tries them again. */
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (f->n && bsearch(&ids[i], f->ids, f->n, sizeof(*ids), cmp_u64)) {
      ids[kept++] = ids[i];
    } else if (bpf_map_update_elem(map_fd, &ids[i], &one, BPF_ANY) == 0) {
      ids[kept++] = ids[i];
      (*added)++;
    } else {
      (*failed)++;
    }
  }
  free(f->ids);
  f->ids = ids;
  f->n = kept;
}

void cgroup_filter_free(struct cgroup_filter *f) {
  free(f->ids);
  f->ids = NULL;
  f->n = 0;
}
