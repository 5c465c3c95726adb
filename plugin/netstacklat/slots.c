// SPDX-License-Identifier: GPL-2.0-only
#include "netstacklat/slots.h"

#include "core/base.h"
#include "netstacklat/netstacklat.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int nsl_slots_alloc(struct nsl_slots *s, long long max, uint32_t index_size) {
  nsl_slots_free(s);
  s->max = max;
  s->index_size = index_size;
  s->slot = calloc((size_t)max, sizeof(*s->slot));
  s->used = calloc((size_t)max, sizeof(*s->used));
  s->index = calloc(index_size, sizeof(*s->index));
  s->slots_fd = s->index_fd = -1;
  if (!s->slot || !s->used || !s->index) {
    nsl_slots_free(s);
    return -ENOMEM;
  }
  return 0;
}

void nsl_slots_bind(struct nsl_slots *s, int slots_fd, int index_fd,
                    int stripes, uint32_t rows) {
  s->slots_fd = slots_fd;
  s->index_fd = index_fd;
  s->stripes = stripes;
  s->rows = rows;
}

void nsl_slots_free(struct nsl_slots *s) {
  free(s->slot);
  free(s->used);
  free(s->index);
  *s = (struct nsl_slots){.slots_fd = -1, .index_fd = -1};
}

void nsl_slots_tick(struct nsl_slots *s, double now) {
  s->reads++;
  s->now = now;
}

/* Write a slot's rows (every loaded hook): zero counts, the given owner
 * (the cgroup id's low bits; 0: free) in every stripe. */
static int slot_reset(struct nsl_slots *s, long long slot, uint64_t id) {
  struct nsl_stripe *v = calloc((size_t)s->stripes, sizeof(*v));
  if (!v)
    return -ENOMEM;
  for (int c = 0; c < s->stripes; c++)
    v[c].owner = id & NSL_SLOT_ID_MASK;
  int err = 0;
  for (uint32_t p = 0; p < s->rows && !err; p++) {
    uint32_t i = (uint32_t)slot * s->rows + p;
    if (bpf_map_update_elem(s->slots_fd, &i, v, BPF_ANY))
      err = -errno;
  }
  free(v);
  return err;
}

/* Position of id in used, or where it would go. */
static size_t used_pos(const struct nsl_slots *s, uint64_t id) {
  size_t lo = 0, hi = s->nused;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->used[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

long long nsl_slots_find(const struct nsl_slots *s, uint64_t id) {
  size_t p = used_pos(s, id);
  return p < s->nused && s->used[p].id == id ? (long long)s->used[p].slot
                                             : -1;
}

static void slot_set(struct nsl_slots *s, long long i, uint64_t id) {
  uint64_t old = s->slot[i].id;
  s->slot[i].id = id;
  if (old) {
    size_t p = used_pos(s, old);
    memmove(&s->used[p], &s->used[p + 1],
            (s->nused - p - 1) * sizeof(*s->used));
    s->nused--;
  }
  if (id) {
    size_t p = used_pos(s, id);
    memmove(&s->used[p + 1], &s->used[p], (s->nused - p) * sizeof(*s->used));
    s->used[p] = (struct nsl_slot_ref){id, (uint32_t)i};
    s->nused++;
  }
}

/* A freed slot is given again only from a later read and at least
 * NSL_SLOT_GRACE_S after it was freed. The BPF side finds a slot through
 * the group index, checks its owner, then adds to it: a program that
 * checked just before user space cleared the index entry can still write
 * to the slot, and its non-atomic add can write the old owner's values
 * back over a zeroed row. A program runs for microseconds (even a
 * preempted one is done long before a second has passed), and the slot is
 * zeroed again when it is given, after the grace period: such a late
 * write is wiped, never counted to the next cgroup. */
static bool slot_in_grace(const struct nsl_slots *s, long long i) {
  return s->slot[i].freed_at > 0 &&
         (s->slot[i].freed_read == s->reads ||
          s->now - s->slot[i].freed_at < NSL_SLOT_GRACE_S);
}

/* The lowest free slot: slots stay packed at the bottom, so the batched
 * read of the rows covers about the live groups, not MaxGroups. -2 when
 * the only free ones are in grace, -1 when none is free. */
static long long slot_free_one(struct nsl_slots *s) {
  long long waiting = -1; /* the lowest free slot still in grace */
  for (long long i = s->free_hint; i < s->max; i++) {
    if (s->slot[i].id)
      continue;
    if (slot_in_grace(s, i)) {
      if (waiting < 0)
        waiting = i;
      continue;
    }
    s->free_hint = waiting >= 0 ? waiting : i + 1;
    return i;
  }
  if (waiting >= 0) {
    s->free_hint = waiting;
    return -2;
  }
  return -1;
}

/* Write the group index entry at pos: id with 1 + slot, or empty (id 0). */
static int index_write(struct nsl_slots *s, uint32_t pos, uint64_t id,
                       long long slot) {
  struct nsl_cg_index e = {.id = id, .slot = id ? (uint32_t)slot + 1 : 0};
  if (bpf_map_update_elem(s->index_fd, &pos, &e, BPF_ANY))
    return -errno;
  s->index[pos] = id;
  return 0;
}

/* A free position for id in the group index (where the kernel looks: its
 * hash position and the next), or -1. */
static long long index_free_pos(const struct nsl_slots *s, uint64_t id) {
  uint32_t mask = s->index_size - 1;
  uint32_t pos = nsl_cg_index_pos(id, mask);
  if (!s->index[pos])
    return pos;
  pos = (pos + 1) & mask;
  return s->index[pos] ? -1 : (long long)pos;
}

/* Its index entry goes first, so that no event finds the slot through it
 * once the slot is another's. */
void nsl_slot_free(struct nsl_slots *s, uint64_t id) {
  long long i = nsl_slots_find(s, id);
  if (i < 0)
    return;
  int err = index_write(s, s->slot[i].ipos, 0, 0);
  if (err) {
    E_WARNING("netstacklat: GroupBy cgroup: clearing the group index entry "
              "of a removed cgroup failed: %s; its slot is not reused.",
              ERRSTR(err));
    return;
  }
  slot_set(s, i, 0);
  slot_reset(s, i, 0);
  s->slot[i].freed_read = s->reads;
  s->slot[i].freed_at = s->now;
  if (i < s->free_hint)
    s->free_hint = i;
}

/* The slot is zeroed and owned first, then the kernel is told through the
 * group index (written last, so that the kernel never finds a slot not yet
 * the cgroup's). From then on the cgroup's events go to the slot; its
 * hash entry stays and the two are summed. */
long long nsl_slot_give(struct nsl_slots *s, uint64_t id) {
  long long have = nsl_slots_find(s, id);
  if (have >= 0)
    return have;
  long long ipos = index_free_pos(s, id);
  if (ipos < 0) {
    if (!s->told_index)
      E_INFO("netstacklat: GroupBy cgroup: the group index has no free entry "
             "where a cgroup is looked for; it is counted through the group "
             "table (exactly, at a hash lookup per event) until one frees.");
    s->told_index = true;
    return -3;
  }
  long long i = slot_free_one(s);
  if (i == -2)
    return -2; /* a slot frees when its grace period ends: next interval */
  if (i < 0) {
    if (!s->told_full)
      E_INFO("netstacklat: GroupBy cgroup: all %lld slots (MaxGroups) are in "
             "use; cgroups without one are counted through the group table.",
             s->max);
    s->told_full = true;
    return -1;
  }
  slot_set(s, i, id);
  s->slot[i].ipos = (uint32_t)ipos;
  if (slot_reset(s, i, id) == 0 && index_write(s, (uint32_t)ipos, id, i) == 0)
    return i;
  slot_set(s, i, 0);
  slot_reset(s, i, 0);
  if (i < s->free_hint)
    s->free_hint = i;
  return -4;
}
