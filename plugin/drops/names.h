// SPDX-License-Identifier: GPL-2.0-only
/* drops' names and counters: per reason (enum skb_drop_reason, its names
 * read from the running kernel's BTF, 5.17+) or, on kernels without
 * reasons, per drop location (the kernel function that freed the packet,
 * named from /proc/kallsyms when it is first seen). */
#ifndef EBPF_DROPS_NAMES_H
#define EBPF_DROPS_NAMES_H

#include "core/base.h"

#include <bpf/btf.h>
#include <stdint.h>

/* A reason as the metric names it: [a-z0-9_], as the kernel spells it
 * after the prefix (IgnoreReason's values). */
bool drops_reason_name_ok(const char *s);

/* Names of enum skb_drop_reason's values: 1 when read, 0 when the kernel
 * has no such enum (drop reasons came with 5.17), -ENOMEM. Slot i of the
 * counters < drops_nreasons() is the enum's value i; slot drops_nreasons()
 * counts the rest. */
int drops_reasons_read(const struct btf *btf);
uint32_t drops_nreasons(void);
/* SKB_CONSUMED, -1 when the enum has none. */
int64_t drops_consumed(void);
/* IgnoreReason's names (lower case) against this kernel's: a WARNING for
 * each it does not have. */
void drops_reasons_ignore(char **ignore, size_t n);
/* Mark the ignored reasons in the map of reasons that make no record. */
void drops_reasons_quiet(int quiet_fd);
/* Dispatch the counters of the per-CPU map of reasons. */
void drops_reasons_dispatch(int by_reason_fd);
/* The metric name of a reason (for a notification); buf holds the name
 * of a gap in the enum. */
const char *drops_reason_of(uint64_t cause, char *buf, size_t len);

/* Room for the locations and for max_locations named functions
 * (MaxLocations): -ENOMEM when there is none. */
int drops_locations_alloc(long long max_locations);
/* Dispatch the counters of the hash of locations, and of the per-CPU
 * overflow counter under at_other. */
void drops_locations_dispatch(int by_location_fd, int overflow_fd);
/* The metric name of a location (for a notification): named like the
 * counters, from /proc/kallsyms when first seen. */
const char *drops_location_name(uint64_t addr);

/* Forget every name and counter. */
void drops_names_free(void);

#endif
