// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's GroupBy: the group table read every interval (batched,
 * or one key at a time), GroupBy cgroup's slots added to it, each group
 * named by the naming rule (names two groups share told apart by their
 * paths' hashes), and each (hook, group)'s values dispatched against the
 * last read's. A group that is gone is deleted from the table. */
#include "netstacklat/groups.h"
#include "netstacklat/internal.h"
#include "rx.skel.h"
#include "core/testenv.h"

#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The values of a GroupBy map are read this many bytes at a time at most
 * (a batch of entries, each summed over its stripes as it comes): a read
 * holds one batch and the sums, not the whole map (with per-CPU values it
 * held 1,680 bytes x possible CPUs per entry: 385 MB at 256 CPUs for
 * MaxGroups 128 and 7 hooks). */
#define READ_BATCH_BYTES ((size_t)4 << 20)

/* Entries of a batch for values of vsize bytes: at least 1. */
static __u32 batch_entries(size_t vsize) {
  size_t n = READ_BATCH_BYTES / vsize;
  return n ? (__u32)n : 1;
}

/* *buf with room for want bytes (*size: its room), grown, never shrunk.
 * Returns 0, or -1 when out of memory. */
static int grow(void **buf, size_t *size, size_t want) {
  if (want <= *size)
    return 0;
  void *p = realloc(*buf, want);
  if (!p)
    return -1;
  *buf = p;
  *size = want;
  return 0;
}

/* Room for per entries of keys of ksize and values of vsize bytes in
 * the state's batch buffers, which stay from read to read (at most
 * READ_BATCH_BYTES of values but for a hash bucket bigger than that).
 * Returns 0, or -1 when out of memory. */
static int batch_room(struct nsl_state *s, __u32 per, size_t ksize,
                      size_t vsize) {
  return grow(&s->batch_keys, &s->batch_keys_size, (size_t)per * ksize) ||
                 grow(&s->batch_vals, &s->batch_vals_size, (size_t)per * vsize)
             ? -1
             : 0;
}

/* A slot's row k, summed over its stripes: added to this interval's
 * entries (add_row()) when its slot is in use and its hook loaded. */
static size_t slot_row(struct nsl_state *s, struct group_prev *cur, size_t n0,
                       size_t n, __u32 k, const struct nsl_stripe *row,
                       const int *hook_at, long long top) {
  long long i = k / s->nwanted_pos;
  int h = hook_at[k % s->nwanted_pos];
  if (i > top || h < 0 || !s->cgslots.slot[i].id)
    return n;
  struct group_prev e = {.key = {.group = s->cgslots.slot[i].id, .hook = h}};
  nsl_sum_stripes(s->stripes, row, &e.h);
  return add_row(cur, n0, n, &e);
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
  int hook_at[NSL_NHOOKS]; /* the hook of each row of a slot, or -1 */
  for (int p = 0; p < NSL_NHOOKS; p++)
    hook_at[p] = -1;
  for (int h = 0; h < NSL_NHOOKS; h++)
    if (s->hooks[h].wanted && s->hooks[h].flavour >= 0)
      hook_at[s->hook_pos[h]] = h;
  /* Batched reads of the rows up to the highest slot in use (a lookup per
   * slot and hook cost ~3 us each: 0.5 ms for 50 cgroups x 3 hooks), a
   * batch at a time; one lookup per row where batches are not supported. */
  size_t vsize = (size_t)s->stripes * sizeof(struct nsl_stripe);
  __u32 want = (__u32)(top + 1) * s->nwanted_pos, per = batch_entries(vsize);
  bool room = batch_room(s, per, sizeof(__u32), vsize) == 0;
  __u32 *keys = room ? s->batch_keys : NULL;
  struct nsl_stripe *v = room ? s->batch_vals : NULL;
  size_t n0 = n;
  __u32 done = 0, token = 0;
  bool first = true, batched = room;
  while (batched && done < want) {
    __u32 count = per;
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    int err = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys, v,
                                   &count, &bo);
    if (err && errno != ENOENT) {
      batched = done > 0; /* rows read so far are kept; the rest below */
      break;
    }
    first = false;
    for (__u32 j = 0; j < count && keys[j] < want; j++)
      n = slot_row(s, cur, n0, n, keys[j], (const struct nsl_stripe *)
                   ((const char *)v + (size_t)j * vsize), hook_at, top);
    done = count ? keys[count - 1] + 1 : want;
    if (err)
      break; /* the end of the array */
  }
  for (__u32 k = batched ? done : 0; v && k < want; k++)
    if (bpf_map_lookup_elem(fd, &k, v) == 0)
      n = slot_row(s, cur, n0, n, k, v, hook_at, top);
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

/* The group table as read: each entry's key and its value summed over
 * its stripes, in the order read. */
struct table_read {
  struct nsl_group_key *keys;
  struct nsl_hist *sums;
  size_t n, cap;
};

static int table_add(const struct nsl_state *s, struct table_read *t,
                     const struct nsl_group_key *k,
                     const struct nsl_stripe *v) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    struct nsl_group_key *k2 = realloc(t->keys, cap * sizeof(*k2));
    if (!k2)
      return -1;
    t->keys = k2;
    struct nsl_hist *s2 = realloc(t->sums, cap * sizeof(*s2));
    if (!s2)
      return -1;
    t->sums = s2;
    t->cap = cap;
  }
  t->keys[t->n] = *k;
  nsl_sum_stripes(s->stripes, v, &t->sums[t->n++]);
  return 0;
}

/* The group table one key at a time (bpf_map_get_next_key and a lookup
 * each): for a kernel or map where batched lookups fail. v: room for one
 * value. Returns 0, or -1. */
static int read_grouped_keys(const struct nsl_state *s, int fd,
                             struct table_read *t, struct nsl_stripe *v) {
  size_t max = bpf_map__max_entries(s->skel->maps.netstacklat_grouped_seconds);
  struct nsl_group_key k, next;
  bool first = true;
  t->n = 0;
  while (bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0 &&
         t->n <= max) {
    first = false;
    k = next;
    if (bpf_map_lookup_elem(fd, &next, v) == 0 && table_add(s, t, &next, v))
      return -1; /* (else deleted meanwhile) */
  }
  return 0;
}

/* The group table into *t: batched, a batch at a time (READ_BATCH_BYTES),
 * one key at a time where that fails (any error but the end of the map
 * or a bucket bigger than the batch). Returns 0, or -1 when both fail:
 * this interval's grouped values are then left out and the last ones
 * kept as they are, so that the next interval's counters go on from them
 * (a group read only in part would go backwards). */
static int read_table(struct nsl_state *s, int fd, struct table_read *t) {
  size_t vsize = (size_t)s->stripes * sizeof(struct nsl_stripe);
  __u32 per = batch_entries(vsize), token = 0;
  if (batch_room(s, per, sizeof(struct nsl_group_key), vsize))
    return -1;
  struct nsl_group_key *keys = s->batch_keys;
  struct nsl_stripe *vals = s->batch_vals;
  bool first = true;
  static bool warned_batch;
  bool batch = !test_switch(TEST_NO_BATCH);
  if (!batch && !warned_batch)
    E_INFO("netstacklat: EBPF_TEST_NO_BATCH: reading the group table one "
           "key at a time.");
  warned_batch = warned_batch || !batch;
  int ret = 0;
  while (batch) {
    __u32 count = per;
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    int err = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys,
                                   vals, &count, &bo);
    int e = errno;
    first = false;
    for (__u32 j = 0; j < count && ret == 0; j++)
      ret = table_add(s, t, &keys[j],
                      (const struct nsl_stripe *)((char *)vals + j * vsize));
    if (ret || (err && e == ENOENT))
      break; /* out of memory, or the end of the map */
    if (!err)
      continue;
    if (e == ENOSPC) { /* a hash bucket bigger than the batch */
      per *= 2;
      if ((ret = batch_room(s, per, sizeof(*keys), vsize)) != 0)
        break;
      keys = s->batch_keys;
      vals = s->batch_vals;
      continue;
    }
    if (!warned_batch)
      E_INFO("netstacklat: batched lookups of the group table failed (%s): "
             "reading it one key at a time.",
             ERRSTR(e));
    warned_batch = true;
    batch = false;
  }
  if (!batch && ret == 0 && (ret = read_grouped_keys(s, fd, t, vals)) != 0)
    E_WARNING("netstacklat: reading the grouped histograms failed: %s; "
              "this interval's grouped values are left out.",
              ERRSTR(errno));
  return ret;
}

/* The n entries read, sorted by key, with room after them for the slots'
 * rows (GroupBy cgroup); NULL when out of memory. */
static struct group_prev *sorted_entries(struct nsl_state *s,
                                         const struct table_read *t) {
  size_t n = t->n;
  bool slots = s->cgslots.slot != NULL;
  size_t room = n + (slots ? s->cgslots.nused * NSL_NHOOKS : 0);
  if (!room)
    room = 1;
  /* The read before last's entries' room, grown when short: a new one
   * every read had its pages faulted in every read. */
  if (room > s->gspare_cap) {
    struct group_prev *g = realloc(s->gspare, room * sizeof(*g));
    if (!g)
      return NULL;
    s->gspare = g;
    s->gspare_cap = room;
  }
  struct group_prev *cur = s->gspare;
  /* Sort (key, index) pairs, not the ~2 KB entries. */
  struct gkey_at *order = malloc((n ? n : 1) * sizeof(*order));
  if (!order)
    return NULL;
  /* Entries past n are written whole when used (add_row()). */
  memset(cur, 0, n * sizeof(*cur));
  for (size_t i = 0; i < n; i++)
    order[i] = (struct gkey_at){t->keys[i], i};
  qsort(order, n, sizeof(*order), cmp_gkey);
  for (size_t i = 0; i < n; i++) {
    cur[i].key = order[i].key;
    cur[i].h = t->sums[order[i].at];
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
  bool *refreshed = &s->tree_walked;
  size_t nu = 0;
  for (size_t i = 0, g = 0; i < n; i++) {
    if (i && cur[i].key.group == cur[i - 1].key.group)
      continue;
    gs[g].other = cur[i].key.group == NSL_GROUP_OTHER;
    gs[g].named = gs[g].other ||
                  group_name(s, &cur[i].key, gs[g].name, &hash[g], refreshed);
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
      nsl_fronts_release(s, cur[i].key.hook, cur[i].key.group);
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
  s->tree_walked = false;
  struct timespec now_ts;
  double now = now_mono(&now_ts);
  nsl_slots_tick(&s->cgslots, now);
  newnames_tick(&s->names, now);
  int fd = bpf_map__fd(s->skel->maps.netstacklat_grouped_seconds);
  struct table_read t = {s->tr_keys, s->tr_sums, 0, s->tr_cap};
  struct group_prev *cur =
      read_table(s, fd, &t) == 0 ? sorted_entries(s, &t) : NULL;
  size_t n = t.n;
  s->tr_keys = t.keys; /* kept for the next read */
  s->tr_sums = t.sums;
  s->tr_cap = t.cap;
  if (!cur)
    return;
  if (s->cgslots.slot)
    n = cg_slots_merge(s, cur, n);
  if (s->fronts && !(cur = nsl_fronts_merge(s, cur, &n)))
    return;
  if (s->cfg.groupby == NSL_GROUP_INTERFACE) {
    uint64_t *groups = malloc((n ? n : 1) * sizeof(*groups));
    for (size_t i = 0; groups && i < n; i++)
      groups[i] = cur[i].key.group;
    nsl_ifnames_refresh(&s->ifnames, groups, groups ? n : 0);
    free(groups);
  }
  struct gname_of *gs = name_groups(s, cur, n);
  if (!gs)
    return; /* (cur stays the spare) */
  size_t kept = dispatch_groups(s, fd, cur, n, gs, elapsed);
  nsl_other_dispatch(s, elapsed);
  nsl_other_waiting(s);
  free(gs);
  /* This read's entries are the last read's from now on; the last read's
   * room is the next read's. */
  struct group_prev *old = s->gprev;
  size_t old_cap = s->gprev_cap;
  s->gprev = cur;
  s->gprev_cap = s->gspare_cap;
  s->ngprev = kept;
  s->gspare = old;
  s->gspare_cap = old_cap;
}
