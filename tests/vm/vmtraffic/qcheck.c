// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic qcheck: the dispatched quantiles against a shape run's
 * waits. */
#define _GNU_SOURCE
#include "vmtraffic.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
  double t, v;
};

/* The rows of DIR/NAME-YYYY-MM-DD (the csv plugin's files, one a day), in
 * time order; a "nan" row has v NAN. */
static int read_rows(const char *dir, const char *name, struct row **out) {
  char pat[4096];
  glob_t g;
  int n = 0, cap = 0;
  *out = NULL;
  snprintf(pat, sizeof(pat), "%s/%s-[0-9][0-9][0-9][0-9]-*", dir, name);
  if (glob(pat, 0, NULL, &g))
    return 0;
  for (size_t k = 0; k < g.gl_pathc; k++) {
    FILE *f = fopen(g.gl_pathv[k], "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
      double t, v;
      char vs[64];
      if (sscanf(line, "%lf,%63s", &t, vs) != 2)
        continue;
      v = strstr(vs, "nan") ? NAN : atof(vs);
      if (n == cap) {
        cap = cap ? 2 * cap : 256;
        *out = realloc(*out, cap * sizeof(**out));
        if (!*out)
          die("realloc");
      }
      (*out)[n++] = (struct row){t, v};
    }
    if (f)
      fclose(f);
  }
  globfree(&g);
  return n;
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

/* The value of rank max(1, ceil(q n)) of x[0..n) (sorts x). */
static long long exact_q(long long *x, int n, double q) {
  qsort(x, n, sizeof(*x), cmp_ll);
  int r = (int)ceil(q * n - 1e-9);
  if (r < 1)
    r = 1;
  if (r > n)
    r = n;
  return x[r - 1];
}

/* The "w" lines of a shape run's output: each read's wait to just before
 * (lo) and to just after (hi) recvmsg(), in order. Returns their number. */
static int read_waits(const char *reads, long long **lo_out,
                      long long **hi_out) {
  FILE *f = fopen(reads, "r");
  if (!f)
    die("open the reads");
  long long *lo = NULL, *hi = NULL;
  int n = 0, cap = 0;
  char line[256];
  while (fgets(line, sizeof(line), f)) {
    long long a, b;
    if (sscanf(line, "w %lld %lld", &a, &b) != 2)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      lo = realloc(lo, cap * sizeof(*lo));
      hi = realloc(hi, cap * sizeof(*hi));
      if (!lo || !hi)
        die("realloc");
    }
    lo[n] = a;
    hi[n++] = b;
  }
  fclose(f);
  *lo_out = lo;
  *hi_out = hi;
  return n;
}

static const char *names[] = {"latency-p50", "latency-p90", "latency-p99",
                              "latency-p999", "latency-max"};
static const double qs[] = {0.5, 0.9, 0.99, 0.999, 1};

/* The exact quantile q of the waits of the interval's reads [from, to)
 * of the n made, in *wl (of the shortest waits, lo) and *wh (of the
 * longest, hi); with its two ends each one read earlier or later too,
 * the lowest *wl and the highest *wh. The intervals are split by the
 * operations counter, and an event's count is added before its bucket:
 * a read of the map between the two (on another CPU) puts the event in
 * one interval's operations and the next one's buckets. With the tail
 * shape's spread, one read more or less at an end moves a p99 a lot
 * (a 6.1 guest once gave -74%). xl and xh are room for to - from + 2
 * waits. */
static void exact_range(const long long *lo, const long long *hi, long long n,
                        long long from, long long to, double q,
                        long long *xl, long long *xh, long long *wl,
                        long long *wh) {
  *wl = -1;
  *wh = -1;
  for (long long a = from - 1; a <= from + 1; a++)
    for (long long b = to - 1; b <= to + 1; b++) {
      if (a < 0 || b > n || b - a < 1)
        continue;
      int m = (int)(b - a);
      memcpy(xl, lo + a, m * sizeof(*xl));
      memcpy(xh, hi + a, m * sizeof(*xh));
      long long l = exact_q(xl, m, q), h = exact_q(xh, m, q);
      if (*wl < 0 || l < *wl)
        *wl = l;
      if (h > *wh)
        *wh = h;
    }
}

/* The dispatched quantiles of interval t (rows q[k], nq[k] of them) against
 * the waits of its reads [from, to) of the n made (exact_range()),
 * printed; xl and xh are room for to - from + 2 waits. Returns the checks
 * that failed, and keeps the largest deviation of a pNN in *worst; a
 * quantile without a row of interval t (not written yet: collectd's write
 * threads write a read's values in parallel) counts in *missing, not as
 * a failure. */
static int check_interval(double t, const long long *lo, const long long *hi,
                          long long n, long long from, long long to,
                          struct row *const *q, const int *nq, long long *xl,
                          long long *xh, double *worst, int *missing) {
  int fails = 0;
  for (int k = 0; k < 5; k++) {
    double est = -1;
    for (int j = 0; j < nq[k]; j++)
      if (fabs(q[k][j].t - t) < 0.1)
        est = q[k][j].v * 1e9;
    if (isnan(est)) { /* NaN with events counted: never right */
      printf(" %s nan FAIL", names[k] + 8);
      fails++;
      continue;
    }
    if (est < 0) {
      printf(" %s no row", names[k] + 8);
      (*missing)++;
      continue;
    }
    long long wl, wh;
    exact_range(lo, hi, n, from, to, qs[k], xl, xh, &wl, &wh);
    int ok;
    double dev = 0;
    if (k < 4) {
      ok = est >= 0.95 * wl - 500 && est <= 1.05 * wh + 500;
      if (est < wl)
        dev = (est - wl) / wl;
      else if (est > wh)
        dev = (est - wh) / wh;
    } else {
      ok = est >= 0.999 * wl - 500 && est <= 1.0625 * wh + 500;
    }
    if (k < 4 && fabs(dev) > fabs(*worst))
      *worst = dev;
    printf(" %s %.1f us (waits %.1f..%.1f)%s", names[k] + 8, est / 1e3, wl / 1e3,
           wh / 1e3, ok ? "" : " FAIL");
    if (!ok)
      fails++;
  }
  return fails;
}

int qcheck(const char *dir, const char *reads, double t0, long long base) {
  long long *lo, *hi;
  int n = read_waits(reads, &lo, &hi);
  struct row *ops, *q[5];
  int nops = read_rows(dir, "operations", &ops), nq[5];
  for (int k = 0; k < 5; k++)
    nq[k] = read_rows(dir, names[k], &q[k]);
  long long *xl = malloc((n + 2) * sizeof(*xl)), *xh = malloc((n + 2) * sizeof(*xh));
  long long prev = base;
  int intervals = 0, checked = 0, fails = 0, missing = 0;
  double worst = 0;
  for (int i = 0; i < nops; i++) {
    if (ops[i].t <= t0 || isnan(ops[i].v) || (long long)ops[i].v <= prev)
      continue;
    long long c = (long long)ops[i].v;
    long long from = prev - base, to = c - base;
    prev = c;
    intervals++;
    if (to > n) {
      printf("interval %.3f: operations %lld, beyond the %d reads made\n", ops[i].t,
             to, n);
      fails++;
      break;
    }
    int m = (int)(to - from);
    if (m < 5) {
      printf("interval %.3f: reads %lld..%lld, too few to check\n", ops[i].t, from,
             to - 1);
      continue;
    }
    checked++;
    printf("interval %.3f: reads %lld..%lld:", ops[i].t, from, to - 1);
    fails += check_interval(ops[i].t, lo, hi, n, from, to, q, nq, xl, xh, &worst,
                            &missing);
    printf("\n");
  }
  long long got = prev - base;
  printf("qcheck intervals %d checked %d reads %lld of %d worst %+.2f%%%s\n", intervals,
         checked, got, n, 100 * worst, missing ? " rows missing" : "");
  if (fails || checked < 1 || got != n)
    return 1;
  return missing ? 2 : 0;
}
