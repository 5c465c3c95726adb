/* Unit tests for plugin/common/hist.c: log2 and fine bucket bounds, names and
 * slot functions, the log2 sums of fine buckets, the delta of wrapping
 * 32-bit counters, and the estimator's bound: every quantile estimate
 * within HIST_REL_ERR of the exact quantile of the samples (sorted, rank
 * max(1, ceil(q n))), for many distributions and every q. */
#include "testlib.h"

#include "../../plugin/common/hist.c"

#define P2(n) (UINT64_C(1) << (n))

DEF_TEST(bucket_bounds) {
  CHECK_EQ_U64(0, hist_bucket_lo(0));
  CHECK_EQ_U64(1024, hist_bucket_hi(0));
  for (unsigned k = 1; k < HIST_NBUCKETS - 1; k++) {
    CHECK_EQ_U64(P2(9 + k), hist_bucket_lo(k));
    CHECK_EQ_U64(P2(10 + k), hist_bucket_hi(k));
    CHECK_EQ_U64(hist_bucket_hi(k - 1), hist_bucket_lo(k)); /* contiguous */
  }
  CHECK_EQ_U64(P2(34), hist_bucket_lo(25));
  CHECK_EQ_U64(UINT64_MAX, hist_bucket_hi(25));
  CHECK_EQ_U64(hist_bucket_hi(24), hist_bucket_lo(25));
  CHECK_EQ_U64(P2(34), hist_bucket_hi(24));
  /* out of range */
  CHECK_EQ_U64(UINT64_MAX, hist_bucket_lo(HIST_NBUCKETS));
  CHECK_EQ_U64(UINT64_MAX, hist_bucket_hi(HIST_NBUCKETS));
  CHECK_EQ_U64(UINT64_MAX, hist_bucket_lo(1000));
  return 0;
}

DEF_TEST(bucket_names) {
  char buf[64], want[64];
  CHECK_EQ_INT(6, hist_bucket_name(0, buf, sizeof(buf)));
  CHECK_EQ_STR("0_1024", buf);
  CHECK_EQ_INT(9, hist_bucket_name(1, buf, sizeof(buf)));
  CHECK_EQ_STR("1024_2048", buf);
  hist_bucket_name(24, buf, sizeof(buf));
  CHECK_EQ_STR("8589934592_17179869184", buf);
  CHECK_EQ_INT(15, hist_bucket_name(25, buf, sizeof(buf)));
  CHECK_EQ_STR("17179869184_inf", buf);
  for (unsigned k = 0; k < HIST_NBUCKETS; k++) {
    if (k == HIST_NBUCKETS - 1)
      snprintf(want, sizeof(want), "%llu_inf",
               (unsigned long long)P2(9 + k));
    else
      snprintf(want, sizeof(want), "%llu_%llu",
               k == 0 ? 0ULL : (unsigned long long)P2(9 + k),
               (unsigned long long)P2(10 + k));
    int n = hist_bucket_name(k, buf, sizeof(buf));
    CHECK_EQ_STR(want, buf);
    CHECK_EQ_INT(strlen(want), n);
    /* truncation behaves like snprintf */
    char small[5];
    CHECK_EQ_INT(n, hist_bucket_name(k, small, sizeof(small)));
    CHECK_EQ_INT(4, strlen(small));
    CHECK_EQ_INT(n, hist_bucket_name(k, NULL, 0));
  }
  strcpy(buf, "junk");
  CHECK_EQ_INT(-1, hist_bucket_name(HIST_NBUCKETS, buf, sizeof(buf)));
  CHECK_EQ_STR("", buf);
  return 0;
}

DEF_TEST(bucket_of_boundaries) {
  CHECK_EQ_INT(0, hist_bucket_of(0));
  CHECK_EQ_INT(0, hist_bucket_of(1));
  CHECK_EQ_INT(0, hist_bucket_of(1023));
  CHECK_EQ_INT(0, hist_bucket_of(1024));
  CHECK_EQ_INT(1, hist_bucket_of(1025));
  CHECK_EQ_INT(1, hist_bucket_of(2048));
  CHECK_EQ_INT(2, hist_bucket_of(2049));
  CHECK_EQ_INT(24, hist_bucket_of(P2(34)));
  CHECK_EQ_INT(25, hist_bucket_of(P2(34) + 1));
  CHECK_EQ_INT(25, hist_bucket_of(P2(40)));
  CHECK_EQ_INT(25, hist_bucket_of(P2(63)));
  CHECK_EQ_INT(25, hist_bucket_of(UINT64_MAX));
  /* every bound of every bucket, both sides */
  for (unsigned k = 0; k < HIST_NBUCKETS; k++) {
    uint64_t lo = hist_bucket_lo(k), hi = hist_bucket_hi(k);
    if (k == 0)
      CHECK_EQ_INT(0, hist_bucket_of(lo));
    else
      CHECK_EQ_INT(k - 1, hist_bucket_of(lo));
    CHECK_EQ_INT(k, hist_bucket_of(lo + 1));
    CHECK_EQ_INT(k, hist_bucket_of(hi));
    CHECK_EQ_INT(k, hist_bucket_of(hi - 1));
    if (k < HIST_NBUCKETS - 1)
      CHECK_EQ_INT(k + 1, hist_bucket_of(hi + 1));
    CHECK_EQ_INT(k, hist_bucket_of(lo + (hi - lo) / 2));
  }
  return 0;
}

/* splitmix64: fixed seeds, reproducible everywhere */
static uint64_t rng_state;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double rng_unit(void) { /* [0, 1) */
  return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

DEF_TEST(bucket_of_random) {
  /* against the definition: k = smallest with value <= hi(k) */
  rng_state = 7;
  for (int i = 0; i < 1000000; i++) {
    uint64_t v = rng_next() >> (rng_next() % 64);
    unsigned k = hist_bucket_of(v);
    CHECK(k < HIST_NBUCKETS);
    CHECK(v <= hist_bucket_hi(k));
    if (k > 0)
      CHECK(v > hist_bucket_lo(k));
  }
  return 0;
}

DEF_TEST(fine_bounds) {
  CHECK_EQ_U64(0, hist_fine_lo(0));
  CHECK_EQ_U64(512, hist_fine_hi(0));
  CHECK_EQ_U64(512, hist_fine_lo(1));
  CHECK_EQ_U64(544, hist_fine_hi(1)); /* 512 + 512/16 */
  CHECK_EQ_U64(1024, hist_fine_hi(16));
  CHECK_EQ_U64(1024, hist_fine_lo(17));
  CHECK_EQ_U64(1088, hist_fine_hi(17));
  CHECK_EQ_U64(P2(34), hist_fine_hi(HIST_NFINE - 2));
  CHECK_EQ_U64(P2(34), hist_fine_lo(HIST_NFINE - 1));
  CHECK_EQ_U64(UINT64_MAX, hist_fine_hi(HIST_NFINE - 1));
  CHECK_EQ_U64(UINT64_MAX, hist_fine_lo(HIST_NFINE));
  CHECK_EQ_INT(402, HIST_NFINE);
  for (unsigned i = 1; i < HIST_NFINE; i++) {
    CHECK_EQ_U64(hist_fine_hi(i - 1), hist_fine_lo(i)); /* contiguous */
    if (i < HIST_NFINE - 1) {
      uint64_t lo = hist_fine_lo(i), hi = hist_fine_hi(i);
      /* at most 1/16 of the lower bound wide */
      CHECK(hi > lo && (hi - lo) * 16 <= lo);
      CHECK_EQ_INT(i, hist_fine_of(hi));
      CHECK_EQ_INT(i, hist_fine_of(lo + 1));
      CHECK_EQ_INT(i - 1, hist_fine_of(lo));
    }
  }
  CHECK_EQ_INT(0, hist_fine_of(0));
  CHECK_EQ_INT(0, hist_fine_of(512));
  CHECK_EQ_INT(1, hist_fine_of(513));
  CHECK_EQ_INT(HIST_NFINE - 1, hist_fine_of(P2(34) + 1));
  CHECK_EQ_INT(HIST_NFINE - 1, hist_fine_of(UINT64_MAX));
  return 0;
}

/* Each log2 bucket is exactly the sum of the fine buckets inside it:
 * Buckets true gives the same counts as before fine buckets. */
DEF_TEST(fine_sum_to_log2) {
  for (unsigned i = 0; i < HIST_NFINE; i++) {
    unsigned k = hist_fine_coarse(i);
    CHECK(k < HIST_NBUCKETS);
    CHECK(hist_fine_lo(i) >= hist_bucket_lo(k));
    CHECK(hist_fine_hi(i) <= hist_bucket_hi(k));
  }
  rng_state = 11;
  uint64_t fine[HIST_NFINE] = {0}, want[HIST_NBUCKETS] = {0},
           coarse[HIST_NBUCKETS];
  for (int n = 0; n < 200000; n++) {
    uint64_t v = rng_next() >> (rng_next() % 64);
    fine[hist_fine_of(v)]++;
    want[hist_bucket_of(v)]++;
    CHECK_EQ_INT(hist_bucket_of(v), hist_fine_coarse(hist_fine_of(v)));
  }
  hist_coarse(fine, coarse);
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    CHECK_EQ_U64(want[k], coarse[k]);
  return 0;
}

DEF_TEST(total_and_wrapping_delta) {
  uint32_t prev[HIST_NFINE] = {0}, now[HIST_NFINE] = {0};
  uint64_t out[HIST_NFINE];
  prev[3] = 10;
  now[3] = 14;
  prev[100] = UINT32_MAX - 5; /* wrapped between the reads: +16 */
  now[100] = 10;
  prev[401] = 7;
  now[401] = 7;
  CHECK_EQ_U64(20, hist_fine_delta(now, prev, 0, out));
  CHECK_EQ_U64(4, out[3]);
  CHECK_EQ_U64(16, out[100]);
  CHECK_EQ_U64(0, out[401]);
  /* reset (seen in the 64-bit count or sum): the new counts */
  CHECK_EQ_U64(31, hist_fine_delta(now, prev, 1, out));
  CHECK_EQ_U64(14, out[3]);
  CHECK_EQ_U64(10, out[100]);
  /* hist_total saturates */
  uint64_t big[4] = {UINT64_MAX - 1, 0, 10, 0};
  CHECK_EQ_U64(UINT64_MAX, hist_total(big, 4));
  return 0;
}

/* ---- quantiles against the exact quantiles of the samples ------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double worst_rel; /* the largest relative error seen */

/* Bins v[0..n), then checks the estimate of every q in 0, 0.001, ..., 1
 * (and the usual percentiles) against the exact quantile of the samples:
 * within HIST_REL_ERR between 512 ns and 2^34 ns, within 512 ns below,
 * 2^34 above; monotone in q; the max within one fine bucket above the
 * true max, never below it. */
static int check_dataset(const char *what, uint64_t *v, size_t n) {
  uint64_t c[HIST_NFINE] = {0};
  for (size_t i = 0; i < n; i++)
    c[hist_fine_of(v[i])]++;
  CHECK_EQ_U64(n, hist_total(c, HIST_NFINE));

  if (n == 0) {
    CHECK(isnan(hist_quantile_ns(c, 0.5)));
    CHECK(isnan(hist_max_ns(c)));
    return 0;
  }

  qsort(v, n, sizeof(v[0]), cmp_u64);
  double last = -1;
  for (int qi = 0; qi <= 1004; qi++) {
    static const double extra[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    double q = qi <= 1000 ? qi / 1000.0 : extra[qi - 1001];
    double r = q * (double)n;
    double cr = ceil(r);
    size_t rank = cr < 1 ? 1 : (size_t)cr; /* 1-based */
    if (rank > n)
      rank = n;
    uint64_t truth = v[rank - 1];
    double est = hist_quantile_ns(c, q);
    if (truth > P2(34)) {
      if (est != (double)P2(34))
        FAILF("%s n=%zu q=%g: est %.17g, want 2^34 (true %llu)", what, n, q,
              est, (unsigned long long)truth);
    } else if (truth <= 512) {
      if (!(est >= 0 && est <= 512))
        FAILF("%s n=%zu q=%g: est %.17g, true %llu: not in [0, 512]", what,
              n, q, est, (unsigned long long)truth);
    } else {
      double rel = fabs(est - (double)truth) / (double)truth;
      if (rel > worst_rel)
        worst_rel = rel;
      if (!(rel <= HIST_REL_ERR + 1e-12))
        FAILF("%s n=%zu q=%g: est %.17g, true %llu: off by %.2f%%", what, n,
              q, est, (unsigned long long)truth, rel * 100);
    }
    if (qi <= 1000) {
      if (!(est >= last))
        FAILF("%s n=%zu: quantile not monotone at q=%g", what, n, q);
      last = est;
    }
  }

  uint64_t tmax = v[n - 1];
  double m = hist_max_ns(c);
  if (tmax > P2(34)) {
    CHECK(m == (double)P2(34));
  } else if (!(m >= (double)tmax && (tmax <= 512 ? m <= 512
                                                 : m <= tmax * 1.0625))) {
    FAILF("%s n=%zu: max %.17g, true max %llu", what, n, m,
          (unsigned long long)tmax);
  }
  CHECK(hist_quantile_ns(c, 1.0) <= m);
  return 0;
}

/* log-uniform in [lo, hi] ns */
static uint64_t log_uniform(double lo, double hi) {
  double a = log(lo), b = log(hi);
  return (uint64_t)exp(a + (b - a) * rng_unit());
}

/* Normal (Box-Muller), for clusters around a mode. */
static double normal(void) {
  double u = rng_unit(), w = rng_unit();
  if (u < 1e-300)
    u = 1e-300;
  return sqrt(-2 * log(u)) * cos(2 * M_PI * w);
}

static uint64_t around(double mode, double rel_sd) {
  double x = mode * (1 + rel_sd * normal());
  return x < 1 ? 1 : (uint64_t)x;
}

/* Many shapes between 1 us and 10 s, many sizes, every q. */
DEF_TEST(quantile_property_many_distributions) {
  static const size_t sizes[] = {1, 2, 3, 10, 37, 1000, 100000};
  uint64_t *v = malloc(100000 * sizeof(*v));
  CHECK(v != NULL);
  worst_rel = 0;
  for (unsigned shape = 0; shape < 9; shape++)
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
      for (uint64_t seed = 1; seed <= 4; seed++) {
        rng_state = seed * 7919 + shape * 104729 + si;
        size_t n = sizes[si];
        for (size_t i = 0; i < n; i++) {
          double u = rng_unit();
          switch (shape) {
          case 0: /* log-uniform over the whole range */
            v[i] = log_uniform(1e3, 1e10);
            break;
          case 1: /* 70/30: 18 ms and 30 ms, a little jitter */
            v[i] = around(u < 0.7 ? 18e6 : 30e6, 0.01);
            break;
          case 2: /* bimodal us / ms */
            v[i] = around(u < 0.5 ? 8e3 : 3e6, 0.1);
            break;
          case 3: /* long tail: 99% near 200 us, 1% at 40 ms */
            v[i] = around(u < 0.99 ? 200e3 : 40e6, 0.05);
            break;
          case 4: /* exponential, mean 50 us */
            v[i] = (uint64_t)(1000 - 50e3 * log(1 - u));
            break;
          case 5: /* Pareto tail from 20 us */
            v[i] = (uint64_t)fmin(2e4 / pow(1 - u, 1 / 1.2), 1e10);
            break;
          case 6: /* constant: every sample the same value */
            v[i] = 1234567;
            break;
          case 7: /* on fine bucket edges and one past them */
            v[i] = hist_fine_hi(1 + (unsigned)(rng_next() % (HIST_NFINE - 2))) +
                   (rng_next() & 1);
            break;
          default: /* uniform in a narrow band: 1.00 - 1.01 ms */
            v[i] = 1000000 + rng_next() % 10000;
            break;
          }
        }
        char what[32];
        snprintf(what, sizeof(what), "shape %u", shape);
        if (check_dataset(what, v, n) != 0) {
          free(v);
          return -1;
        }
      }
  free(v);
  printf("  worst relative error seen: %.2f%% (bound %.0f%%)\n",
         worst_rel * 100, HIST_REL_ERR * 100);
  CHECK(worst_rel > 0.01); /* the check compares something */
  return 0;
}

DEF_TEST(quantile_empty_and_edges) {
  uint64_t v[1];
  CHECK(check_dataset("empty", v, 0) == 0);

  uint64_t c[HIST_NFINE] = {0};
  CHECK(isnan(hist_quantile_ns(c, 0.5)));
  CHECK(isnan(hist_max_ns(c)));

  /* one fine bucket (1024, 1088]: the estimate moves with q across
   * [1088 * 0.96, 1024 * 1.04] = [1044.48, 1064.96] */
  c[17] = 10;
  CHECK_NEAR(1044.48, hist_quantile_ns(c, 0.0), 1e-9);
  CHECK_NEAR(1044.48 + 20.48 * 0.5, hist_quantile_ns(c, 0.5), 1e-9);
  CHECK_NEAR(1064.96, hist_quantile_ns(c, 1.0), 1e-9);
  CHECK_NEAR(1088.0, hist_max_ns(c), 0);
  /* q outside [0,1] is clamped, NaN q gives NaN */
  CHECK_NEAR(1044.48, hist_quantile_ns(c, -3), 1e-9);
  CHECK_NEAR(1064.96, hist_quantile_ns(c, 7), 1e-9);
  CHECK(isnan(hist_quantile_ns(c, NAN)));
  /* bucket 0: across [0, 512] */
  uint64_t z[HIST_NFINE] = {0};
  z[0] = 4;
  CHECK_NEAR(256.0, hist_quantile_ns(z, 0.5), 1e-9);
  CHECK_NEAR(512.0, hist_max_ns(z), 0);

  /* open bucket */
  c[HIST_NFINE - 1] = 1;
  CHECK_NEAR(17179869184.0, hist_max_ns(c), 0);
  CHECK_NEAR(17179869184.0, hist_quantile_ns(c, 1.0), 0);

  /* huge counts (beyond 2^53) stay inside the right bucket */
  uint64_t h[HIST_NFINE] = {0};
  h[20] = P2(62);
  h[30] = 1;
  double e = hist_quantile_ns(h, 1.0);
  CHECK(e >= (double)hist_fine_lo(30) && e <= (double)hist_fine_hi(30));
  e = hist_quantile_ns(h, 0.999);
  CHECK(e >= (double)hist_fine_lo(20) && e <= (double)hist_fine_hi(20));
  return 0;
}

/* A quantile as the plugin asks for it, a percentile / 100: 99.9 / 100 is
 * 0.99900000000000011, and 1000 events times it is 999.0000000000001,
 * whose ceil() is the maximum's rank, not the 999th (seen in the full
 * run: p99.9 of 1000 reads read at the longest when the two longest were
 * in different buckets). Every percentile of 1 to 4 decimals, and counts
 * that make q n an integer. */
DEF_TEST(quantile_rank_of_a_percentile) {
  static const uint64_t counts[] = {10, 100, 1000, 10000, 100000, 1000000};
  for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
    uint64_t n = counts[k];
    for (unsigned tenth = 1; tenth < 10000; tenth++) {
      double pct = tenth / 100.0; /* 0.01 ... 99.99 */
      double exact = pct / 100.0 * (double)n;
      uint64_t rank = (uint64_t)llround(exact);
      if (fabs(exact - (double)rank) > 1e-6 || rank == 0 || rank >= n)
        continue; /* q n not an integer: no tie to break */
      /* rank events low, the others far above: the rank-th is low */
      uint64_t c[HIST_NFINE] = {0};
      c[hist_fine_of(2000)] = rank;
      c[hist_fine_of(40000000)] = n - rank;
      double e = hist_quantile_ns(c, pct / 100.0);
      if (e > 2000 * 1.1)
        FAILF("p%g of %llu events (the %llu-th of %llu low): %g ns, a higher "
              "rank's bucket", pct, (unsigned long long)n,
              (unsigned long long)rank, (unsigned long long)rank, e);
    }
  }
  return 0;
}

/* Events at or below a bound, and bounds rounded to fine edges. */
DEF_TEST(at_or_below_and_edges) {
  uint64_t c[HIST_NFINE] = {0};
  uint64_t vals[] = {300, 600, 1000, 1100, 10000000, 10000001, 20000000,
                     P2(35)};
  for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
    c[hist_fine_of(vals[i])]++;
  uint64_t e10 = hist_fine_edge_near(10000000);
  CHECK(e10 == hist_fine_hi(hist_fine_of(10000000)) ||
        e10 == hist_fine_lo(hist_fine_of(10000000)));
  CHECK(fabs((double)e10 - 1e7) <= 1e7 / 32 + 1);
  /* at an edge, exact */
  for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]) - 1; i++) {
    uint64_t edge = hist_fine_hi(hist_fine_of(vals[i]));
    uint64_t want = 0;
    for (size_t j = 0; j < sizeof(vals) / sizeof(vals[0]); j++)
      want += hist_fine_of(vals[j]) <= hist_fine_of(vals[i]);
    CHECK_EQ_U64(want, hist_at_or_below(c, edge));
    CHECK_EQ_U64(edge, hist_fine_edge_near(edge));
  }
  CHECK_EQ_U64(0, hist_at_or_below(c, 100));
  CHECK_EQ_U64(512, hist_fine_edge_near(1));
  CHECK_EQ_U64(7, hist_at_or_below(c, UINT64_MAX)); /* not the open one */
  return 0;
}

int main(void) {
  tl_prog = "hist";
  RUN_TEST(bucket_bounds);
  RUN_TEST(bucket_names);
  RUN_TEST(bucket_of_boundaries);
  RUN_TEST(bucket_of_random);
  RUN_TEST(fine_bounds);
  RUN_TEST(fine_sum_to_log2);
  RUN_TEST(total_and_wrapping_delta);
  RUN_TEST(quantile_property_many_distributions);
  RUN_TEST(quantile_empty_and_edges);
  RUN_TEST(quantile_rank_of_a_percentile);
  RUN_TEST(at_or_below_and_edges);
  END_TEST;
}
