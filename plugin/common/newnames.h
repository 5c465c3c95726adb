// SPDX-License-Identifier: GPL-2.0-only
/* How many new names a feature may give its groups: every cgroup a tenant
 * makes (and every interface) is a new series in the backends (a whisper
 * file per value in Graphite, a time series in Prometheus), so a loop
 * that makes a cgroup, receives one packet in it and removes it would add
 * series without end. A feature asks before it names a group it has not
 * named yet: at most per_hour names new in the last hour, and a quarter of
 * that (at least 1) in one read after the first. A name given in the last hour is given
 * again for free (a service restarted under the same cgroup makes no new
 * series). What a feature does with a group refused is its own (netstacklat
 * counts it in the group "other"; pressure leaves it out). */
#ifndef EBPF_NEWNAMES_H
#define EBPF_NEWNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NEWNAMES_WINDOW_S 3600.0

struct newnames {
  unsigned per_hour, per_read;
  /* The names given in the last hour: their hash and when (oldest first). */
  struct newname_seen {
    uint32_t hash;
    double at;
  } *seen;
  size_t n;
  double now;
  unsigned this_read;   /* names new in this read */
  uint64_t reads;       /* newnames_tick() calls */
  uint64_t refused;     /* groups refused, since start */
  uint64_t refused_said; /* refused when the log last said so */
};

/* per_hour: the limit (0: none). Returns 0 or -ENOMEM. */
int newnames_init(struct newnames *b, unsigned per_hour);
/* At the start of each read: now (CLOCK_MONOTONIC seconds); the names
 * older than the window forgotten. */
void newnames_tick(struct newnames *b, double now);
/* May a group be named name? True for a name given within the hour (its
 * time renewed) or one that fits the limits (then counted); false, and
 * counted in refused, otherwise. */
bool newnames_admit(struct newnames *b, const char *name);
void newnames_free(struct newnames *b);

#endif
