// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat: per-hook latency histograms of received packets, from the
 * packet's receive timestamp to points of the network stack; dispatched
 * as quantiles, mean, event count and per-bucket rates. See
 * bpf/netstacklat/netstacklat.bpf.c for the kernel side, the README's
 * "netstacklat hooks" for what each hook means and docs/netstacklat.md for
 * the Cgroup filter and GroupBy.
 *
 * This file is the feature as the core sees it (struct ebpf_feature): its
 * entry points give the one state to the parts in their order (config.c
 * the block, load.c the start, read.c, groups.c and sample.c the reads),
 * and shutdown takes it back. And what tcp_window asks of netstacklat's
 * programs on sk_data_ready (netstacklat_serve_*). */
#include "netstacklat/internal.h"
#include "netstacklat.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The static state of the one running netstacklat. */
static struct nsl_state nsl = {.ts_sock = -1, .cg_filter_size = 4096};

static void netstacklat_shutdown(void);

static int netstacklat_init(void) {
  struct nsl_state *s = &nsl;
  int err = nsl_prepare(s);
  if (err)
    return err;
  int n = nsl_attach(s);
  if (n <= 0 || !s->skel) {
    E_WARNING("netstacklat: no hook could be attached; netstacklat is "
              "disabled.");
    if (s->skel)
      netstacklat_shutdown();
    return n < 0 ? n : -ENOENT;
  }
  nsl_after_attach(s);
  if (nsl_outliers_open(s)) {
    netstacklat_shutdown();
    return -errno;
  }
  memset(s->prev, 0, sizeof(s->prev));
  memset(s->prev_le, 0, sizeof(s->prev_le));
  nsl_other_reset(s);
  if (s->cfg.groupby != NSL_GROUP_NONE &&
      newnames_init(&s->names, (unsigned)s->cfg.new_groups)) {
    netstacklat_shutdown();
    return -ENOMEM;
  }
  nsl_sample_start(s);
  now_mono(&s->last_read);
  return 0;
}

static int netstacklat_read(void) {
  struct nsl_state *s = &nsl;
  const struct nsl_config *cfg = &s->cfg;
  if (!s->skel)
    return -1;
  struct timespec ts;
  double t = now_mono(&ts);
  double elapsed = t - (s->last_read.tv_sec + s->last_read.tv_nsec / 1e9);
  s->last_read = ts;
  nsl_set_clock_offset(s);
  /* GroupBy cgroup walks the tree only when it meets a group it cannot
   * name (group_name()); the hash-way Cgroup filter needs it every
   * interval. */
  if (s->cgf.hash)
    cgroup_tree_refresh(&s->cgroups);
  if (cfg->ncgroups)
    nsl_cgf_refresh(&s->cgf, &s->cgroups, true);
  nsl_iff_refresh(&s->iff, false);

  if (nsl_read_hooks(s, elapsed))
    return -1;
  if (cfg->groupby != NSL_GROUP_NONE)
    nsl_read_grouped(s, elapsed);
  if (s->outliers.rb)
    nsl_outliers_read(s);
  nsl_sample_read(s, elapsed);
  return 0;
}

static void netstacklat_shutdown(void) {
  struct nsl_state *s = &nsl;
  loader_detach(s->hooks, NSL_NHOOKS);
  ebpf_ring_close(&s->outliers);
  if (s->skel)
    netstacklat_bpf__destroy(s->skel);
  s->skel = NULL;
  if (s->ts_sock >= 0)
    close(s->ts_sock);
  s->ts_sock = -1;
  free(s->gprev);
  s->gprev = NULL;
  s->ngprev = 0;
  free(s->batch_keys);
  free(s->batch_vals);
  s->batch_keys = s->batch_vals = NULL;
  s->batch_keys_size = s->batch_vals_size = 0;
  free(s->tr_keys);
  free(s->tr_sums);
  s->tr_keys = s->tr_sums = NULL;
  s->tr_cap = 0;
  free(s->gspare);
  s->gspare = NULL;
  s->gspare_cap = s->gprev_cap = 0;
  s->groups_shared = 0;
  newnames_free(&s->names);
  nsl_other_reset(s);
  nsl_ifnames_free(&s->ifnames);
  nsl_iff_free(&s->iff);
  s->warned_map_full = false;
  cgroup_tree_free(&s->cgroups);
  nsl_cgf_free(&s->cgf);
  nsl_slots_free(&s->cgslots);
  nsl_config_free(&s->cfg);
}

static struct bpf_object *netstacklat_object(void) {
  return nsl.skel ? nsl.skel->obj : NULL;
}

static int netstacklat_config_entry(const oconfig_item_t *ci) {
  return nsl_configure(&nsl, ci);
}

/* ----------------------------------- tcp_window's sk_data_ready work */

int netstacklat_serve_tcp_window(uint32_t threshold, uint32_t netns_inum) {
  if (!nsl.skel || !threshold ||
      nsl.hooks[NSL_TCP_SOCKET_ENQUEUED].flavour != FLAVOUR_TP)
    return -ENOENT;
  nsl.skel->bss->tcpw_netns = netns_inum;
  /* The namespace before the switch: the program reads it after. */
  __atomic_store_n(&nsl.skel->bss->tcpw_threshold, threshold, __ATOMIC_RELEASE);
  return 0;
}

struct bpf_map *netstacklat_tcp_window_map(void) {
  return nsl.skel && nsl.skel->bss->tcpw_threshold
             ? nsl.skel->maps.netstacklat_tcpw_wakeups
             : NULL;
}

void netstacklat_unserve_tcp_window(void) {
  if (nsl.skel)
    __atomic_store_n(&nsl.skel->bss->tcpw_threshold, 0, __ATOMIC_RELEASE);
}

int netstacklat_serve_stalled(uint32_t netns_inum, int *marks_fd) {
  const struct hook_state *h = &nsl.hooks[NSL_TCP_SOCKET_ENQUEUED];
  if (!nsl.skel || nsl.marks_off || h->flavour < 0 || h->nlinks == 0)
    return -ENOENT;
  nsl.skel->bss->tcpw_mark_netns = netns_inum;
  *marks_fd = bpf_map__fd(nsl.skel->maps.netstacklat_tcpw_marks);
  return 0;
}

int netstacklat_stalled_epoch(uint32_t epoch, uint64_t *lost) {
  if (!nsl.skel)
    return -ENOENT;
  /* The namespace before the first epoch: the program reads it after. */
  __atomic_store_n(&nsl.skel->bss->tcpw_epoch, epoch, __ATOMIC_RELEASE);
  /* Per CPU: a storm of lost marks writes no shared line. Each CPU's
   * value is tcp_window's struct tcpw_mark_cpu, whose first field is the
   * count (per-CPU values are 8-byte aligned). */
  const struct bpf_map *m = nsl.skel->maps.netstacklat_tcpw_marks_lost;
  uint32_t zero = 0;
  int ncpu = libbpf_num_possible_cpus();
  size_t words = (bpf_map__value_size(m) + 7) / 8;
  *lost = 0;
  if (ncpu <= 0 || !words)
    return 0;
  uint64_t v[(size_t)ncpu * words];
  if (bpf_map_lookup_elem(bpf_map__fd(m), &zero, v) == 0)
    for (int c = 0; c < ncpu; c++)
      *lost += v[(size_t)c * words];
  return 0;
}

void netstacklat_unserve_stalled(void) {
  if (nsl.skel)
    __atomic_store_n(&nsl.skel->bss->tcpw_epoch, 0, __ATOMIC_RELEASE);
}

const struct ebpf_feature feature_netstacklat = {
    .block = "Netstacklat",
    .name = FEATURE,
    .config = netstacklat_config_entry,
    .keys = &nsl_keys,
    .init = netstacklat_init,
    .read = netstacklat_read,
    .shutdown = netstacklat_shutdown,
    .bpf_object = netstacklat_object,
};
