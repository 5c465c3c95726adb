// SPDX-License-Identifier: GPL-2.0-only
/* Parser for Linux PSI (pressure stall information) files:
 *   /proc/pressure/{cpu,io,memory,irq} and <cgroup>/<res>.pressure
 *
 * Format (one line per kind):
 *   some avg10=0.12 avg60=3.40 avg300=0.00 total=123456789
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * Either line may be absent: cpu printed only "some" before 5.13
 * (psi_show looped to 2 - (res == PSI_CPU)), and irq, host and cgroup
 * irq.pressure, prints only "full" (PSI_IRQ, 6.1: only_full).
 *
 * Pure code: no I/O, no globals, no locale dependence. The buffer is
 * (buf, len) and need not be NUL-terminated; the parser never reads
 * past buf[len - 1] and accepts arbitrary bytes (it is fuzzed).
 */
#ifndef EBPF_PSI_PARSE_H
#define EBPF_PSI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct psi_line {
  bool present;
  double avg10, avg60, avg300; /* percent, 0.00 .. 100.00 */
  uint64_t total_us;           /* cumulative stall time, microseconds */
};

struct psi_stats {
  struct psi_line some, full;
};

/* Parses one PSI file.
 *
 * Returns 0 on success, -ENODATA for empty input (or only whitespace),
 * -EINVAL on any malformed content, -ERANGE for a number that overflows
 * (total above UINT64_MAX). The first error found is returned.
 *
 * Accepted: "some" and "full" lines in either order, each at most once,
 * either of them missing (its present = false) but not both: non-empty
 * input has at least one line. Fields are
 * separated by runs of blanks (space, tab, CR); blank lines are skipped;
 * the final newline is optional. Each of avg10=, avg60=, avg300=, total=
 * must appear exactly once, in that order, and nothing may follow total.
 * avg values are unsigned decimals with an optional fraction ("3", "3.4",
 * "3.40", "3.123456") and must be <= 100; total is an unsigned decimal.
 * No signs, exponents, hex, or spaces around '='.
 *
 * *out is always fully initialised: zeroed on error, and on success the
 * lines that were absent are zero with present = false. */
int psi_parse(const char *buf, size_t len, struct psi_stats *out);

#endif /* EBPF_PSI_PARSE_H */
