/* netstacklat's dispatch of one histogram against the previous read: the
 * mean must stay the mean of the interval's events when the counters were
 * reset (a group deleted and made again starts from zero). */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/netstacklat/config.c"
#include "../../plugin/netstacklat/read.c"
#include "../../plugin/netstacklat/groups.c"
#include "mock_collectd.h"
#include "testlib.h"

/* The state the entry points would own. */
static struct nsl_state state = {.ts_sock = -1};

static void setup(void) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_bool(mock_ci("Buckets"), 0));
  nsl_configure(&state, b);
  mock_ci_free(b);
  mock_reset();
}

static value_list_t vl_h; /* plugin_instance "h" */

static void dispatch_h(const struct nsl_hist *now, const struct nsl_hist *before,
                       double elapsed) {
  vl_prepare(&vl_h, FEATURE, "h");
  static uint64_t le[MAX_BOUNDS];
  nsl_dispatch(&state, NSL_IP_START, &vl_h, now, before, elapsed, le);
}

static double got(const char *ti) {
  const struct mock_value *v = mock_find("netstacklat", "h", "latency", ti);
  return v ? v->v.gauge : -1;
}

/* A group with 100 events of 50 us, deleted, made again with 3 of 20 us:
 * the count went down. */
DEF_TEST(avg_after_count_reset) {
  struct nsl_hist before = {0}, now = {0};
  before.bucket[hist_fine_of(50000)] = 100;
  before.count = 100;
  before.sum_ns = 100 * 50000ULL;
  now.bucket[hist_fine_of(20000)] = 3;
  now.count = 3;
  now.sum_ns = 3 * 20000ULL;
  setup();
  dispatch_h(&now, &before, 1.0);
  double avg = got("avg"), p50 = got("p50");
  if (!(fabs(avg - 20e-6) < 1e-12))
    FAILF("latency-avg %g s, want 2e-05 s (the 3 new events)", avg);
  if (!(fabs(p50 - 20e-6) <= 20e-6 * HIST_REL_ERR))
    FAILF("latency-p50 %g s, want 2e-05 s within 4%%", p50);
  return 0;
}

/* Only the sum shows the reset: the count grew, the sum went down (a
 * 1.07 s event before, a 0.55 s one after). */
DEF_TEST(avg_after_sum_reset) {
  struct nsl_hist before = {0}, now = {0};
  before.bucket[hist_fine_of(31000)] = 1;
  before.bucket[hist_fine_of(1070000000)] = 1;
  before.count = 2;
  before.sum_ns = 31000ULL + 1070000000ULL;
  now.bucket[hist_fine_of(17000)] = 2;
  now.bucket[hist_fine_of(550000000)] = 1;
  now.count = 3;
  now.sum_ns = 2 * 17000ULL + 550000000ULL;
  setup();
  dispatch_h(&now, &before, 1.0);
  double avg = got("avg"), want = (double)now.sum_ns / 3 / 1e9;
  if (!(fabs(avg - want) < 1e-9))
    FAILF("latency-avg %g s, want %g s", avg, want);
  double max = got("max");
  if (!(max >= 0.55 && max <= 0.55 * 1.0625))
    FAILF("latency-max %g s, want 0.55 s within one fine bucket", max);
  return 0;
}

/* No reset: the interval's own events, also across a 32-bit wrap. */
DEF_TEST(avg_plain_delta) {
  struct nsl_hist before = {0}, now = {0};
  before.bucket[hist_fine_of(50000)] = 100;
  before.bucket[hist_fine_of(2000000)] = UINT32_MAX - 1;
  before.count = 100 + (uint64_t)UINT32_MAX - 1;
  before.sum_ns = 100 * 50000ULL;
  now = before;
  now.bucket[hist_fine_of(2000000)] += 4; /* wraps to 2 */
  now.count += 4;
  now.sum_ns += 4 * 2000000ULL;
  CHECK_EQ_INT(2, now.bucket[hist_fine_of(2000000)]);
  setup();
  dispatch_h(&now, &before, 1.0);
  double avg = got("avg"), p99 = got("p99");
  if (!(fabs(avg - 2e-3) < 1e-12))
    FAILF("latency-avg %g s, want 0.002 s", avg);
  if (!(fabs(p99 - 2e-3) <= 2e-3 * HIST_REL_ERR))
    FAILF("latency-p99 %g s, want 0.002 s within 4%%", p99);
  return 0;
}

static void setup_sampled(double n) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_num(mock_ci("SampleEvery"), n));
  mock_child(b, mock_bool(mock_ci("Buckets"), 1));
  nsl_configure(&state, b);
  mock_ci_free(b);
  mock_reset();
}

static double got_t(const char *type, const char *ti) {
  const struct mock_value *v = mock_find("netstacklat", "h", type, ti);
  return !v ? -1 : !strcmp(type, "operations") ? (double)v->v.derive
                                               : v->v.gauge;
}

/* SampleEvery 16: operations is the exact count, bucket rates are the
 * timed counts x 16, quantiles and mean those of the timed events. */
DEF_TEST(sample_every_scales_buckets_only) {
  struct nsl_hist before = {0}, now = {0};
  before.count = 1000;
  now.count = 1000 + 3200; /* 200 timed of 3200 */
  now.bucket[hist_fine_of(3000)] = 150;
  now.bucket[hist_fine_of(100000)] = 50;
  now.sum_ns = 150 * 3000ULL + 50 * 100000ULL;
  setup_sampled(16);
  value_list_t vl;
  vl_prepare(&vl, FEATURE, "h");
  uint64_t le[MAX_BOUNDS] = {0};
  nsl_dispatch(&state, NSL_UDP_SOCKET_READ, &vl, &now, &before, 2.0, le);
  CHECK_EQ_INT(4200, (long long)got_t("operations", ""));
  char b1[64], b2[64];
  hist_bucket_name(hist_bucket_of(3000), b1, sizeof(b1));
  hist_bucket_name(hist_bucket_of(100000), b2, sizeof(b2));
  if (fabs(got_t("bucket", b1) - 150 * 16 / 2.0) > 1e-9 ||
      fabs(got_t("bucket", b2) - 50 * 16 / 2.0) > 1e-9)
    FAILF("bucket rates %g %g /s, want 1200 400", got_t("bucket", b1),
          got_t("bucket", b2));
  double avg = got_t("latency", "avg"), want = (double)now.sum_ns / 200 / 1e9;
  if (fabs(avg - want) > 1e-12)
    FAILF("latency-avg %g s, want %g s", avg, want);
  double p50 = got_t("latency", "p50");
  uint64_t fine[HIST_NFINE];
  for (unsigned i = 0; i < HIST_NFINE; i++)
    fine[i] = now.bucket[i];
  double ref = hist_quantile_ns(fine, 0.5) / 1e9;
  if (fabs(p50 - ref) > 1e-12)
    FAILF("latency-p50 %g s, want %g s (unscaled)", p50, ref);
  return 0;
}

/* SampleEvery auto: each hook's buckets (and BucketBounds) scaled by the
 * N that hook had during the interval, another hook's N left alone;
 * operations exact. */
DEF_TEST(sample_every_auto_scales_by_the_hooks_n) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_str(mock_ci("SampleEvery"), "auto"));
  mock_child(b, mock_bool(mock_ci("Buckets"), 1));
  mock_child(b, mock_num(mock_ci("BucketBounds"), 0.00001));
  CHECK_EQ_INT(0, nsl_configure(&state, b));
  mock_ci_free(b);
  mock_reset();
  state.n_used[NSL_UDP_SOCKET_READ] = 8;
  state.n_used[NSL_TCP_SOCKET_READ] = 2;
  memset(state.hook_events, 0, sizeof(state.hook_events));
  struct nsl_hist before = {0}, now = {0};
  now.count = 800; /* 100 timed of 800 */
  now.bucket[hist_fine_of(3000)] = 100;
  now.sum_ns = 100 * 3000ULL;
  value_list_t vl;
  vl_prepare(&vl, FEATURE, "h");
  uint64_t le[MAX_BOUNDS] = {0};
  nsl_dispatch(&state, NSL_UDP_SOCKET_READ, &vl, &now, &before, 2.0, le);
  CHECK_EQ_INT(800, (long long)got_t("operations", ""));
  char b1[64];
  hist_bucket_name(hist_bucket_of(3000), b1, sizeof(b1));
  if (fabs(got_t("bucket", b1) - 100 * 8 / 2.0) > 1e-9)
    FAILF("bucket rate %g /s, want 400 (100 timed x N 8 / 2 s)", got_t("bucket", b1));
  CHECK_EQ_INT(800, (long long)le[0]);
  CHECK_EQ_INT(800, (long long)state.hook_events[NSL_UDP_SOCKET_READ]);
  state.n_used[NSL_UDP_SOCKET_READ] = state.n_used[NSL_TCP_SOCKET_READ] = 1;
  memset(state.hook_events, 0, sizeof(state.hook_events));
  cfg_defaults(&state.cfg);
  return 0;
}

/* Every identifier nsl_dispatch() gives, for every hook, ungrouped (the names
 * prepared at config) and grouped (a name made from the group), with every
 * bucket and both IncludeHOLBlocked settings, is exactly what the plugin
 * dispatched before the names were prepared once: tests/data/identifiers/
 * netstacklat.txt is the old code's output, less skipped-map_full (which
 * nsl_dispatch() only ever gave as 0: nsl_read_hooks() dispatches it). */
#define IDENTS "tests/data/identifiers/netstacklat.txt"
DEF_TEST(identifiers_unchanged) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_bool(mock_ci("Buckets"), 1));
  nsl_configure(&state, b);
  mock_ci_free(b);
  FILE *f = fopen(IDENTS, "r");
  if (!f)
    FAILF("cannot open %s", IDENTS);
  char want[512], got_id[512];
  int line = 0, bad = 0;
  for (int inc = 0; inc < 2; inc++) {
    state.cfg.include_hol = inc;
    for (__u32 h = 0; h < NSL_NHOOKS; h++) {
      struct nsl_hist now = {0}, before = {0};
      now.bucket[3] = 5;
      now.sum_ns = 5000;
      for (int grouped = 0; grouped < 2; grouped++) {
        mock_reset();
        if (grouped) {
          /* As read_grouped() names a group seen for the first time, then
           * again from the previous interval's name. */
          struct group_prev cur = {.key = {.hook = h}}, p;
          snprintf(cur.inst, sizeof(cur.inst), "%s-%s", nsl_hook_names[h],
                   "system.slice_x.service");
          p = cur;
          value_list_t vl;
          vl_prepare(&vl, FEATURE, p.inst);
          nsl_dispatch(&state, h, &vl, &now, &before, 1.0, p.le);
        } else {
          nsl_dispatch(&state, h, &state.hook_vl[h], &now, &before, 1.0,
                   state.prev_le[h]);
        }
        for (int i = 0; i < mock_nvalues; i++) {
          const value_list_t *v = &mock_values[i].vl;
          snprintf(got_id, sizeof(got_id), "%d %s/%s/%s/%s\n", inc, v->plugin,
                   v->plugin_instance, v->type, v->type_instance);
          line++;
          if (!fgets(want, sizeof(want), f))
            want[0] = 0;
          if (strcmp(want, got_id) && bad++ < 5)
            printf("  line %d: got %s  want %s", line, got_id,
                   want[0] ? want : "(end)\n");
        }
      }
    }
  }
  if (fgets(want, sizeof(want), f) && bad++ < 5)
    printf("  line %d: want %s  got (end)\n", line + 1, want);
  fclose(f);
  CHECK_EQ_INT(0, bad);
  CHECK(line > 7 * 2 * 2 * 26);
  return 0;
}

/* A group's name is made once, kept while the group keeps its name, made
 * again when that changes (an interface renamed), and the group is gone
 * when it has no name. */
static bool name_it(struct group_prev *cur, const struct group_prev *p) {
  char gname[EBPF_NAME_LEN];
  bool refreshed = false;
  uint32_t hash;
  if (!group_name(&state, &cur->key, gname, &hash, &refreshed))
    return false;
  group_inst(cur, p, gname);
  return true;
}

DEF_TEST(group_name_kept_and_renewed) {
  static struct nsl_if_group g = {.group = 7, .name = "eth0"};
  state.ifnames.v = &g;
  state.ifnames.n = 1;
  state.cfg.groupby = NSL_GROUP_INTERFACE;
  struct group_prev a = {.key = {.hook = NSL_UDP_SOCKET_READ, .group = 7}};
  struct group_prev b = a, c = a, d = a;
  CHECK(name_it(&a, NULL));
  CHECK(!strcmp(a.inst, "udp_socket_read-eth0"));
  CHECK(name_it(&b, &a));
  CHECK(!strcmp(b.inst, "udp_socket_read-eth0"));
  strcpy(g.name, "eth0x");
  CHECK(name_it(&c, &b));
  CHECK(!strcmp(c.inst, "udp_socket_read-eth0x"));
  strcpy(g.name, "eth");
  CHECK(name_it(&d, &c));
  CHECK(!strcmp(d.inst, "udp_socket_read-eth"));
  g.gone = true;
  CHECK(!name_it(&d, &c));
  state.ifnames.v = NULL;
  state.ifnames.n = 0;
  state.cfg.groupby = NSL_GROUP_NONE;
  return 0;
}

static void setup_bounds(const double *b, int n, double sample) {
  oconfig_item_t *c = mock_ci("Netstacklat");
  oconfig_item_t *bb = mock_ci("BucketBounds");
  for (int i = 0; i < n; i++)
    mock_num(bb, b[i]);
  mock_child(c, bb);
  mock_child(c, mock_num(mock_ci("SampleEvery"), sample));
  nsl_configure(&state, c);
  mock_ci_free(c);
  mock_reset();
}

static int64_t le_of(uint64_t ns) {
  char ti[32];
  snprintf(ti, sizeof(ti), "le_%llu", (unsigned long long)ns);
  const struct mock_value *v = mock_find("netstacklat", "h", "operations", ti);
  return v ? v->v.derive : -1;
}

/* BucketBounds: per bound, the events at or below it, cumulative, also
 * across a reset of the kernel's counters, times SampleEvery. */
DEF_TEST(bucket_bounds_cumulative) {
  static const double b[] = {0.01, 0.001}; /* 10 ms rounds to an edge */
  setup_bounds(b, 2, 1);
  CHECK_EQ_INT(2, state.cfg.nbounds);
  CHECK_EQ_U64(1015808, state.cfg.bounds[0]); /* nearest fine edge to 1 ms */
  CHECK_EQ_U64(hist_fine_edge_near(10000000), state.cfg.bounds[1]);
  CHECK_EQ_U64(9961472, state.cfg.bounds[1]);
  struct nsl_hist before = {0}, now = {0};
  uint64_t le[MAX_BOUNDS] = {0};
  now.bucket[hist_fine_of(500000)] = 7;   /* 0.5 ms: below both */
  now.bucket[hist_fine_of(5000000)] = 5;  /* 5 ms: below 10 ms */
  now.bucket[hist_fine_of(50000000)] = 3; /* 50 ms: above both */
  now.count = 15;
  now.sum_ns = 7 * 500000ULL + 5 * 5000000ULL + 3 * 50000000ULL;
  vl_prepare(&vl_h, FEATURE, "h");
  nsl_dispatch(&state, NSL_IP_START, &vl_h, &now, &before, 1.0, le);
  CHECK_EQ_INT(7, le_of(1015808));
  CHECK_EQ_INT(12, le_of(9961472));
  /* the next interval: 2 more below 1 ms */
  before = now;
  now.bucket[hist_fine_of(500000)] += 2;
  now.count += 2;
  now.sum_ns += 2 * 500000ULL;
  mock_reset();
  nsl_dispatch(&state, NSL_IP_START, &vl_h, &now, &before, 1.0, le);
  CHECK_EQ_INT(9, le_of(1015808));
  CHECK_EQ_INT(14, le_of(9961472));
  /* reset (count down): the counters only grow */
  before = now;
  memset(&now, 0, sizeof(now));
  now.bucket[hist_fine_of(5000000)] = 1;
  now.count = 1;
  now.sum_ns = 5000000;
  mock_reset();
  nsl_dispatch(&state, NSL_IP_START, &vl_h, &now, &before, 1.0, le);
  CHECK_EQ_INT(9, le_of(1015808));
  CHECK_EQ_INT(15, le_of(9961472));
  /* SampleEvery 4: timed events times 4 */
  setup_bounds(b, 2, 4);
  uint64_t le4[MAX_BOUNDS] = {0};
  memset(&before, 0, sizeof(before));
  nsl_dispatch(&state, NSL_IP_START, &vl_h, &now, &before, 1.0, le4);
  CHECK_EQ_INT(4, le_of(9961472));
  /* at most 32 bounds in all (distinct after rounding) */
  oconfig_item_t *c = mock_ci("Netstacklat");
  oconfig_item_t *bb = mock_ci("BucketBounds");
  for (int i = 0; i < 33; i++)
    mock_num(bb, 1e-5 * pow(1.3, i)); /* 33 distinct edges */
  mock_child(c, bb);
  state.cfg.nbounds = 0;
  CHECK(netstacklat_config(&state.cfg, c) != 0);
  mock_ci_free(c);
  state.cfg.nbounds = 0;
  return 0;
}

int main(void) {
  tl_prog = "netstacklat";
  RUN_TEST(avg_after_count_reset);
  RUN_TEST(avg_after_sum_reset);
  RUN_TEST(avg_plain_delta);
  RUN_TEST(sample_every_scales_buckets_only);
  RUN_TEST(sample_every_auto_scales_by_the_hooks_n);
  RUN_TEST(identifiers_unchanged);
  RUN_TEST(bucket_bounds_cumulative);
  RUN_TEST(group_name_kept_and_renewed);
  END_TEST;
}
