// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's GroupBy: the group table read every interval (batched,
 * or one key at a time), GroupBy cgroup's slots added to it, each group
 * named by the naming rule (names two groups share told apart by their
 * paths' hashes), and each (hook, group)'s values dispatched against the
 * last read's. A group that is gone is deleted from the table. */
#include "netstacklat/internal.h"
#include "netstacklat.skel.h"
#include "core/testenv.h"

#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A (hook, group) entry of an interval: its key, its histogram summed
 * over the CPUs, its values' plugin_instance and BucketBounds counters.
 * The last read's are s->gprev, sorted by key. */
struct group_prev {
  struct nsl_group_key key;
  struct nsl_hist h;
  char inst[DATA_MAX_NAME_LEN]; /* "<hook>-<group>", made when named */
  uint64_t le[MAX_BOUNDS]; /* BucketBounds: events at or below, so far */
  bool other; /* counted in the group "other" (no name given) */
};

/* By group, then hook: a group's hooks are next to each other, so that it
 * is looked up and named once per read. */
static int cmp_gkey(const void *a, const void *b) {
  const struct nsl_group_key *x = a, *y = b;
  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  return x->hook < y->hook ? -1 : x->hook > y->hook;
}

/* A key and where it is in the batch read: sorted by cmp_gkey (the key
 * comes first, as in struct group_prev). */
struct gkey_at {
  struct nsl_group_key key;
  size_t at;
};
_Static_assert(offsetof(struct gkey_at, key) == 0 &&
                   offsetof(struct group_prev, key) == 0,
               "cmp_gkey reads the key at the start");

/* The group's name by the naming rule, and the hash of its path (for
 * names_unshare()); false when the group is gone. */
static bool group_name(struct nsl_state *s, const struct nsl_group_key *k,
                       char buf[EBPF_NAME_LEN], uint32_t *hash,
                       bool *refreshed) {
  if (s->cfg.groupby == NSL_GROUP_INTERFACE) {
    const struct nsl_if_group *g = nsl_ifnames_find(&s->ifnames, k->group);
    if (!g || g->gone)
      return false;
    memcpy(buf, g->name, EBPF_NAME_LEN);
    *hash = g->hash;
    return true;
  }
  /* The tree is walked again only when a group is not in it, or is no
   * longer where the tree says (gone, or moved): not every interval. */
  const char *rel = cgroup_tree_path(&s->cgroups, k->group);
  if (rel && !*refreshed && !cgroup_is(rel, k->group))
    rel = NULL;
  if (!rel && !*refreshed) {
    cgroup_tree_refresh(&s->cgroups);
    *refreshed = true;
    rel = cgroup_tree_path(&s->cgroups, k->group);
  }
  if (!rel)
    return false; /* the cgroup is gone */
  cgroup_name(rel, buf);
  *hash = path_hash(rel);
  return true;
}

/* A slot's row e: added to the hash's entry of its (hook, cgroup) among
 * the first n0 of cur, else a new entry cur[n] when it has any event.
 * Returns the new count. */
static size_t add_row(struct group_prev *cur, size_t n0, size_t n,
                      const struct group_prev *e) {
  struct group_prev *p = bsearch(e, cur, n0, sizeof(*cur), cmp_gkey);
  if (!p) {
    if (e->h.count == 0 && /* every timed event is counted */
        !memcmp(e->h.skipped, (struct nsl_hist){0}.skipped,
                sizeof(e->h.skipped)))
      return n; /* no event yet for this hook */
    cur[n] = *e;
    return n + 1;
  }
  for (int b = 0; b < NSL_NFINE; b++)
    p->h.bucket[b] += e->h.bucket[b];
  p->h.sum_ns += e->h.sum_ns;
  p->h.count += e->h.count;
  for (int r = 0; r < NSL_NSKIPS; r++)
    p->h.skipped[r] += e->h.skipped[r];
  return n;
}

/* Add the slots' counts to this interval's (hook, group) entries: a
 * (hook, cgroup) pair with an entry in the hash, or with any event in its
 * slot. *cur has room for n + the slots' rows. Returns the new count. */
static size_t cg_slots_merge(struct nsl_state *s, struct group_prev *cur,
                             size_t n) {
  int fd = bpf_map__fd(s->skel->maps.netstacklat_cgroup_slots);
  long long top = -1; /* the highest slot in use */
  for (size_t u = 0; u < s->cgslots.nused; u++)
    if ((long long)s->cgslots.used[u].slot > top)
      top = s->cgslots.used[u].slot;
  if (top < 0)
    return n;
  /* One batched read of the rows up to the highest slot in use (a lookup
   * per slot and hook cost ~3 us each: 0.5 ms for 50 cgroups x 3 hooks);
   * one lookup per row where batches are not supported. */
  __u32 want = (__u32)(top + 1) * s->nwanted_pos, got = 0;
  __u32 *keys = malloc(want * sizeof(*keys));
  size_t vbytes = (size_t)want * s->ncpus * sizeof(struct nsl_slot_hist);
  struct nsl_slot_hist *v =
      malloc(vbytes <= ((size_t)4 << 20) ? vbytes : s->ncpus * sizeof(*v));
  struct nsl_hist *per = calloc((size_t)s->ncpus, sizeof(*per));
  bool batched = false;
  /* Past 4 MiB of values (many slots on many CPUs) the rows are read one
   * by one rather than holding all of them at once. */
  if (keys && v && per && vbytes <= ((size_t)4 << 20)) {
    __u32 out_batch = 0, count = want;
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    int err = bpf_map_lookup_batch(fd, NULL, &out_batch, keys, v, &count, &bo);
    if (!err || errno == ENOENT) {
      batched = true;
      got = count;
    }
  }
  size_t n0 = n;
  for (long long i = 0; v && per && i <= top; i++) {
    if (!s->cgslots.slot[i].id)
      continue;
    for (__u32 h = 0; h < NSL_NHOOKS; h++) {
      if (!s->hooks[h].wanted || s->hooks[h].flavour < 0)
        continue;
      __u32 k = (__u32)i * s->nwanted_pos + s->hook_pos[h];
      const struct nsl_slot_hist *row;
      if (batched) {
        if (k >= got || keys[k] != k)
          continue;
        row = &v[(size_t)k * s->ncpus];
      } else {
        if (bpf_map_lookup_elem(fd, &k, v) != 0)
          continue;
        row = v;
      }
      for (int c = 0; c < s->ncpus; c++)
        per[c] = row[c].h;
      struct group_prev e = {
          .key = {.group = s->cgslots.slot[i].id, .hook = h}};
      nsl_sum_cpus(s->ncpus, per, &e.h);
      n = add_row(cur, n0, n, &e);
    }
  }
  free(keys);
  free(v);
  free(per);
  if (n != n0)
    qsort(cur, n, sizeof(*cur), cmp_gkey);
  return n;
}

/* cur->inst: "<hook>-<gname>", kept from the previous interval's p while
 * the group keeps its name (gname, from group_name()), else made again. */
static void group_inst(struct group_prev *cur, const struct group_prev *p,
                       const char *gname) {
  const char *hook = nsl_hook_names[cur->key.hook];
  size_t hl = strlen(hook);
  /* The kept name is "<hook>-" + gname: compare instead of formatting. */
  if (p && p->inst[0] && !strncmp(p->inst + hl + 1, gname, EBPF_NAME_LEN)) {
    memcpy(cur->inst, p->inst, sizeof(cur->inst));
    return;
  }
  snprintf(cur->inst, sizeof(cur->inst), "%s-%s", hook, gname);
}

/* The group table one key at a time (bpf_map_get_next_key and a lookup
 * each): for a kernel or map where batched lookups fail. Returns the
 * number of entries read into *keys and *vals (grown as needed), or -1. */
static ssize_t read_grouped_keys(const struct bpf_map *map, int fd,
                                 struct nsl_group_key **keys,
                                 struct nsl_hist **vals, size_t *cap,
                                 size_t vsize) {
  size_t n = 0, max = bpf_map__max_entries(map);
  struct nsl_group_key k, next;
  bool first = true;
  while (bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0 && n <= max) {
    first = false;
    k = next;
    if (n == *cap) {
      struct nsl_group_key *k2 = realloc(*keys, 2 * *cap * sizeof(**keys));
      if (!k2)
        return -1;
      *keys = k2;
      struct nsl_hist *v2 = realloc(*vals, 2 * *cap * vsize);
      if (!v2)
        return -1;
      *vals = v2;
      *cap *= 2;
    }
    if (bpf_map_lookup_elem(fd, &next, (char *)*vals + n * vsize) == 0)
      (*keys)[n++] = next; /* else deleted meanwhile */
  }
  return (ssize_t)n;
}

/* The group table into *keys and *vals (grown as needed; the caller frees
 * them): batched, one key at a time where that fails (any error but the
 * end of the map or a bucket bigger than the room left). Returns the
 * number of entries, or -1 when both fail: this interval's grouped values
 * are then left out and the last ones kept as they are, so that the next
 * interval's counters go on from them (a group read only in part would go
 * backwards). */
static ssize_t read_table(const struct nsl_state *s, int fd, size_t vsize,
                          struct nsl_group_key **keys, struct nsl_hist **vals) {
  size_t cap = 256, n = 0;
  *keys = malloc(cap * sizeof(**keys));
  *vals = malloc(cap * vsize);
  if (!*keys || !*vals)
    return -1;
  __u32 out_batch = 0;
  bool first = true, grow = false;
  static bool warned_batch;
  bool batch = !test_switch(TEST_NO_BATCH);
  if (!batch && !warned_batch)
    E_INFO("netstacklat: EBPF_TEST_NO_BATCH: reading the group table one "
           "key at a time.");
  warned_batch = warned_batch || !batch;
  for (;;) {
    if (!batch) {
      ssize_t r = read_grouped_keys(s->skel->maps.netstacklat_grouped_seconds,
                                    fd, keys, vals, &cap, vsize);
      if (r < 0)
        E_WARNING("netstacklat: reading the grouped histograms failed: %s; "
                  "this interval's grouped values are left out.",
                  ERRSTR(errno));
      return r;
    }
    if (n == cap || grow) {
      cap *= 2;
      grow = false;
      struct nsl_group_key *k2 = realloc(*keys, cap * sizeof(**keys));
      if (!k2)
        return -1;
      *keys = k2;
      struct nsl_hist *v2 = realloc(*vals, cap * vsize);
      if (!v2)
        return -1;
      *vals = v2;
    }
    __u32 count = (__u32)(cap - n);
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    int err =
        bpf_map_lookup_batch(fd, first ? NULL : &out_batch, &out_batch,
                             *keys + n, (char *)*vals + n * vsize, &count, &bo);
    first = false;
    n += count;
    if (!err)
      continue;
    if (errno == ENOENT)
      break; /* end of map */
    if (errno == ENOSPC) { /* a hash bucket bigger than the room left */
      grow = true;
      continue;
    }
    if (!warned_batch)
      E_INFO("netstacklat: batched lookups of the group table failed (%s): "
             "reading it one key at a time.",
             ERRSTR(errno));
    warned_batch = true;
    batch = false;
    n = 0;
  }
  return (ssize_t)n;
}

/* The n entries read, summed over the CPUs and sorted by key, with room
 * after them for the slots' rows (GroupBy cgroup); NULL when out of
 * memory. */
static struct group_prev *sorted_entries(const struct nsl_state *s,
                                         const struct nsl_group_key *keys,
                                         const struct nsl_hist *vals, size_t n,
                                         size_t vsize) {
  bool slots = s->cgslots.slot != NULL;
  size_t room = n + (slots ? s->cgslots.nused * NSL_NHOOKS : 0);
  struct group_prev *cur = calloc(room ? room : 1, sizeof(*cur));
  /* Sort (key, index) pairs, not the ~400-byte entries. */
  struct gkey_at *order = malloc((n ? n : 1) * sizeof(*order));
  if (!cur || !order) {
    free(cur);
    free(order);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    order[i] = (struct gkey_at){keys[i], i};
  qsort(order, n, sizeof(*order), cmp_gkey);
  for (size_t i = 0; i < n; i++) {
    cur[i].key = order[i].key;
    nsl_sum_cpus(
        s->ncpus,
        (const struct nsl_hist *)((const char *)vals + order[i].at * vsize),
        &cur[i].h);
  }
  free(order);
  return cur;
}

/* A group's name, or that it is gone. */
struct gname_of {
  char name[EBPF_NAME_LEN];
  bool named; /* false: the group is gone */
  bool other; /* counted in the group "other" */
};

/* The last read's first entry of a group, or NULL. */
static const struct group_prev *prev_of_group(const struct nsl_state *s,
                                              uint64_t group) {
  size_t lo = 0, hi = s->ngprev;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->gprev[mid].key.group < group)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->ngprev && s->gprev[lo].key.group == group ? &s->gprev[lo]
                                                           : NULL;
}

/* After the names are unshared: "other" is the group of the rest, so a
 * cgroup or interface of that name is other_<hash>; a group new since the
 * last read asks NewGroupsPerHour for its name, and one refused is counted
 * in "other" while it lives. */
static void admit_groups(struct nsl_state *s, const struct group_prev *cur,
                         size_t n, struct gname_of *gs, const uint32_t *hash) {
  for (size_t i = 0, g = 0; i < n; i++) {
    if (i && cur[i].key.group == cur[i - 1].key.group)
      continue;
    struct gname_of *o = &gs[g];
    uint32_t h = hash[g++];
    if (!o->named || o->other)
      continue;
    if (!strcmp(o->name, "other"))
      snprintf(o->name, sizeof(o->name), "other_%08x", h);
    const struct group_prev *p = prev_of_group(s, cur[i].key.group);
    o->other = p ? p->other : !newnames_admit(&s->names, o->name);
  }
  if (s->names.refused != s->names.refused_said)
    E_INFO("netstacklat: %llu new groups so far were refused a name "
           "(NewGroupsPerHour %u, %u a read); their events are counted in "
           "the group \"other\" (<hook>-other).",
           (unsigned long long)s->names.refused, s->names.per_hour,
           s->names.per_read);
  s->names.refused_said = s->names.refused;
}

/* The names of the groups of cur[0..n) (sorted: a group's entries are
 * next to each other), one per group in that order; NULL when out of
 * memory. Every group is named before any is dispatched: two groups that
 * the naming rule names alike (foo-bar.service and foo_bar.service; with
 * NetworkNamespace "all", namespace x's eth0 and an interface x_eth0) are
 * told apart by the hashes of their paths (names_unshare()). */
static struct gname_of *name_groups(struct nsl_state *s,
                                    const struct group_prev *cur, size_t n) {
  size_t ng = 0;
  for (size_t i = 0; i < n; i++)
    ng += i == 0 || cur[i].key.group != cur[i - 1].key.group;
  struct gname_of *gs = malloc((ng ? ng : 1) * sizeof(*gs));
  struct name_use *gu = malloc((ng ? ng : 1) * sizeof(*gu));
  if (!gs || !gu) {
    free(gs);
    free(gu);
    return NULL;
  }
  uint32_t *hash = calloc(ng ? ng : 1, sizeof(*hash));
  if (!hash) {
    free(gs);
    free(gu);
    return NULL;
  }
  bool refreshed = false;
  size_t nu = 0;
  for (size_t i = 0, g = 0; i < n; i++) {
    if (i && cur[i].key.group == cur[i - 1].key.group)
      continue;
    gs[g].other = cur[i].key.group == NSL_GROUP_OTHER;
    gs[g].named = gs[g].other ||
                  group_name(s, &cur[i].key, gs[g].name, &hash[g], &refreshed);
    if (gs[g].named && !gs[g].other)
      gu[nu++] = (struct name_use){gs[g].name, hash[g]};
    g++;
  }
  size_t shared = names_unshare(gu, nu);
  admit_groups(s, cur, n, gs, hash);
  free(hash);
  if (shared != s->groups_shared) {
    if (shared)
      E_INFO("netstacklat: %zu groups have a name that the naming rule "
             "gives to another group too: each of them is named "
             "<name>_<hash of its path> while they share it.",
             shared);
    else
      E_INFO("netstacklat: no two groups share a name any more.");
    s->groups_shared = shared;
  }
  free(gu);
  return gs;
}

/* Each (hook, group) of cur[0..n) with a name: its values against the
 * last read's, kept at the start of cur for the next read (still sorted).
 * A group that is gone is deleted from the table (fd) and its slot freed.
 * Returns the number kept. */
static size_t dispatch_groups(struct nsl_state *s, int fd,
                              struct group_prev *cur, size_t n,
                              const struct gname_of *gs, double elapsed) {
  bool slots = s->cgslots.slot != NULL;
  size_t kept = 0;
  const char *gname = NULL;
  bool named = false; /* gname is cur[i]'s group's, when it has one */
  bool other = false;
  for (size_t i = 0, g = 0; i < n; i++) {
    if (i == 0 || cur[i].key.group != cur[i - 1].key.group) {
      named = gs[g].named;
      other = gs[g].other;
      gname = gs[g].name;
      g++;
    }
    if (cur[i].key.hook >= NSL_NHOOKS)
      continue;
    struct group_prev *p =
        bsearch(&cur[i], s->gprev, s->ngprev, sizeof(*s->gprev), cmp_gkey);
    if (!named) {
      /* The group is gone: its last events to "other", its slot freed for
       * new groups, and its counters forgotten (a group made again later
       * starts from zero). */
      nsl_other_gone(s, fd, &cur[i].key, &cur[i].h, p ? &p->h : NULL);
      continue;
    }
    if (other) {
      nsl_other_add(s, cur[i].key.hook, &cur[i].h, p ? &p->h : NULL);
      cur[i].other = true;
      cur[kept++] = cur[i];
      continue;
    }
    /* A cgroup still known by its path: a slot for its events. */
    if (slots && cgroup_tree_path(&s->cgroups, cur[i].key.group))
      nsl_slot_give(&s->cgslots, cur[i].key.group);
    group_inst(&cur[i], p, gname);
    static const struct nsl_hist zero;
    value_list_t vl;
    vl_prepare(&vl, FEATURE, cur[i].inst);
    if (p && p->inst[0] && strcmp(p->inst, cur[i].inst))
      series_renamed(&vl); /* its counters go on under the new name */
    if (p)
      memcpy(cur[i].le, p->le, sizeof(cur[i].le));
    nsl_dispatch(s, cur[i].key.hook, &vl, &cur[i].h, p ? &p->h : &zero, elapsed,
                 cur[i].le);
    cur[kept++] = cur[i]; /* still sorted */
  }
  return kept;
}

void nsl_read_grouped(struct nsl_state *s, double elapsed) {
  struct timespec now_ts;
  double now = now_mono(&now_ts);
  nsl_slots_tick(&s->cgslots, now);
  newnames_tick(&s->names, now);
  int fd = bpf_map__fd(s->skel->maps.netstacklat_grouped_seconds);
  size_t vsize = sizeof(struct nsl_hist) * (size_t)s->ncpus;
  struct nsl_group_key *keys = NULL;
  struct nsl_hist *vals = NULL;
  ssize_t got = read_table(s, fd, vsize, &keys, &vals);
  struct group_prev *cur =
      got < 0 ? NULL : sorted_entries(s, keys, vals, (size_t)got, vsize);
  free(keys);
  free(vals);
  if (!cur)
    return;
  size_t n = (size_t)got;
  if (s->cgslots.slot)
    n = cg_slots_merge(s, cur, n);
  if (s->cfg.groupby == NSL_GROUP_INTERFACE) {
    uint64_t *groups = malloc((n ? n : 1) * sizeof(*groups));
    for (size_t i = 0; groups && i < n; i++)
      groups[i] = cur[i].key.group;
    nsl_ifnames_refresh(&s->ifnames, groups, groups ? n : 0);
    free(groups);
  }
  struct gname_of *gs = name_groups(s, cur, n);
  if (!gs) {
    free(cur);
    return;
  }
  size_t kept = dispatch_groups(s, fd, cur, n, gs, elapsed);
  nsl_other_dispatch(s, elapsed);
  nsl_other_waiting(s);
  free(gs);
  free(s->gprev);
  s->gprev = cur;
  s->ngprev = kept;
}
