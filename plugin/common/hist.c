// SPDX-License-Identifier: GPL-2.0-only
/* Latency histogram maths. See hist.h. */
#include "common/hist.h"

#include <float.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#define HIST_LAST (HIST_NBUCKETS - 1)

uint64_t hist_bucket_lo(unsigned k) {
  if (k == 0)
    return 0;
  if (k >= HIST_NBUCKETS)
    return UINT64_MAX;
  return UINT64_C(1) << (HIST_FIRST_SHIFT - 1 + k);
}

uint64_t hist_bucket_hi(unsigned k) {
  if (k >= HIST_LAST)
    return UINT64_MAX;
  return UINT64_C(1) << (HIST_FIRST_SHIFT + k);
}

/* floor(log2(v)) for v >= 1: without builtins and in a fixed number of
 * steps, as the BPF side does it (no loops, no clz instruction). */
static unsigned floor_log2(uint64_t v) {
  unsigned lg = 0;
  if (v >> 32) {
    v >>= 32;
    lg += 32;
  }
  if (v >> 16) {
    v >>= 16;
    lg += 16;
  }
  if (v >> 8) {
    v >>= 8;
    lg += 8;
  }
  if (v >> 4) {
    v >>= 4;
    lg += 4;
  }
  if (v >> 2) {
    v >>= 2;
    lg += 2;
  }
  if (v >> 1)
    lg += 1;
  return lg;
}

unsigned hist_bucket_of(uint64_t ns) {
  if (ns <= (UINT64_C(1) << HIST_FIRST_SHIFT))
    return 0;
  /* ceil(log2(ns)) for ns >= 2 is floor(log2(ns - 1)) + 1 */
  unsigned k = floor_log2(ns - 1) + 1 - HIST_FIRST_SHIFT; /* >= 1 here */
  return k > HIST_LAST ? HIST_LAST : k;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---------------------------------------------------------------- fine */

#define FINE_LAST (HIST_NFINE - 1)
#define FINE_MIN ((uint64_t)1 << HIST_FINE_FIRST_EXP) /* 512 */
#define FINE_TOP_EXP (HIST_FINE_FIRST_EXP + HIST_FINE_OCTAVES) /* 34 */

uint64_t hist_fine_lo(unsigned i) {
  if (i == 0)
    return 0;
  if (i > FINE_LAST)
    return UINT64_MAX;
  if (i == FINE_LAST)
    return (uint64_t)1 << FINE_TOP_EXP;
  unsigned e = HIST_FINE_FIRST_EXP + (i - 1) / HIST_SUB, j = (i - 1) % HIST_SUB;
  return ((uint64_t)1 << e) + (uint64_t)j * ((uint64_t)1 << (e - HIST_SUB_BITS));
}

uint64_t hist_fine_hi(unsigned i) {
  if (i == 0)
    return FINE_MIN;
  if (i >= FINE_LAST)
    return UINT64_MAX;
  unsigned e = HIST_FINE_FIRST_EXP + (i - 1) / HIST_SUB, j = (i - 1) % HIST_SUB;
  return ((uint64_t)1 << e) +
         (uint64_t)(j + 1) * ((uint64_t)1 << (e - HIST_SUB_BITS));
}

unsigned hist_fine_of(uint64_t ns) {
  if (ns <= FINE_MIN)
    return 0;
  uint64_t x = ns - 1; /* (lo, hi] buckets: the bits of ns - 1 */
  unsigned e = floor_log2(x); /* >= 9 */
  if (e >= FINE_TOP_EXP)
    return FINE_LAST;
  unsigned j = (unsigned)(x >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
  return 1 + (e - HIST_FINE_FIRST_EXP) * HIST_SUB + j;
}

unsigned hist_fine_coarse(unsigned i) {
  if (i >= FINE_LAST)
    return HIST_NBUCKETS - 1;
  return i == 0 ? 0 : (i - 1) / HIST_SUB;
}

void hist_coarse(const uint64_t fine[HIST_NFINE],
                 uint64_t coarse[HIST_NBUCKETS]) {
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    coarse[k] = 0;
  for (unsigned i = 0; i < HIST_NFINE; i++) {
    unsigned k = hist_fine_coarse(i);
    coarse[k] = sat_add(coarse[k], fine[i]);
  }
}

uint64_t hist_total(const uint64_t *c, size_t n) {
  uint64_t t = 0;
  for (size_t k = 0; k < n; k++)
    t = sat_add(t, c[k]);
  return t;
}

uint64_t hist_fine_delta(const uint32_t now[HIST_NFINE],
                         const uint32_t prev[HIST_NFINE], int reset,
                         uint64_t out[HIST_NFINE]) {
  for (unsigned i = 0; i < HIST_NFINE; i++)
    out[i] = reset ? now[i] : (uint32_t)(now[i] - prev[i]);
  return hist_total(out, HIST_NFINE);
}

double hist_quantile_ns(const uint64_t c[HIST_NFINE], double q) {
  uint64_t n = hist_total(c, HIST_NFINE);
  if (n == 0 || isnan(q))
    return NAN;
  if (q < 0)
    q = 0;
  if (q > 1)
    q = 1;

  double r = q * (double)n;

  /* The integer rank s = max(1, ceil(r)) selects the bucket exactly:
   * cumulative counts are integers, so "cum >= r" is "cum >= ceil(r)", and
   * for r == 0 the first non-empty bucket is the one reaching 1. Using an
   * integer comparison keeps this exact even when n exceeds 2^53. A
   * quantile comes from a percentile (99.9 / 100 is 0.99900000000000011)
   * and r is then a hair above the integer it means (999.0000000000001
   * of 1000 events): ceil() of that is the next rank, the maximum instead
   * of p99.9. So r is taken a few ulps lower before ceil(), where a few
   * ulps are less than half a rank (below 2^48 events or so; past that a
   * double holds no exact rank anyway). */
  uint64_t s;
  double ulps = 8 * DBL_EPSILON * r;
  double cr = ceil(q < 1 && ulps < 0.5 ? r - ulps : r);
  if (cr < 1)
    s = 1;
  else if (cr >= (double)n) /* also catches (double)n rounding above n */
    s = n;
  else
    s = (uint64_t)cr;

  uint64_t cum = 0;
  unsigned i = 0;
  for (; i < HIST_NFINE; i++) {
    if (c[i] != 0 && c[i] >= s - cum) /* cum + c[i] >= s, no overflow */
      break;
    cum += c[i]; /* cum < s <= n here, so no overflow */
  }
  if (i >= FINE_LAST) /* cannot exceed: s <= n is reached by the end */
    return (double)hist_fine_lo(FINE_LAST);

  double lo = (double)hist_fine_lo(i), hi = (double)hist_fine_hi(i);
  /* The part of (lo, hi] within HIST_REL_ERR of all its values (bucket
   * 0 has no relative bound: all of it). */
  double a = lo, b = hi;
  if (i > 0) {
    a = fmax(lo, hi * (1 - HIST_REL_ERR));
    b = fmin(hi, lo * (1 + HIST_REL_ERR));
  }
  double f = (r - (double)cum) / (double)c[i];
  /* rounding (or a huge n) can push f a hair outside [0, 1] */
  if (!(f >= 0))
    f = 0;
  if (f > 1)
    f = 1;
  double est = a + (b - a) * f;
  return est > b ? b : est;
}

double hist_max_ns(const uint64_t c[HIST_NFINE]) {
  for (unsigned i = HIST_NFINE; i-- > 0;) {
    if (c[i] == 0)
      continue;
    if (i == FINE_LAST)
      return (double)hist_fine_lo(i);
    return (double)hist_fine_hi(i);
  }
  return NAN;
}

uint64_t hist_at_or_below(const uint64_t c[HIST_NFINE], uint64_t ns) {
  uint64_t t = 0;
  for (unsigned i = 0; i < FINE_LAST && hist_fine_hi(i) <= ns; i++)
    t = sat_add(t, c[i]);
  return t;
}

uint64_t hist_fine_edge_near(uint64_t ns) {
  unsigned i = hist_fine_of(ns);
  if (i == 0)
    return FINE_MIN;
  if (i == FINE_LAST)
    return hist_fine_lo(i);
  uint64_t lo = hist_fine_lo(i), hi = hist_fine_hi(i);
  return ns - lo < hi - ns ? lo : hi;
}

int hist_bucket_name(unsigned k, char *buf, size_t len) {
  if (k >= HIST_NBUCKETS) {
    if (buf != NULL && len > 0)
      buf[0] = '\0';
    return -1;
  }
  if (k == HIST_LAST)
    return snprintf(buf, len, "%" PRIu64 "_inf", hist_bucket_lo(k));
  return snprintf(buf, len, "%" PRIu64 "_%" PRIu64, hist_bucket_lo(k),
                  hist_bucket_hi(k));
}
