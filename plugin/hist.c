// SPDX-License-Identifier: GPL-2.0-only
/* log2 latency histogram maths. See hist.h. */
#include "hist.h"

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

/* Written without builtins and with a fixed number of steps so that the
 * BPF side can mirror it one to one (no loops, no clz instruction). */
unsigned hist_bucket_of(uint64_t ns) {
  if (ns <= (UINT64_C(1) << HIST_FIRST_SHIFT))
    return 0;

  /* ceil(log2(ns)) for ns >= 2 is floor(log2(ns - 1)) + 1 */
  uint64_t v = ns - 1;
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

  unsigned k = lg + 1 - HIST_FIRST_SHIFT; /* lg >= 10 here, so k >= 1 */
  return k > HIST_LAST ? HIST_LAST : k;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t hist_total(const uint64_t c[HIST_NBUCKETS]) {
  uint64_t t = 0;
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    t = sat_add(t, c[k]);
  return t;
}

uint64_t hist_delta(const uint64_t now[HIST_NBUCKETS],
                    const uint64_t prev[HIST_NBUCKETS],
                    uint64_t out[HIST_NBUCKETS]) {
  bool reset = false;
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    if (now[k] < prev[k])
      reset = true;

  /* element-wise, each k read before it is written: aliasing is fine */
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    out[k] = reset ? now[k] : now[k] - prev[k];
  return hist_total(out);
}

uint64_t hist_delta_sum(const uint64_t now[HIST_NBUCKETS],
                        const uint64_t prev[HIST_NBUCKETS], uint64_t now_sum,
                        uint64_t prev_sum, uint64_t out[HIST_NBUCKETS],
                        uint64_t *dsum) {
  static const uint64_t zero[HIST_NBUCKETS];
  bool reset = now_sum < prev_sum;
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    if (now[k] < prev[k])
      reset = true;
  *dsum = reset ? now_sum : now_sum - prev_sum;
  return hist_delta(now, reset ? zero : prev, out);
}

double hist_quantile_ns(const uint64_t c[HIST_NBUCKETS], double q) {
  uint64_t n = hist_total(c);
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
   * integer comparison keeps this exact even when n exceeds 2^53. */
  uint64_t s;
  double cr = ceil(r);
  if (cr < 1)
    s = 1;
  else if (cr >= (double)n) /* also catches (double)n rounding above n */
    s = n;
  else
    s = (uint64_t)cr;

  uint64_t cum = 0;
  unsigned k = 0;
  for (; k < HIST_NBUCKETS; k++) {
    if (c[k] != 0 && c[k] >= s - cum) /* cum + c[k] >= s, no overflow */
      break;
    cum += c[k]; /* cum < s <= n here, so no overflow */
  }
  if (k >= HIST_LAST) /* cannot exceed: s <= n is reached by the end */
    return (double)hist_bucket_lo(HIST_LAST);

  double lo = (double)hist_bucket_lo(k);
  double hi = (double)hist_bucket_hi(k);
  double f = (r - (double)cum) / (double)c[k];
  /* rounding (or a huge n) can push f a hair outside [0, 1] */
  if (!(f >= 0))
    f = 0;
  if (f > 1)
    f = 1;
  double est = lo + (hi - lo) * f;
  return est > hi ? hi : est;
}

double hist_max_ns(const uint64_t c[HIST_NBUCKETS]) {
  for (unsigned k = HIST_NBUCKETS; k-- > 0;) {
    if (c[k] == 0)
      continue;
    if (k == HIST_LAST)
      return (double)hist_bucket_lo(k);
    return (double)hist_bucket_hi(k);
  }
  return NAN;
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
