// SPDX-License-Identifier: GPL-2.0-only
/* pressure's own: its settings (config.c parses them, pressure.c reads
 * the files they name). */
#ifndef EBPF_PRESSURE_INTERNAL_H
#define EBPF_PRESSURE_INTERNAL_H

#include "core/ebpf.h"

#define FEATURE "pressure"

enum { RES_CPU, RES_MEMORY, RES_IO, RES_IRQ, RES_COUNT };
extern const char *const res_name[RES_COUNT];

struct pressure_cfg {
  bool host;
  unsigned resources; /* bitmask of RES_* */
  unsigned averages;  /* bitmask: 1 avg10, 2 avg60, 4 avg300 */
  char **cgroups;     /* path globs below the cgroup2 root */
  size_t ncgroups;
  long long new_groups; /* NewGroupsPerHour (0: no limit) */
};
extern struct pressure_cfg cfg;
extern const struct cfg_block pressure_keys;

int pressure_config(const oconfig_item_t *ci);
/* Back to the defaults, the globs freed (shutdown). */
void pressure_config_reset(void);

#endif
