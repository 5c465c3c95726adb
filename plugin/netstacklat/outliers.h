// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's outlier records (OutlierThreshold): one record of the BPF
 * ring buffer becomes one WARNING notification naming the hook, the
 * connection, the process, the interface, the namespace and the cgroup
 * (fields: README, "Notifications"). The ring buffer and the counters
 * are read in read.c; this is the record's reading. */
#ifndef NSL_OUTLIERS_H
#define NSL_OUTLIERS_H

#include "core/base.h"
#include "common/cgroup.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nsl_outlier_ctx {
  const char *plugin;             /* "netstacklat" */
  const char *const *hook_names;  /* NSL_NHOOKS names: plugin_instance */
  struct cgroup_tree *cgroups;    /* cgroup ids to paths */
  uint32_t self_netns;            /* collectd's network namespace, this read */
  bool cg_refreshed;              /* the tree was read again this read */
  uint64_t notified;              /* notifications sent so far */
};

/* One record (struct nsl_outlier, len bytes): one notification. A short
 * record or an unknown hook is ignored. Returns 0 (the ring buffer's
 * callback: go on). */
int nsl_outlier_notify(struct nsl_outlier_ctx *c, const void *data,
                       size_t len);

#endif
