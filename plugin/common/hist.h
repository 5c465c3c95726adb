// SPDX-License-Identifier: GPL-2.0-only
/* Latency histogram maths, shared by user space and (as the reference
 * for) the BPF programs.
 *
 * The BPF side keeps, per hook (and group), cumulative per-CPU 32-bit
 * counters in HIST_NFINE log-linear "fine" buckets of nanoseconds: each
 * power of two from 2^9 to 2^34 is split into HIST_SUB = 16 equal parts:
 *
 *   fine 0                      [0, 512]
 *   fine 1 + 16 (e - 9) + j     (2^e + j 2^(e-4), 2^e + (j+1) 2^(e-4)]
 *                               for 9 <= e <= 33, 0 <= j <= 15
 *   fine 401                    (2^34, +inf)        2^34 ns ~= 17.2 s
 *
 * The index is the exponent and the next 4 bits of ns - 1: a few ALU
 * instructions more than a log2 bucket, and one counter (4 bytes, so one
 * cache line) written per event. A fine bucket is at most 1/16 of its
 * lower bound wide.
 *
 * The log2 buckets of `Buckets true` (HIST_NBUCKETS = 26, as before fine
 * buckets existed) are sums of fine ones:
 *
 *   bucket 0        [0, 1024]                 fine 0 .. 16
 *   bucket k        (2^(9+k), 2^(10+k)]       the 16 fine of e = 9 + k
 *   bucket 25       (2^34, +inf)              fine 401
 *
 * Counters are 32 bits and wrap: user space sums the CPUs and subtracts
 * the previous read modulo 2^32 (hist_fine_delta), exact as long as fewer
 * than 2^32 events fall into one bucket between two reads; a reset (a
 * group made again) is seen in the 64-bit event count and sum.
 *
 * The bound of hist_quantile_ns(): the estimate is within HIST_REL_ERR
 * (4%) of the true quantile, the timed event of rank max(1, ceil(q n)),
 * whenever that event is between 512 ns and 2^34 ns: it is placed in the
 * fine bucket (lo, hi] that holds the true value, inside the part
 * [max(lo, hi (1 - 4%)), min(hi, lo (1 + 4%))], which is never empty as
 * hi / lo <= 17/16, and every point of which is within 4% of every value
 * in (lo, hi]. (The midpoint of (lo, hi] would be off by up to 3.1%, its
 * lower end by 5.9%.) Below 512 ns the error is at most 512 ns; above
 * 2^34 ns the estimate is 2^34 ns and only says ">= 17.2 s".
 * hist_max_ns() is the upper bound of the highest non-empty fine bucket:
 * never below the true maximum, at most 6.25% above it.
 *
 * Pure code: no I/O, no globals.
 */
#ifndef EBPF_HIST_H
#define EBPF_HIST_H

#include <stddef.h>
#include <stdint.h>

#define HIST_NBUCKETS 26
#define HIST_FIRST_SHIFT 10
#define HIST_SUB_BITS 4
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_FINE_FIRST_EXP 9 /* the first split power of two */
#define HIST_FINE_OCTAVES 25  /* 2^9 .. 2^34 */
#define HIST_NFINE (2 + HIST_FINE_OCTAVES * HIST_SUB)
#define HIST_REL_ERR 0.04

/* ---- log2 buckets (names, Buckets true) ---- */

/* Lower bound (exclusive, except for bucket 0) of bucket k:
 * 0 for k = 0, 2^(9+k) otherwise. UINT64_MAX for k >= HIST_NBUCKETS. */
uint64_t hist_bucket_lo(unsigned k);

/* Upper bound (inclusive) of bucket k: 2^(10+k); UINT64_MAX for the last
 * (open) bucket and for k >= HIST_NBUCKETS. */
uint64_t hist_bucket_hi(unsigned k);

/* The log2 bucket of a value in ns: 0 for ns <= 1024, else
 * ceil(log2(ns)) - 10, capped at HIST_NBUCKETS - 1. */
unsigned hist_bucket_of(uint64_t ns);

/* "<lo>_<hi>" in ns, e.g. "0_1024", "1024_2048", ..., "17179869184_inf".
 * Returns snprintf's result; for k >= HIST_NBUCKETS returns -1 and stores
 * "" (when len > 0). */
int hist_bucket_name(unsigned k, char *buf, size_t len);

/* ---- fine buckets ---- */

/* Bounds of fine bucket i: (lo, hi], [0, 512] for i = 0; the last one's
 * hi is UINT64_MAX (open), and both are UINT64_MAX for i >= HIST_NFINE. */
uint64_t hist_fine_lo(unsigned i);
uint64_t hist_fine_hi(unsigned i);

/* The fine bucket of a value in ns: the reference slot function the BPF
 * code must agree with (bpf/netstacklat/netstacklat.h's nsl_slot_of()). */
unsigned hist_fine_of(uint64_t ns);

/* The log2 bucket that holds fine bucket i. */
unsigned hist_fine_coarse(unsigned i);

/* The log2 counts of fine counts (sums). */
void hist_coarse(const uint64_t fine[HIST_NFINE],
                 uint64_t coarse[HIST_NBUCKETS]);

/* Sum of n counters (saturates at UINT64_MAX). */
uint64_t hist_total(const uint64_t *c, size_t n);

/* Per-bucket counts between two reads of wrapping 32-bit counters:
 * out[i] = (now[i] - prev[i]) mod 2^32, or now[i] when reset (the counters
 * started again from zero). Returns the total of out. */
uint64_t hist_fine_delta(const uint32_t now[HIST_NFINE],
                         const uint32_t prev[HIST_NFINE], int reset,
                         uint64_t out[HIST_NFINE]);

/* q in [0,1] (clamped; NaN q gives NaN). Estimate in ns of the q-quantile
 * of the events counted in c (fine buckets): the event of rank
 * s = max(1, ceil(q n)) is in the first bucket whose cumulative count
 * reaches s; the estimate is interpolated linearly, by the rank within
 * the bucket, across the part of it within HIST_REL_ERR of all its values
 * (see the top of this file; bucket 0: across [0, 512]; the open bucket:
 * its lower bound). NaN when c is empty. Monotone in q. */
double hist_quantile_ns(const uint64_t c[HIST_NFINE], double q);

/* Upper bound of the highest non-empty fine bucket (lower bound 2^34 for
 * the open one); NaN when empty. */
double hist_max_ns(const uint64_t c[HIST_NFINE]);

/* Events at or below ns: the fine buckets whose upper bound is at most
 * ns (a bound between two fine edges counts up to the edge below it). */
uint64_t hist_at_or_below(const uint64_t c[HIST_NFINE], uint64_t ns);

/* The fine edge nearest to ns (an upper bound of a fine bucket, or 512):
 * what a bound given in the configuration is rounded to. */
uint64_t hist_fine_edge_near(uint64_t ns);

#endif /* EBPF_HIST_H */
