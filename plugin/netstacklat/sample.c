// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's SampleEvery: each hook's N as a gauge, and with
 * SampleEvery "auto" the N of each hook chosen every interval to keep the
 * programs within CostBudget. */
#include "netstacklat/internal.h"
#include "rx.skel.h"

#include <stdio.h>
#include <string.h>

/* The cost of an event to the plugin's programs when BPF run statistics
 * are off, calibrated with make bench's per_packet section on the
 * project's machine (docs/performance.md): an untimed event about 65 ns
 * and a timed one about 100 ns, each program's entry included; rounded
 * up. With statistics on, the measured run time replaces the untimed
 * part. */
#define AUTO_UNTIMED_NS 70.0
#define AUTO_TIMED_EXTRA_NS 40.0
#define AUTO_MAX_N 65536u

/* The run time of our loaded programs so far (0 while BPF statistics are
 * off: kernel.bpf_stats_enabled, or BPFStats true). */
static uint64_t programs_run_ns(const struct nsl_state *s) {
  uint64_t sum = 0;
  struct bpf_program *p;
  bpf_object__for_each_program(p, s->skel->obj) {
    struct bpf_prog_info info;
    if (loader_prog_info(p, &info) == 0)
      sum += info.run_time_ns;
  }
  return sum;
}

void nsl_sample_start(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  memset(s->hook_events, 0, sizeof(s->hook_events));
  for (int h = 0; h < NSL_NHOOKS; h++)
    s->n_used[h] = cfg->sample_every ? (uint32_t)cfg->sample_every : 1;
  s->auto_run_ns = cfg->sample_every ? 0 : programs_run_ns(s);
  s->auto_over = false;
  if (cfg->sample_every == 0)
    E_INFO(FEATURE ": SampleEvery auto: each hook's N is chosen every "
           "interval to keep the programs within CostBudget %g%% of a CPU "
           "(estimated from the events and %s).",
           cfg->cost_budget,
           s->auto_run_ns || ebpf_global.bpf_stats
               ? "the programs' run time (BPF statistics)"
               : "a calibrated cost per event; BPFStats true measures it");
}

/* The floor of SampleEvery auto: while a hook has the events, at least
 * this many of them are timed per interval, whatever the budget, so that
 * its quantiles never rest on a handful: those of ~1000 timed events stay
 * within one bucket of every event's (test_netstacklat,
 * sample_every_16_quantiles_match_every_event). Its cost is bounded: at
 * most 4 x 1000 timed events per hook and interval, ~0.16 ms. */
#define AUTO_FLOOR 1000.0
/* N is raised only to where the last interval's events give twice the
 * floor, and kept while they give 1.5 times it: room for the rate's
 * swings and the random gaps, without flapping between two N. */
#define AUTO_FLOOR_RAISE 2.0
#define AUTO_FLOOR_KEEP 1.5

/* The highest N, a power of two up to AUTO_MAX_N, at which events / N is
 * at least per. */
static uint32_t n_within(uint64_t events, double per) {
  uint32_t n = 1;
  while (n < AUTO_MAX_N && (double)events / (2.0 * n) >= per)
    n *= 2;
  return n;
}

/* The programs' estimated time with n[], in ns per second. */
static double auto_cost(const double rate[NSL_NHOOKS], double fixed,
                        const uint32_t n[NSL_NHOOKS]) {
  double cost = fixed;
  for (int h = 0; h < NSL_NHOOKS; h++)
    cost += rate[h] * AUTO_TIMED_EXTRA_NS / n[h];
  return cost;
}

/* rate[]: each hook's events per second in the interval. Returns what
 * the programs cost whatever N is, in ns per second (dr: their run time
 * in the interval, 0 while BPF statistics are off). */
static double auto_untimed(const struct nsl_state *s, double elapsed,
                           uint64_t dr, double rate[NSL_NHOOKS]) {
  double fixed = 0;
  for (int h = 0; h < NSL_NHOOKS; h++) {
    if (s->hooks[h].flavour < 0)
      continue;
    rate[h] = (double)s->hook_events[h] / elapsed;
    fixed += rate[h] * AUTO_UNTIMED_NS;
  }
  if (dr > 0) {
    /* Measured: what the programs took, less the timed part the model
     * gives the interval's N. */
    fixed = (double)dr / elapsed - auto_cost(rate, 0, s->n_used);
    if (fixed < 0)
      fixed = 0;
  }
  return fixed;
}

/* n[]: each hook's N from 1, the N of the hook with the most timed time
 * doubled first, until the estimate is within 90% of the budget or every
 * hook with events is at its cap[] (the floor). Returns the estimate. */
static double auto_raise(const double rate[NSL_NHOOKS], double fixed,
                         double budget, const uint32_t cap[NSL_NHOOKS],
                         uint32_t n[NSL_NHOOKS]) {
  for (int h = 0; h < NSL_NHOOKS; h++)
    n[h] = 1;
  double cost = auto_cost(rate, fixed, n);
  while (cost > 0.9 * budget) {
    int best = -1;
    for (int h = 0; h < NSL_NHOOKS; h++)
      if (rate[h] > 0 && n[h] < cap[h] &&
          (best < 0 || rate[h] / n[h] > rate[best] / n[best]))
        best = h;
    if (best < 0)
      break;
    cost -= rate[best] * AUTO_TIMED_EXTRA_NS / n[best] / 2;
    n[best] *= 2;
  }
  return cost;
}

/* next[]: n[], where it is lower than the hook's N now only well within
 * the budget (at once below 70% of it, by halves below 80%, else not
 * lower); but never above keep[], where the floor would not hold: there
 * n[] (at most the raise cap). Returns the estimate with next[]. */
static double auto_lower(const struct nsl_state *s,
                         const double rate[NSL_NHOOKS], double fixed,
                         double budget, const uint32_t n[NSL_NHOOKS],
                         const uint32_t keep[NSL_NHOOKS],
                         uint32_t next[NSL_NHOOKS]) {
  bool lower = false;
  uint32_t half[NSL_NHOOKS];
  for (int h = 0; h < NSL_NHOOKS; h++) {
    uint32_t cur = s->n_used[h];
    next[h] = n[h];
    half[h] = n[h] >= cur ? n[h] : (cur / 2 > n[h] ? cur / 2 : n[h]);
    if (n[h] < cur)
      lower = true;
  }
  if (lower && auto_cost(rate, fixed, next) > 0.7 * budget) {
    bool halves = auto_cost(rate, fixed, half) <= 0.8 * budget;
    for (int h = 0; h < NSL_NHOOKS; h++)
      if (next[h] < s->n_used[h])
        next[h] = halves ? half[h] : s->n_used[h];
  }
  for (int h = 0; h < NSL_NHOOKS; h++)
    if (next[h] > keep[h])
      next[h] = n[h];
  return auto_cost(rate, fixed, next);
}

/* Every interval: each hook's N for the next one, a power of two, as
 * small as keeps the programs' estimated time within 90% of CostBudget
 * (room for the rates' swings): N of the hook with the most timed time
 * doubled first, but only while the hook still times AUTO_FLOOR events an
 * interval. The untimed part (every event's count, filters, and the
 * programs' entries) is what no N removes: when it, with the floor's
 * timed events, is above the budget, one WARNING says so (and one INFO
 * when it is kept again). A lower N is taken only while the estimate
 * stays well within the budget (at once below 70% of it, by halves below
 * 80%), so that N does not flap, or where the floor needs it. */
static void sample_auto(struct nsl_state *s, double elapsed) {
  const struct nsl_config *cfg = &s->cfg;
  uint64_t run = programs_run_ns(s);
  uint64_t dr = run >= s->auto_run_ns ? run - s->auto_run_ns : 0;
  s->auto_run_ns = run;
  if (elapsed <= 0)
    return;
  double rate[NSL_NHOOKS] = {0};
  double fixed = auto_untimed(s, elapsed, dr, rate);
  double budget = cfg->cost_budget / 100.0 * 1e9; /* ns per second */
  uint32_t cap[NSL_NHOOKS], keep[NSL_NHOOKS], n[NSL_NHOOKS];
  for (int h = 0; h < NSL_NHOOKS; h++) {
    cap[h] = n_within(s->hook_events[h], AUTO_FLOOR_RAISE * AUTO_FLOOR);
    keep[h] = n_within(s->hook_events[h], AUTO_FLOOR_KEEP * AUTO_FLOOR);
  }
  double cost = auto_raise(rate, fixed, budget, cap, n);
  /* Kept again only within the 90% that N is raised to, so that an
   * estimate near the budget does not repeat the WARNING. */
  bool over = cost > (s->auto_over ? 0.9 : 1.0) * budget;
  if (over && !s->auto_over)
    E_WARNING(FEATURE ": SampleEvery auto: CostBudget %g%% of a CPU cannot "
              "be kept: counting the events alone, timed or not, costs "
              "%.3f%%, and timing at least %.0f events per hook and "
              "interval %.3f%% more; no hook's N goes higher.",
              cfg->cost_budget, fixed / 1e7, AUTO_FLOOR, (cost - fixed) / 1e7);
  else if (!over && s->auto_over)
    E_INFO(FEATURE ": SampleEvery auto: CostBudget %g%% of a CPU is kept "
           "again.", cfg->cost_budget);
  s->auto_over = over;
  uint32_t next[NSL_NHOOKS];
  double c_next = auto_lower(s, rate, fixed, budget, n, keep, next);
  for (int h = 0; h < NSL_NHOOKS; h++) {
    if (s->hooks[h].flavour < 0 || next[h] == s->n_used[h])
      continue;
    E_INFO(FEATURE ": SampleEvery auto: hook %s: N %u -> %u (%.0f events/s; "
           "the programs' estimated time %.3f%% of a CPU, CostBudget %g%%).",
           nsl_hook_names[h], s->n_used[h], next[h], rate[h], c_next / 1e7,
           cfg->cost_budget);
    s->skel->bss->sample_n[h] = next[h];
    s->n_used[h] = next[h];
  }
}

void nsl_sample_read(struct nsl_state *s, double elapsed) {
  const struct nsl_config *cfg = &s->cfg;
  /* The N the interval's values were made with (fixed, or auto's); not
   * without sampling (SampleEvery 1, the default: the programs have no
   * sampling code), which keeps the shipped snippet within its 100 values
   * per interval (test_run). */
  for (__u32 h = 0; h < NSL_NHOOKS && cfg->sample_every != 1; h++) {
    if (s->hooks[h].flavour < 0)
      continue;
    char inst[DATA_MAX_NAME_LEN];
    snprintf(inst, sizeof(inst), "%s-%s", FEATURE, nsl_hook_names[h]);
    submit_gauge(PLUGIN_NAME, inst, "gauge", "sample_every",
                 (double)s->n_used[h]);
  }
  if (cfg->sample_every == 0)
    sample_auto(s, elapsed);
  memset(s->hook_events, 0, sizeof(s->hook_events));
}
