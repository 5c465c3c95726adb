/* Unit tests for plugin/hist.c: bucket bounds, names and slot function,
 * delta with counter reset, and quantile/max estimates checked against a
 * brute-force sorted-sample reference. */
#include "testlib.h"

#include "../../plugin/hist.c"

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

DEF_TEST(total_and_delta) {
  uint64_t prev[HIST_NBUCKETS], now[HIST_NBUCKETS], out[HIST_NBUCKETS];
  uint64_t sum = 0;
  for (unsigned k = 0; k < HIST_NBUCKETS; k++) {
    prev[k] = 1000 + k;
    now[k] = prev[k] + 3 * k;
    sum += 3 * k;
  }
  CHECK_EQ_U64(26 * 1000 + 325, hist_total(prev));
  CHECK_EQ_U64(sum, hist_delta(now, prev, out));
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    CHECK_EQ_U64(3 * k, out[k]);

  /* unchanged counters: all-zero delta */
  CHECK_EQ_U64(0, hist_delta(prev, prev, out));
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    CHECK_EQ_U64(0, out[k]);

  /* reset: one bucket went backwards, so out = now */
  uint64_t reset[HIST_NBUCKETS];
  memcpy(reset, now, sizeof(reset));
  reset[7] = 2; /* < prev[7] */
  CHECK_EQ_U64(hist_total(reset), hist_delta(reset, prev, out));
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    CHECK_EQ_U64(reset[k], out[k]);

  /* reset in the last bucket only */
  memcpy(reset, now, sizeof(reset));
  reset[HIST_NBUCKETS - 1] = 0;
  hist_delta(reset, prev, out);
  CHECK_EQ_U64(now[0], out[0]);

  /* aliasing: out == now and out == prev */
  uint64_t a[HIST_NBUCKETS], b[HIST_NBUCKETS];
  memcpy(a, now, sizeof(a));
  CHECK_EQ_U64(sum, hist_delta(a, prev, a));
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    CHECK_EQ_U64(3 * k, a[k]);
  memcpy(b, prev, sizeof(b));
  CHECK_EQ_U64(sum, hist_delta(now, b, b));
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    CHECK_EQ_U64(3 * k, b[k]);

  /* hist_total saturates */
  uint64_t big[HIST_NBUCKETS] = {0};
  big[0] = UINT64_MAX - 1;
  big[5] = 10;
  CHECK_EQ_U64(UINT64_MAX, hist_total(big));
  return 0;
}

/* ---- quantiles against a brute-force reference ------------------------ */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static const double qs[] = {0.0, 0.5, 0.9, 0.99, 0.999, 1.0};

/* Bins v[0..n), then checks each quantile estimate and the max estimate
 * against the bucket of the true sorted-sample value. */
static int check_dataset(const char *what, uint64_t *v, size_t n) {
  uint64_t c[HIST_NBUCKETS] = {0};
  for (size_t i = 0; i < n; i++)
    c[hist_bucket_of(v[i])]++;
  CHECK_EQ_U64(n, hist_total(c));

  if (n == 0) {
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
      CHECK(isnan(hist_quantile_ns(c, qs[i])));
    CHECK(isnan(hist_max_ns(c)));
    return 0;
  }

  qsort(v, n, sizeof(v[0]), cmp_u64);
  for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
    double q = qs[i];
    double r = q * (double)n;
    double cr = ceil(r);
    size_t rank = cr < 1 ? 1 : (size_t)cr; /* 1-based */
    if (rank > n)
      rank = n;
    uint64_t truth = v[rank - 1];
    unsigned k = hist_bucket_of(truth);
    double est = hist_quantile_ns(c, q);
    double lo = (double)hist_bucket_lo(k);
    double hi = (double)hist_bucket_hi(k);
    if (k == HIST_NBUCKETS - 1) {
      if (est != lo)
        FAILF("%s n=%zu q=%g: est %.17g, want open-bucket lower bound %.17g",
              what, n, q, est, lo);
    } else if (!(est >= lo && est <= hi)) {
      FAILF("%s n=%zu q=%g: est %.17g outside bucket %u [%.0f, %.0f] "
            "of true value %llu",
            what, n, q, est, k, lo, hi, (unsigned long long)truth);
    }
  }

  /* quantiles are monotone in q */
  double last = -1;
  for (int i = 0; i <= 1000; i++) {
    double est = hist_quantile_ns(c, i / 1000.0);
    if (!(est >= last))
      FAILF("%s n=%zu: quantile not monotone at q=%g", what, n, i / 1000.0);
    last = est;
  }

  unsigned km = hist_bucket_of(v[n - 1]);
  double want_max = km == HIST_NBUCKETS - 1 ? (double)hist_bucket_lo(km)
                                            : (double)hist_bucket_hi(km);
  if (hist_max_ns(c) != want_max)
    FAILF("%s n=%zu: max %.17g, want %.17g (true max %llu)", what, n,
          hist_max_ns(c), want_max, (unsigned long long)v[n - 1]);
  /* q = 1 lands in the same bucket as the max */
  CHECK(hist_quantile_ns(c, 1.0) <= hist_max_ns(c));
  return 0;
}

/* log-uniform in [100 ns, 100 s] */
static uint64_t log_uniform(void) {
  double lmin = log(100.0), lmax = log(100e9);
  return (uint64_t)exp(lmin + (lmax - lmin) * rng_unit());
}

DEF_TEST(quantile_random) {
  static const size_t sizes[] = {1, 2, 10, 1000, 100000};
  static const uint64_t seeds[] = {1, 2, 3, 12345, 0xdeadbeef};
  uint64_t *v = malloc(100000 * sizeof(*v));
  CHECK(v != NULL);
  for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
    for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
      rng_state = seeds[s] * 1000 + si;
      for (size_t i = 0; i < sizes[si]; i++)
        v[i] = log_uniform();
      if (check_dataset("log-uniform", v, sizes[si]) != 0) {
        free(v);
        return -1;
      }
    }
  }
  free(v);
  return 0;
}

DEF_TEST(quantile_small_random) {
  /* many tiny data sets: sizes 1..40, values clustered on few buckets so
   * ranks often fall on bucket edges */
  uint64_t v[40];
  rng_state = 99;
  for (int iter = 0; iter < 20000; iter++) {
    size_t n = 1 + rng_next() % 40;
    unsigned base = (unsigned)(rng_next() % HIST_NBUCKETS);
    for (size_t i = 0; i < n; i++) {
      unsigned k = base + (unsigned)(rng_next() % 3);
      if (k >= HIST_NBUCKETS)
        k = HIST_NBUCKETS - 1;
      uint64_t lo = hist_bucket_lo(k);
      uint64_t span = k == HIST_NBUCKETS - 1 ? P2(40) : hist_bucket_hi(k) - lo;
      v[i] = lo + (k == 0 ? 0 : 1) + rng_next() % span;
      if (k == 0 && v[i] > 1024)
        v[i] = 1024;
    }
    if (check_dataset("clustered", v, n) != 0)
      return -1;
  }
  return 0;
}

DEF_TEST(quantile_single_bucket) {
  uint64_t v[1000];
  for (unsigned k = 0; k < HIST_NBUCKETS; k++) {
    rng_state = 500 + k;
    uint64_t lo = hist_bucket_lo(k);
    uint64_t span = k == HIST_NBUCKETS - 1 ? P2(45) : hist_bucket_hi(k) - lo;
    for (size_t i = 0; i < 1000; i++)
      v[i] = lo + (k == 0 ? rng_next() % 1025 : 1 + rng_next() % span);
    if (check_dataset("single-bucket", v, 1000) != 0)
      return -1;

    /* exact interpolation inside one bucket: est = lo + (hi - lo) * q */
    uint64_t c[HIST_NBUCKETS] = {0};
    c[k] = 1000;
    if (k < HIST_NBUCKETS - 1) {
      double dlo = (double)lo, dhi = (double)hist_bucket_hi(k);
      CHECK_NEAR(dlo, hist_quantile_ns(c, 0.0), 0);
      CHECK_NEAR(dlo + (dhi - dlo) * 0.5, hist_quantile_ns(c, 0.5), 1e-6);
      CHECK_NEAR(dlo + (dhi - dlo) * 0.9, hist_quantile_ns(c, 0.9), 1e-6);
      CHECK_NEAR(dhi, hist_quantile_ns(c, 1.0), 0);
      CHECK_NEAR(dhi, hist_max_ns(c), 0);
    } else {
      CHECK_NEAR(17179869184.0, hist_quantile_ns(c, 0.5), 0);
      CHECK_NEAR(17179869184.0, hist_max_ns(c), 0);
    }
  }
  return 0;
}

DEF_TEST(quantile_empty_and_edges) {
  uint64_t v[1];
  CHECK(check_dataset("empty", v, 0) == 0);

  uint64_t c[HIST_NBUCKETS] = {0};
  CHECK(isnan(hist_quantile_ns(c, 0.5)));
  CHECK(isnan(hist_max_ns(c)));

  /* hand-worked: 4 events in bucket 1 (1024, 2048], 6 in bucket 3 */
  c[1] = 4;
  c[3] = 6;
  CHECK_NEAR(1024.0, hist_quantile_ns(c, 0.0), 0);
  CHECK_NEAR(1024.0 + 1024.0 * 2 / 4, hist_quantile_ns(c, 0.2), 1e-9);
  CHECK_NEAR(2048.0, hist_quantile_ns(c, 0.4), 1e-9); /* r = 4: bucket 1 */
  CHECK_NEAR(4096.0 + 4096.0 * 1 / 6, hist_quantile_ns(c, 0.5), 1e-9);
  CHECK_NEAR(8192.0, hist_quantile_ns(c, 1.0), 0);
  CHECK_NEAR(8192.0, hist_max_ns(c), 0);
  /* q outside [0,1] is clamped, NaN q gives NaN */
  CHECK_NEAR(1024.0, hist_quantile_ns(c, -3), 0);
  CHECK_NEAR(8192.0, hist_quantile_ns(c, 7), 0);
  CHECK(isnan(hist_quantile_ns(c, NAN)));

  /* open bucket as max */
  c[25] = 1;
  CHECK_NEAR(17179869184.0, hist_max_ns(c), 0);
  CHECK_NEAR(17179869184.0, hist_quantile_ns(c, 1.0), 0);

  /* huge counts (beyond 2^53) stay inside the right bucket */
  uint64_t h[HIST_NBUCKETS] = {0};
  h[2] = P2(62);
  h[3] = 1;
  double e = hist_quantile_ns(h, 1.0);
  CHECK(e >= 4096.0 && e <= 8192.0); /* rank n = last sample, bucket 3 */
  e = hist_quantile_ns(h, 0.999);
  CHECK(e >= 2048.0 && e <= 4096.0);
  h[2] = UINT64_MAX - 5;
  h[20] = 5;
  e = hist_quantile_ns(h, 0.5);
  CHECK(e >= 2048.0 && e <= 4096.0);
  e = hist_quantile_ns(h, 1.0);
  CHECK(e >= (double)hist_bucket_lo(20) && e <= (double)hist_bucket_hi(20));
  return 0;
}

/* The sum follows the buckets' reset, and a reset the sum alone shows
 * resets the buckets' delta too. */
DEF_TEST(delta_sum_reset_aware) {
  uint64_t prev[HIST_NBUCKETS] = {0}, now[HIST_NBUCKETS] = {0},
           out[HIST_NBUCKETS], dsum;
  prev[3] = 10;
  now[3] = 14;
  CHECK_EQ_U64(4, hist_delta_sum(now, prev, 1400, 1000, out, &dsum));
  CHECK_EQ_U64(400, dsum);
  now[3] = 2; /* bucket went down */
  CHECK_EQ_U64(2, hist_delta_sum(now, prev, 200, 1000, out, &dsum));
  CHECK_EQ_U64(200, dsum);
  now[3] = 12; /* buckets up, sum down: a reset too */
  CHECK_EQ_U64(12, hist_delta_sum(now, prev, 900, 1000, out, &dsum));
  CHECK_EQ_U64(900, dsum);
  CHECK_EQ_U64(12, out[3]);
  return 0;
}

int main(void) {
  tl_prog = "hist";
  RUN_TEST(bucket_bounds);
  RUN_TEST(bucket_names);
  RUN_TEST(bucket_of_boundaries);
  RUN_TEST(bucket_of_random);
  RUN_TEST(total_and_delta);
  RUN_TEST(delta_sum_reset_aware);
  RUN_TEST(quantile_random);
  RUN_TEST(quantile_small_random);
  RUN_TEST(quantile_single_bucket);
  RUN_TEST(quantile_empty_and_edges);
  END_TEST;
}
