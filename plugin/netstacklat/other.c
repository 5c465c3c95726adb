// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's group "other": where GroupBy counts what it gives no group
 * of its own, so that no event is lost and the names stay bounded: the
 * groups that NewGroupsPerHour refuses a name, the last events of groups
 * gone since the last read, and the events that found the group table full
 * (the kernel's entry NSL_GROUP_OTHER). Dispatched as "<hook>-other". And
 * the cgroups the kernel noted when the table was full, given slots. */
#include "netstacklat/internal.h"
#include "rx.skel.h"

#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nsl_other_reset(struct nsl_state *s) {
  memset(s->other, 0, sizeof(s->other));
  memset(s->other_prev, 0, sizeof(s->other_prev));
  memset(s->other_le, 0, sizeof(s->other_le));
  memset(s->other_on, 0, sizeof(s->other_on));
}

void nsl_other_add(struct nsl_state *s, __u32 hook, const struct nsl_hist *now,
                   const struct nsl_hist *before) {
  static const struct nsl_hist zero;
  if (hook >= NSL_NHOOKS)
    return;
  if (!before)
    before = &zero;
  /* A group made again starts from zero: its counts are all new. */
  bool reset = now->count < before->count || now->sum_ns < before->sum_ns;
  for (int r = 0; r < NSL_NSKIPS; r++)
    reset |= now->skipped[r] < before->skipped[r];
  if (reset)
    before = &zero;
  struct nsl_hist *o = &s->other[hook];
  bool any = now->count != before->count;
  for (int b = 0; b < NSL_NFINE; b++)
    o->bucket[b] += now->bucket[b] - before->bucket[b]; /* modulo 2^32 */
  o->sum_ns += now->sum_ns - before->sum_ns;
  o->count += now->count - before->count;
  for (int r = 0; r < NSL_NSKIPS; r++) {
    o->skipped[r] += now->skipped[r] - before->skipped[r];
    any |= now->skipped[r] != before->skipped[r];
  }
  s->other_on[hook] |= any;
}

void nsl_other_gone(struct nsl_state *s, int fd, const struct nsl_group_key *k,
                    const struct nsl_hist *now, const struct nsl_hist *before) {
  bool slot = s->cgslots.slot && nsl_slots_find(&s->cgslots, k->group) >= 0;
  struct nsl_stripe *v =
      slot ? NULL : calloc((size_t)s->stripes, sizeof(*v));
  struct nsl_hist fin;
  if (v && bpf_map_lookup_and_delete_elem(fd, k, v) == 0) {
    nsl_sum_stripes(s->stripes, v, &fin);
    if (fin.count >= now->count && fin.sum_ns >= now->sum_ns)
      now = &fin;
  } else {
    bpf_map_delete_elem(fd, k);
  }
  free(v);
  nsl_other_add(s, k->hook, now, before);
  if (s->cgslots.slot)
    nsl_slot_free(&s->cgslots, k->group);
}

void nsl_other_dispatch(struct nsl_state *s, double elapsed) {
  for (__u32 h = 0; h < NSL_NHOOKS; h++) {
    if (!s->other_on[h])
      continue;
    char inst[DATA_MAX_NAME_LEN];
    snprintf(inst, sizeof(inst), "%s-other", nsl_hook_names[h]);
    value_list_t vl;
    vl_prepare(&vl, FEATURE, inst);
    nsl_dispatch(s, h, &vl, &s->other[h], &s->other_prev[h], elapsed,
                 s->other_le[h]);
    s->other_prev[h] = s->other[h];
  }
}

/* The waiting array: batched, else one position at a time. Returns the
 * positions read into ids (0: none there), or 0. */
static __u32 read_waiting(int fd, __u32 n, __u64 *ids) {
  __u32 *keys = malloc(n * sizeof(*keys)), count = n, out = 0;
  LIBBPF_OPTS(bpf_map_batch_opts, bo);
  if (keys && (!bpf_map_lookup_batch(fd, NULL, &out, keys, ids, &count, &bo) ||
               errno == ENOENT)) {
    /* An array gives its positions in order, all of them. */
    free(keys);
    return count == n ? n : 0;
  }
  free(keys);
  for (__u32 i = 0; i < n; i++)
    if (bpf_map_lookup_elem(fd, &i, &ids[i]))
      ids[i] = 0;
  return n;
}

void nsl_other_waiting(struct nsl_state *s) {
  if (!s->cgslots.slot)
    return;
  if (!s->table_full)
    return; /* nothing noted since the last read */
  const struct bpf_map *map = s->skel->maps.netstacklat_cg_waiting;
  int fd = bpf_map__fd(map);
  __u32 n = bpf_map__max_entries(map);
  __u64 *ids = calloc(n, sizeof(*ids));
  if (!ids)
    return;
  n = read_waiting(fd, n, ids);
  bool *refreshed = &s->tree_walked; /* (name_groups() may have walked) */
  for (__u32 i = 0; i < n; i++) {
    if (!ids[i])
      continue;
    static const __u64 none;
    bpf_map_update_elem(fd, &i, &none, BPF_ANY);
    if (nsl_slots_find(&s->cgslots, ids[i]) >= 0)
      continue;
    const char *rel = cgroup_tree_path(&s->cgroups, ids[i]);
    if (!rel && !*refreshed) { /* made since the last walk */
      cgroup_tree_refresh(&s->cgroups);
      *refreshed = true;
      rel = cgroup_tree_path(&s->cgroups, ids[i]);
    }
    if (!rel)
      continue; /* gone: its events are in "other" */
    char name[EBPF_NAME_LEN];
    cgroup_name(rel, name);
    if (newnames_admit(&s->names, name))
      nsl_slot_give(&s->cgslots, ids[i]);
  }
  free(ids);
}
