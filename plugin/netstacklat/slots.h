// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's GroupBy cgroup slots, user space's side: MaxGroups slots
 * of striped histogram rows (one row per loaded hook) in the BPF array
 * netstacklat_cgroup_slots, and the group index (netstacklat_cgroup_index)
 * through which the BPF side finds a cgroup's slot by its id with array
 * lookups only. This module gives a slot to a cgroup that has events,
 * frees it when the cgroup is gone, and keeps a freed slot from being
 * given again for a grace period (see slots.c), mirroring what it
 * wrote to both maps. Events of a cgroup without a slot are counted in the
 * group hash table instead (plugin/netstacklat/groups.c sums both). */
#ifndef EBPF_NSL_SLOTS_H
#define EBPF_NSL_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nsl_slot {
  uint64_t id;   /* the cgroup; 0: free */
  uint32_t ipos; /* its entry in the group index */
  /* When it was freed (read number, monotonic seconds): a freed slot waits
   * a grace period before it is given again. */
  uint32_t freed_read;
  double freed_at;
};

struct nsl_slot_ref {
  uint64_t id;
  uint32_t slot;
};

struct nsl_slots {
  long long max;        /* MaxGroups */
  struct nsl_slot *slot; /* [max] */
  /* The slots in use, sorted by cgroup id (looked up for every group every
   * interval), and no free slot below free_hint. */
  struct nsl_slot_ref *used;
  size_t nused;
  long long free_hint;
  /* What is in the group index, by position: the cgroup id, 0 when
   * empty. index_size is a power of two. */
  uint64_t *index;
  uint32_t index_size;
  /* Bound after the BPF object loaded: */
  int slots_fd, index_fd;
  int stripes; /* per row (struct nsl_stripe) */
  uint32_t rows; /* hooks loaded: rows per slot */
  /* The read under way (nsl_slots_tick()): its number and time. */
  uint32_t reads;
  double now;
  bool told_full, told_index;
};

/* The grace period of a freed slot, in seconds (and never within the read
 * that freed it). */
#define NSL_SLOT_GRACE_S 1.0

int nsl_slots_alloc(struct nsl_slots *s, long long max, uint32_t index_size);
void nsl_slots_bind(struct nsl_slots *s, int slots_fd, int index_fd,
                    int stripes, uint32_t rows);
void nsl_slots_free(struct nsl_slots *s);
/* A new read, at monotonic time now (seconds). */
void nsl_slots_tick(struct nsl_slots *s, double now);
/* The slot of cgroup id, or -1. */
long long nsl_slots_find(const struct nsl_slots *s, uint64_t id);
/* Give cgroup id (that has events) a slot, zeroed and owned by it, and
 * enter it in the group index. Returns the slot, or -1 when all are in
 * use, -2 when the only free ones are in their grace period, -3 when the
 * index has no free entry where the BPF side looks for id, -4 when a map
 * write failed (nothing given). A cgroup that has one keeps it. */
long long nsl_slot_give(struct nsl_slots *s, uint64_t id);
/* The cgroup is gone: its index entry cleared, its slot zeroed and free
 * (after the grace period). */
void nsl_slot_free(struct nsl_slots *s, uint64_t id);

#endif
