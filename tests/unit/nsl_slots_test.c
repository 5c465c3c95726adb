/* netstacklat's GroupBy cgroup slots (plugin/netstacklat/slots.c) against real BPF
 * maps of the programs' layout (as root): a cgroup given a slot owns it in
 * every stripe with zero counts and is found through the group index at its
 * hash position; a freed slot's index entry is cleared first and the slot
 * is not given again within the read that freed it nor before the grace
 * period, and when it is, a late write of the old owner is wiped; all
 * slots in use, or no index entry where the kernel looks, give nothing. */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/netstacklat/slots.c"
#include "mock_collectd.h"
#include "testlib.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <unistd.h>

/* Stripes per value (struct nsl_stripe): as on a host of 4 CPUs. */
static int ncpu = 4;

static int maps(struct nsl_slots *s, long long max, uint32_t rows,
                uint32_t isize) {
  int sfd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_slots", 4,
                           ncpu * sizeof(struct nsl_stripe),
                           (uint32_t)max * rows, NULL);
  int ifd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_index", 4,
                           sizeof(struct nsl_cg_index), isize, NULL);
  if (sfd < 0 || ifd < 0) {
    /* A package build's root (fakeroot, a chroot without CAP_BPF):
     * no maps to test against. */
    int err = errno;
    if (sfd >= 0)
      close(sfd);
    if (ifd >= 0)
      close(ifd);
    return err == EPERM ? 1 : -1;
  }
  if (nsl_slots_alloc(s, max, isize))
    return -1;
  nsl_slots_bind(s, sfd, ifd, ncpu, rows);
  nsl_slots_tick(s, 100.0);
  return 0;
}

static void unmap(struct nsl_slots *s) {
  close(s->slots_fd);
  close(s->index_fd);
  nsl_slots_free(s);
}

/* Every stripe's row r of slot i: its owner, and whether its counts are 0. */
static int row(struct nsl_slots *s, long long i, uint32_t r, uint64_t *owner,
               bool *zero) {
  struct nsl_stripe v[ncpu];
  uint32_t k = (uint32_t)i * s->rows + r;
  if (bpf_map_lookup_elem(s->slots_fd, &k, v))
    return -1;
  *owner = v[0].owner;
  *zero = true;
  for (int c = 0; c < ncpu; c++) {
    if (v[c].owner != *owner)
      return -1;
    if (v[c].h.count || v[c].h.sum_ns)
      *zero = false;
  }
  return 0;
}

static struct nsl_cg_index idx(struct nsl_slots *s, uint32_t pos) {
  struct nsl_cg_index e = {0};
  bpf_map_lookup_elem(s->index_fd, &pos, &e);
  return e;
}

/* The index entry the kernel finds for id (its position or the next). */
static long long found(struct nsl_slots *s, uint64_t id) {
  uint32_t mask = s->index_size - 1, p = nsl_cg_index_pos(id, mask);
  for (int k = 0; k < 2; k++, p = (p + 1) & mask) {
    struct nsl_cg_index e = idx(s, p);
    if (e.id == id && e.slot)
      return (long long)e.slot - 1;
  }
  return -1;
}

DEF_TEST(give_find_free_grace) {
  struct nsl_slots s = {0};
  int m = maps(&s, 2, 3, 16);
  if (m == 1) {
    printf("SKIP: nsl_slots.give_find_free_grace (no BPF maps here, or no CPU count)\n");
    return 0;
  }
  CHECK_EQ_INT(0, m);
  uint64_t a = 0x1000000000abcULL, b = 77, c = 78, owner;
  bool zero;
  CHECK_EQ_INT(0, (int)nsl_slot_give(&s, a));
  CHECK_EQ_INT(1, (int)nsl_slot_give(&s, b));
  CHECK_EQ_INT(0, (int)nsl_slot_give(&s, a)); /* keeps its slot */
  CHECK_EQ_INT(0, (int)found(&s, a));
  CHECK_EQ_INT(1, (int)found(&s, b));
  CHECK_EQ_INT(0, (int)nsl_slots_find(&s, a));
  for (uint32_t r = 0; r < 3; r++) {
    CHECK(row(&s, 0, r, &owner, &zero) == 0 && zero);
    CHECK(owner == (a & NSL_SLOT_ID_MASK));
  }
  CHECK_EQ_INT(-1, (int)nsl_slot_give(&s, c)); /* all in use */
  /* a is gone: its index entry and owner cleared, the slot in grace. */
  nsl_slot_free(&s, a);
  CHECK_EQ_INT(-1, (int)found(&s, a));
  CHECK_EQ_INT(-1, (int)nsl_slots_find(&s, a));
  CHECK(row(&s, 0, 2, &owner, &zero) == 0 && owner == 0 && zero);
  CHECK_EQ_INT(-2, (int)nsl_slot_give(&s, c)); /* the same read */
  nsl_slots_tick(&s, 100.5);
  CHECK_EQ_INT(-2, (int)nsl_slot_give(&s, c)); /* within the second */
  /* A BPF program that found a's slot before the index was cleared writes
   * its add late: wiped when the slot is given. */
  struct nsl_stripe late[ncpu];
  memset(late, 0, sizeof(late));
  for (int k = 0; k < ncpu; k++) {
    late[k].owner = a & NSL_SLOT_ID_MASK;
    late[k].h.count = 5;
  }
  uint32_t k1 = 0 * 3 + 1;
  CHECK(bpf_map_update_elem(s.slots_fd, &k1, late, BPF_ANY) == 0);
  nsl_slots_tick(&s, 101.2);
  CHECK_EQ_INT(0, (int)nsl_slot_give(&s, c));
  CHECK_EQ_INT(0, (int)found(&s, c));
  for (uint32_t r = 0; r < 3; r++)
    CHECK(row(&s, 0, r, &owner, &zero) == 0 && zero && owner == c);
  CHECK_EQ_INT(2, (int)s.nused);
  unmap(&s);
  return 0;
}

DEF_TEST(index_full_where_looked_for) {
  struct nsl_slots s = {0};
  /* An index of 2 entries: any two cgroups take both places a third is
   * looked for at. */
  int m = maps(&s, 8, 1, 2);
  if (m == 1) {
    printf("SKIP: nsl_slots.index_full_where_looked_for (no BPF maps here, or no CPU count)\n");
    return 0;
  }
  CHECK_EQ_INT(0, m);
  CHECK(nsl_slot_give(&s, 11) >= 0);
  CHECK(nsl_slot_give(&s, 12) >= 0);
  CHECK_EQ_INT(-3, (int)nsl_slot_give(&s, 13));
  CHECK_EQ_INT(2, (int)s.nused);
  CHECK(mock_log_find(LOG_INFO, "the group index has no free entry") >= 0);
  nsl_slot_free(&s, 11);
  nsl_slots_tick(&s, 200.0);
  CHECK(nsl_slot_give(&s, 13) >= 0);
  CHECK(found(&s, 13) >= 0 && found(&s, 12) >= 0 && found(&s, 11) < 0);
  unmap(&s);
  return 0;
}

int main(void) {
  tl_prog = "nsl_slots";
  RUN_TEST(give_find_free_grace);
  RUN_TEST(index_full_where_looked_for);
  END_TEST;
}
