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
  dispatch(NSL_IP_START, "h", &now, &before, 1.0);
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
  dispatch(NSL_IP_START, "h", &now, &before, 1.0);
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
  dispatch(NSL_IP_START, "h", &now, &before, 1.0);
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
  dispatch(NSL_UDP_SOCKET_READ, "h", &now, &before, 2.0);
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

int main(void) {
  tl_prog = "netstacklat";
  RUN_TEST(avg_after_bucket_reset);
  RUN_TEST(avg_after_sum_reset);
  RUN_TEST(avg_plain_delta);
  RUN_TEST(sample_every_scales_buckets_only);
  END_TEST;
}
