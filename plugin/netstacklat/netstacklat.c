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
 * and shutdown takes it back. Its programs are the receive path's
 * (plugin/rx/): init joins it, and start, once the part has loaded,
 * takes what it got. */
#include "netstacklat/internal.h"
#include "rx.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The static state of the one running netstacklat. */
static struct nsl_state nsl = {.ts_sock = -1,
                               .cg_filter_size = 4096,
                               .rx = {.feature = FEATURE,
                                      .ctx = &nsl,
                                      .open = nsl_rx_open,
                                      .loaded = nsl_rx_loaded,
                                      .gone = nsl_rx_gone}};

static void netstacklat_shutdown(void);

static int netstacklat_init(void) {
  struct nsl_state *s = &nsl;
  int err = nsl_prepare(s);
  if (err)
    return err;
  nsl_join(s);
  return 0;
}

/* The receive path is loaded: each hook as netstacklat got it. */
static int netstacklat_start(void) {
  struct nsl_state *s = &nsl;
  rx_view(&s->rx, s->hooks);
  int n = 0;
  for (int h = 0; h < NSL_NHOOKS; h++)
    n += s->hooks[h].flavour >= 0;
  if (n == 0 || !s->skel) {
    E_WARNING("netstacklat: no hook could be attached; netstacklat is "
              "disabled.");
    netstacklat_shutdown();
    return -ENOENT;
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
  ebpf_ring_close(&s->outliers);
  rx_leave(&s->rx);
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
  nsl_fronts_free(s);
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

static int netstacklat_config_entry(const oconfig_item_t *ci) {
  return nsl_configure(&nsl, ci);
}

const struct ebpf_feature feature_netstacklat = {
    .block = "Netstacklat",
    .name = FEATURE,
    .config = netstacklat_config_entry,
    .keys = &nsl_keys,
    .init = netstacklat_init,
    .start = netstacklat_start,
    .read = netstacklat_read,
    .shutdown = netstacklat_shutdown,
    .rx = &nsl.rx,
};
