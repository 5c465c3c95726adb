// SPDX-License-Identifier: GPL-2.0-only
/* log2 latency histogram maths, shared by user space and (as the reference
 * for) the BPF programs.
 *
 * The BPF side keeps, per hook, cumulative per-CPU counters in
 * HIST_NBUCKETS log2 buckets of nanoseconds:
 *
 *   bucket 0        [0, 1024]
 *   bucket k        (2^(9+k), 2^(10+k)]      for 1 <= k <= 24
 *   bucket 25       (2^34, +inf)             2^34 ns ~= 17.2 s
 *
 * so bucket k's upper bound is 2^(HIST_FIRST_SHIFT + k) ns for k <= 24.
 * User space sums the CPUs and subtracts the previous read (hist_delta) to
 * get per-interval bucket counts.
 *
 * Worst-case error of hist_quantile_ns():
 *   The estimate always lies inside the bucket [lo, hi] that holds the true
 *   quantile (the sample of rank max(1, ceil(q * n))). For a closed bucket
 *   k >= 1, lo = hi / 2, so estimate and true value both lie in
 *   [hi / 2, hi]: the estimate is off by at most a factor of 2, i.e. by
 *   less than that bucket's upper bound (absolute error <= hi / 2). In
 *   bucket 0 only the absolute bound holds: error <= 1024 ns. Linear interpolation assumes the samples are spread evenly across
 *   the bucket; nothing better can be said without the raw samples. The
 *   last (open) bucket has no upper bound: an estimate of 2^34 ns only
 *   says ">= 17.2 s". The same bounds apply to hist_max_ns().
 *
 * Pure code: no I/O, no globals.
 */
#ifndef EBPF_HIST_H
#define EBPF_HIST_H

#include <stddef.h>
#include <stdint.h>

#define HIST_NBUCKETS 26
#define HIST_FIRST_SHIFT 10

/* Lower bound (exclusive, except for bucket 0) of bucket k:
 * 0 for k = 0, 2^(9+k) otherwise. UINT64_MAX for k >= HIST_NBUCKETS. */
uint64_t hist_bucket_lo(unsigned k);

/* Upper bound (inclusive) of bucket k: 2^(10+k); UINT64_MAX for the last
 * (open) bucket and for k >= HIST_NBUCKETS. */
uint64_t hist_bucket_hi(unsigned k);

/* The bucket of a value in ns. This is the reference slot function the BPF
 * code must agree with: 0 for ns <= 1024, else ceil(log2(ns)) - 10, capped
 * at HIST_NBUCKETS - 1. */
unsigned hist_bucket_of(uint64_t ns);

/* Sum of the counters (saturates at UINT64_MAX). */
uint64_t hist_total(const uint64_t c[HIST_NBUCKETS]);

/* out[k] = now[k] - prev[k]; if any now[k] < prev[k] (the counters were
 * reset), out = now. Returns the total of out. out may alias now or prev. */
uint64_t hist_delta(const uint64_t now[HIST_NBUCKETS],
                    const uint64_t prev[HIST_NBUCKETS],
                    uint64_t out[HIST_NBUCKETS]);

/* hist_delta for a histogram that also keeps the sum of its values: a
 * reset is seen in the buckets or in the sum (either went down; a group
 * deleted and made again starts from zero), and then both deltas are the
 * new counts: *dsum = now_sum, never an unsigned wrap that would read as a
 * mean of 10^10 s. Otherwise *dsum = now_sum - prev_sum. Returns the
 * total of out. */
uint64_t hist_delta_sum(const uint64_t now[HIST_NBUCKETS],
                        const uint64_t prev[HIST_NBUCKETS], uint64_t now_sum,
                        uint64_t prev_sum, uint64_t out[HIST_NBUCKETS],
                        uint64_t *dsum);

/* q in [0,1] (clamped; NaN q gives NaN). Estimate in ns of the q-quantile
 * of the events counted in c. NaN when c is empty.
 * Rank r = q * n. Find the first bucket k whose cumulative count reaches r
 * (for q == 0 take the first non-empty bucket), then interpolate linearly
 * inside it: lo + (hi - lo) * (r - cum_before) / c[k]; for the last (open)
 * bucket return its lower bound 2^34. The result always lies inside the
 * bucket that holds the true quantile (the sample of rank ceil(r), at
 * least 1). */
double hist_quantile_ns(const uint64_t c[HIST_NBUCKETS], double q);

/* Upper bound of the highest non-empty bucket (lower bound 2^34 for the
 * open one); NaN when empty. */
double hist_max_ns(const uint64_t c[HIST_NBUCKETS]);

/* "<lo>_<hi>" in ns, e.g. "0_1024", "1024_2048", ..., "17179869184_inf".
 * Returns snprintf's result; for k >= HIST_NBUCKETS returns -1 and stores
 * "" (when len > 0). */
int hist_bucket_name(unsigned k, char *buf, size_t len);

#endif /* EBPF_HIST_H */
