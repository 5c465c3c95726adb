// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's reads: each hook's histogram summed over the CPUs and
 * dispatched against the last read's (quantiles, mean, event count,
 * bucket rates, BucketBounds counters), and OutlierThreshold's records
 * and counters. */
#include "netstacklat/internal.h"
#include "rx.skel.h"

#include <bpf/bpf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(NSL_NFINE == HIST_NFINE && NSL_SUB_BITS == HIST_SUB_BITS &&
                   NSL_FINE_FIRST_EXP == HIST_FINE_FIRST_EXP,
               "bucket layouts differ");
_Static_assert(sizeof(struct nsl_hist) == NSL_HIST_SIZE,
               "struct nsl_hist changed size: update NSL_HIST_SIZE and the "
               "memory figures in the README and docs");
_Static_assert(sizeof(struct nsl_stripe) == NSL_STRIPE_SIZE &&
                   NSL_STRIPE_SIZE % 64 == 0,
               "struct nsl_stripe: a whole number of cache lines, as the "
               "memory figures in the README and docs say");

static const char *const skip_names[NSL_NSKIPS] = {
    "skipped-no_timestamp", "skipped-not_rx_timestamp", "skipped-future",
    "skipped-map_full", "skipped-hol_blocked", "skipped-raced"};


/* out += h; restrict: out is never h, so the bucket loop is vectorized at
 * -O2 (16 stripes x 903 entries of a full table, 5.8 million additions a
 * read). */
void nsl_add_hist(struct nsl_hist *restrict out,
                  const struct nsl_hist *restrict h) {
  for (int k = 0; k < NSL_NFINE; k++)
    out->bucket[k] += h->bucket[k]; /* modulo 2^32, as the reads */
  out->sum_ns += h->sum_ns;
  out->count += h->count;
  for (int r = 0; r < NSL_NSKIPS; r++)
    out->skipped[r] += h->skipped[r];
}

void nsl_sum_cpus(int ncpus, const struct nsl_hist *percpu,
                  struct nsl_hist *out) {
  memset(out, 0, sizeof(*out));
  for (int c = 0; c < ncpus; c++)
    nsl_add_hist(out, &percpu[c]);
}

void nsl_sum_stripes(int n, const struct nsl_stripe *restrict v,
                     struct nsl_hist *restrict out) {
  memset(out, 0, sizeof(*out));
  for (int c = 0; c < n; c++)
    nsl_add_hist(out, &v[c].h);
}

/* A skip reason that only one hook with one setting can have is
 * dispatched there alone: elsewhere it could only ever be 0. */
static bool skip_applies(const struct nsl_config *cfg, __u32 hook, int r) {
  switch (r) {
  case NSL_SKIP_HOL_BLOCKED:
    return hook == NSL_TCP_SOCKET_READ && !cfg->include_hol;
  case NSL_SKIP_RACED:
    return hook == NSL_UDP_SOCKET_ENQUEUED;
  case NSL_SKIP_MAP_FULL:
    /* Counted on the hook's ungrouped entry only, and dispatched from
     * there with GroupBy (nsl_read_hooks()): 0 everywhere else. */
    return false;
  default:
    return true;
  }
}

void nsl_dispatch(struct nsl_state *s, __u32 hook, value_list_t *vl,
                  const struct nsl_hist *now, const struct nsl_hist *before,
                  double elapsed, uint64_t le[MAX_BOUNDS]) {
  const struct nsl_config *cfg = &s->cfg;
  /* A reset (a group deleted and made again starts from zero) shows in
   * the 64-bit count or sum going down; the 32-bit buckets wrap. */
  bool reset = now->count < before->count || now->sum_ns < before->sum_ns;
  uint64_t d[HIST_NFINE];
  uint64_t n = hist_fine_delta(now->bucket, before->bucket, reset, d);
  uint64_t dsum = reset ? now->sum_ns : now->sum_ns - before->sum_ns;
  /* The counters are cumulative and never reset while we run. count is
   * exact for any SampleEvery; the buckets hold the timed events only. */
  vl_derive(vl, "operations", NULL, (int64_t)now->count);
  for (int r = 0; r < NSL_NSKIPS; r++)
    if (skip_applies(cfg, hook, r))
      vl_derive(vl, "operations", skip_names[r], (int64_t)now->skipped[r]);
  double sum = (double)dsum;
  for (int i = 0; i < cfg->npct; i++)
    vl_gauge(vl, "latency", s->pct_names[i],
             n ? hist_quantile_ns(d, cfg->pct[i] / 100.0) / 1e9 : NAN);
  vl_gauge(vl, "latency", "max", n ? hist_max_ns(d) / 1e9 : NAN);
  vl_gauge(vl, "latency", "avg", n ? sum / (double)n / 1e9 : NAN);
  /* SampleEvery N: one event in N was timed, so a bucket's rate is its
   * timed count times N (with auto, the hook's N during the interval). */
  uint64_t n_int =
      cfg->sample_every ? (uint64_t)cfg->sample_every : s->n_used[hook];
  double scale = (double)n_int;
  s->hook_events[hook] +=
      now->count >= before->count ? now->count - before->count : now->count;
  if (cfg->buckets && elapsed > 0) {
    uint64_t coarse[HIST_NBUCKETS];
    hist_coarse(d, coarse);
    for (int k = 0; k < HIST_NBUCKETS; k++)
      vl_gauge(vl, "bucket", s->bucket_names[k],
               (double)coarse[k] * scale / elapsed);
  }
  /* BucketBounds: cumulative counters kept here, so that they only grow
   * (a group's counters made again start from zero in the kernel). */
  for (int b = 0; b < cfg->nbounds; b++) {
    le[b] += hist_at_or_below(d, cfg->bounds[b]) * n_int;
    vl_derive(vl, "operations", s->bound_names[b], (int64_t)le[b]);
  }
}

/* GroupBy's table is full: the events of further groups are counted in
 * the group "other" and on the hook's ungrouped entry, dispatched here
 * (one WARNING). */
static void map_full(struct nsl_state *s, __u32 h, const struct nsl_hist *now) {
  const struct nsl_config *cfg = &s->cfg;
  const struct bpf_map *grouped = s->skel->maps.netstacklat_grouped_seconds;
  if (!s->warned_map_full)
    E_WARNING("netstacklat: hook %s: the group table is full "
              "(MaxGroups %lld x %u hooks = %u (hook, group) entries, "
              "shared by the hooks); events of further groups are counted "
              "in the group other and as operations-skipped-map_full. "
              "Raise MaxGroups.",
              nsl_hook_names[h], cfg->max_groups,
              bpf_map__max_entries(grouped) / (unsigned)cfg->max_groups,
              bpf_map__max_entries(grouped));
  s->warned_map_full = true;
  submit_derive(FEATURE, nsl_hook_names[h], "operations",
                skip_names[NSL_SKIP_MAP_FULL],
                (int64_t)now->skipped[NSL_SKIP_MAP_FULL]);
}

int nsl_read_hooks(struct nsl_state *s, double elapsed) {
  int fd = bpf_map__fd(s->skel->maps.netstacklat_seconds);
  struct nsl_hist *percpu = calloc((size_t)s->ncpus, sizeof(*percpu));
  if (!percpu)
    return -1;
  s->table_full = false;
  for (__u32 h = 0; h < NSL_NHOOKS; h++) {
    if (s->hooks[h].flavour < 0)
      continue;
    if (bpf_map_lookup_elem(fd, &h, percpu) != 0)
      continue;
    struct nsl_hist now;
    nsl_sum_cpus(s->ncpus, percpu, &now);
    if (s->cfg.groupby == NSL_GROUP_NONE)
      nsl_dispatch(s, h, &s->hook_vl[h], &now, &s->prev[h], elapsed,
                   s->prev_le[h]);
    else if (now.skipped[NSL_SKIP_MAP_FULL])
      map_full(s, h, &now);
    s->table_full |= now.skipped[NSL_SKIP_MAP_FULL] !=
                     s->prev[h].skipped[NSL_SKIP_MAP_FULL];
    s->prev[h] = now;
  }
  free(percpu);
  return 0;
}

static int on_outlier(void *ctx, void *data, size_t len) {
  return nsl_outlier_notify(ctx, data, len);
}

int nsl_outliers_open(struct nsl_state *s) {
  if (s->cfg.outlier_s) {
    int err = ebpf_ring_open(
        &s->outliers, bpf_map__fd(s->skel->maps.netstacklat_outliers),
        sizeof(struct nsl_outlier), on_outlier, &s->outlier_ctx);
    if (err) {
      E_ERROR("netstacklat: cannot read the outlier ring buffer: %s",
              ERRSTR(err));
      return -1;
    }
  }
  s->outlier_ctx = (struct nsl_outlier_ctx){
      .plugin = FEATURE, .hook_names = nsl_hook_names, .cgroups = &s->cgroups};
  return 0;
}

void nsl_outliers_read(struct nsl_state *s) {
  s->outlier_ctx.cg_refreshed = false;
  s->outlier_ctx.self_netns = netns_self_inum();
  int64_t err = ebpf_ring_read(&s->outliers, ebpf_ring_budget_ns());
  if (err < 0)
    E_WARNING("netstacklat: reading outlier records failed: %s",
              ERRSTR((int)err));
  else
    ebpf_ring_note(&s->outliers, FEATURE ": OutlierThreshold",
                   "the outliers that find it full are counted in "
                   "outliers_suppressed");
  __u64 vals[s->ncpus], suppressed = 0;
  __u32 zero = 0;
  if (bpf_map_lookup_elem(
          bpf_map__fd(s->skel->maps.netstacklat_outliers_suppressed), &zero,
          vals) == 0)
    for (int c = 0; c < s->ncpus; c++)
      suppressed += vals[c];
  submit_derive(FEATURE, "", "operations", "outliers",
                (int64_t)s->outlier_ctx.notified);
  submit_derive(FEATURE, "", "operations", "outliers_suppressed",
                (int64_t)suppressed);
}
