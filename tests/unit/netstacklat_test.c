/* netstacklat's dispatch of one histogram against the previous read: the
 * mean must stay the mean of the interval's events when the counters were
 * reset (a group deleted and made again starts from zero). */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/netstacklat.c"
#include "mock_collectd.h"
#include "testlib.h"

static void setup(void) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_bool(mock_ci("Buckets"), 0));
  netstacklat_config_entry(b);
  mock_ci_free(b);
  mock_reset();
}

static value_list_t vl_h; /* plugin_instance "h" */

static void dispatch_h(const struct nsl_hist *now, const struct nsl_hist *before,
                       double elapsed) {
  vl_prepare(&vl_h, FEATURE, "h");
  dispatch(NSL_IP_START, &vl_h, now, before, elapsed);
}

static double got(const char *ti) {
  const struct mock_value *v = mock_find("netstacklat", "h", "latency", ti);
  return v ? v->v.gauge : -1;
}

/* A group with 100 events of 50 us, deleted, made again with 3 of 20 us. */
DEF_TEST(avg_after_bucket_reset) {
  struct nsl_hist before = {0}, now = {0};
  before.bucket[hist_bucket_of(50000)] = 100;
  before.sum_ns = 100 * 50000ULL;
  now.bucket[hist_bucket_of(20000)] = 3;
  now.sum_ns = 3 * 20000ULL;
  setup();
  dispatch_h(&now, &before, 1.0);
  double avg = got("avg");
  if (!(fabs(avg - 20e-6) < 1e-12))
    FAILF("latency-avg %g s, want 2e-05 s (the 3 new events)", avg);
  return 0;
}

/* Only the sum shows the reset: every bucket grew, the sum went down
 * (a 1.07 s event before, a 0.55 s one after). */
DEF_TEST(avg_after_sum_reset) {
  struct nsl_hist before = {0}, now = {0};
  before.bucket[hist_bucket_of(31000)] = 1;
  before.bucket[hist_bucket_of(1070000000)] = 1;
  before.sum_ns = 31000ULL + 1070000000ULL;
  now.bucket[hist_bucket_of(17000)] = 2;
  now.bucket[hist_bucket_of(550000000)] = 1;
  now.sum_ns = 2 * 17000ULL + 550000000ULL;
  CHECK_EQ_INT(hist_bucket_of(31000), hist_bucket_of(17000));
  CHECK_EQ_INT(hist_bucket_of(1070000000), hist_bucket_of(550000000));
  setup();
  dispatch_h(&now, &before, 1.0);
  double avg = got("avg"), want = (double)now.sum_ns / 3 / 1e9;
  if (!(fabs(avg - want) < 1e-9))
    FAILF("latency-avg %g s, want %g s", avg, want);
  return 0;
}

/* No reset: the interval's own events. */
DEF_TEST(avg_plain_delta) {
  struct nsl_hist before = {0}, now = {0};
  before.bucket[hist_bucket_of(50000)] = 100;
  before.sum_ns = 100 * 50000ULL;
  now = before;
  now.bucket[hist_bucket_of(2000000)] += 4;
  now.sum_ns += 4 * 2000000ULL;
  setup();
  dispatch_h(&now, &before, 1.0);
  double avg = got("avg");
  if (!(fabs(avg - 2e-3) < 1e-12))
    FAILF("latency-avg %g s, want 0.002 s", avg);
  return 0;
}

static void setup_sampled(double n) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_num(mock_ci("SampleEvery"), n));
  mock_child(b, mock_bool(mock_ci("Buckets"), 1));
  netstacklat_config_entry(b);
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
  now.bucket[hist_bucket_of(3000)] = 150;
  now.bucket[hist_bucket_of(100000)] = 50;
  now.sum_ns = 150 * 3000ULL + 50 * 100000ULL;
  setup_sampled(16);
  value_list_t vl;
  vl_prepare(&vl, FEATURE, "h");
  dispatch(NSL_UDP_SOCKET_READ, &vl, &now, &before, 2.0);
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
  double ref = hist_quantile_ns((const uint64_t *)now.bucket, 0.5) / 1e9;
  if (fabs(p50 - ref) > 1e-12)
    FAILF("latency-p50 %g s, want %g s (unscaled)", p50, ref);
  return 0;
}

/* Every identifier dispatch() gives, for every hook, ungrouped (the names
 * prepared at config) and grouped (a name made from the group), with every
 * bucket and both IncludeHOLBlocked settings, is exactly what the plugin
 * dispatched before the names were prepared once: tests/data/identifiers/
 * netstacklat.txt is the old code's output, less skipped-map_full (which
 * dispatch() only ever gave as 0: netstacklat_read() dispatches it). */
#define IDENTS "tests/data/identifiers/netstacklat.txt"
DEF_TEST(identifiers_unchanged) {
  oconfig_item_t *b = mock_ci("Netstacklat");
  mock_child(b, mock_bool(mock_ci("Buckets"), 1));
  netstacklat_config_entry(b);
  mock_ci_free(b);
  FILE *f = fopen(IDENTS, "r");
  if (!f)
    FAILF("cannot open %s", IDENTS);
  char want[512], got_id[512];
  int line = 0, bad = 0;
  for (int inc = 0; inc < 2; inc++) {
    cfg.include_hol = inc;
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
          snprintf(cur.inst, sizeof(cur.inst), "%s-%s", hook_names[h],
                   "system.slice_x.service");
          p = cur;
          value_list_t vl;
          vl_prepare(&vl, FEATURE, p.inst);
          dispatch(h, &vl, &now, &before, 1.0);
        } else {
          dispatch(h, &hook_vl[h], &now, &before, 1.0);
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
  if (!group_name(&cur->key, gname, &hash, &refreshed))
    return false;
  group_inst(cur, p, gname);
  return true;
}

DEF_TEST(group_name_kept_and_renewed) {
  static struct nsl_if_group g = {.group = 7, .name = "eth0"};
  ifnames.v = &g;
  ifnames.n = 1;
  cfg.groupby = NSL_GROUP_INTERFACE;
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
  ifnames.v = NULL;
  ifnames.n = 0;
  cfg.groupby = NSL_GROUP_NONE;
  return 0;
}

int main(void) {
  tl_prog = "netstacklat";
  RUN_TEST(avg_after_bucket_reset);
  RUN_TEST(avg_after_sum_reset);
  RUN_TEST(avg_plain_delta);
  RUN_TEST(sample_every_scales_buckets_only);
  RUN_TEST(identifiers_unchanged);
  RUN_TEST(group_name_kept_and_renewed);
  END_TEST;
}
