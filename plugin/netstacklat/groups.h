// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's (hook, group) entries of a read: made in groups.c, the
 * CPUs' ways added to them in fronts.c. */
#ifndef NSL_GROUPS_H
#define NSL_GROUPS_H

#include "netstacklat/internal.h"

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
static inline int cmp_gkey(const void *a, const void *b) {
  const struct nsl_group_key *x = a, *y = b;
  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  return x->hook < y->hook ? -1 : x->hook > y->hook;
}

/* Add the CPUs' ways to cur[0..*n) (sorted by cmp_gkey), growing it
 * (s->gspare) for groups found only there. Returns cur, or NULL when the
 * ways could not be read or memory ran out (this interval's grouped
 * values are then left out: a group read without its ways would go
 * back). */
struct group_prev *nsl_fronts_merge(struct nsl_state *s,
                                    struct group_prev *cur, size_t *n);

#endif
