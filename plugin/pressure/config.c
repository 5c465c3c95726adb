// SPDX-License-Identifier: GPL-2.0-only
/* pressure: the <Pressure> block (see internal.h). */
#include "common/cgroup.h"
#include "pressure/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const res_name[RES_COUNT] = {"cpu", "memory", "io", "irq"};

struct pressure_cfg cfg = {.host = true,
                           .resources = (1u << RES_COUNT) - 1,
                           .averages = 7};

static int parse_resources(const oconfig_item_t *ci) {
  unsigned mask = 0;
  if (ci->values_num < 1 || ci->children_num != 0)
    goto bad;
  for (int i = 0; i < ci->values_num; i++) {
    if (ci->values[i].type != OCONFIG_TYPE_STRING)
      goto bad;
    int r;
    for (r = 0; r < RES_COUNT; r++)
      if (strcasecmp(ci->values[i].value.string, res_name[r]) == 0)
        break;
    if (r == RES_COUNT)
      goto bad;
    mask |= 1u << r;
  }
  cfg.resources = mask;
  return 0;
bad:;
  char buf[256];
  E_ERROR("invalid value %s for option \"Resources\" in block <Pressure>: "
          "expected one or more of \"cpu\" \"memory\" \"io\" \"irq\".",
          cfg_values_str(ci, buf, sizeof(buf)));
  return -1;
}

/* Averages 10 60 300: which of the kernel's running averages to dispatch
 * (the totals always are: any average can be derived from them). */
static int parse_averages(const oconfig_item_t *ci) {
  static const int window[3] = {10, 60, 300};
  unsigned mask = 0;
  if (ci->values_num < 1 || ci->children_num != 0)
    goto bad;
  for (int i = 0; i < ci->values_num; i++) {
    const oconfig_value_t *v = &ci->values[i];
    double d;
    if (v->type == OCONFIG_TYPE_NUMBER)
      d = v->value.number;
    else if (v->type == OCONFIG_TYPE_STRING) {
      char *end;
      d = strtod(v->value.string, &end);
      if (end == v->value.string || *end)
        goto bad;
    } else
      goto bad;
    int w;
    for (w = 0; w < 3; w++)
      if (d == window[w])
        break;
    if (w == 3)
      goto bad;
    mask |= 1u << w;
  }
  cfg.averages = mask;
  return 0;
bad:;
  char buf[256];
  E_ERROR("invalid value %s for option \"Averages\" in block <Pressure>: "
          "expected one or more of 10 60 300 (the kernel's avg10, avg60, "
          "avg300).",
          cfg_values_str(ci, buf, sizeof(buf)));
  return -1;
}

enum { K_HOST, K_RESOURCES, K_AVERAGES, K_CGROUP, K_NEW_GROUPS, NKEYS };
static const struct cfg_key keys[NKEYS] = {
    [K_HOST] = {"Host", CK_BOOL, .def = 1,
                .doc = "the host's /proc/pressure files"},
    [K_RESOURCES] = {"Resources", CK_OTHER, .show = "cpu memory io irq",
                     .doc = "which of cpu, memory, io, irq"},
    [K_AVERAGES] = {"Averages", CK_OTHER, .show = "10 60 300",
                    .doc = "which of the kernel's running averages (10, 60, "
                           "300 s) are dispatched"},
    [K_CGROUP] = {"Cgroup", CK_STRINGS, .show = "none", .repeat = true,
                  .doc = "cgroup paths or globs below the cgroup2 root"},
    [K_NEW_GROUPS] = {"NewGroupsPerHour", CK_INT, 0, 1000000, 1024,
                      .doc = "cgroups newly watched an hour (a quarter a "
                             "read); the rest left out"},
};
const struct cfg_block pressure_keys = {"Pressure", keys, NKEYS};

static int config_key(void *ctx, const oconfig_item_t *c, int k) {
  (void)ctx;
  switch (k) {
  case K_HOST:
    return cfg_key_bool(&keys[k], c, &cfg.host);
  case K_RESOURCES:
    return parse_resources(c);
  case K_AVERAGES:
    return parse_averages(c);
  case K_CGROUP:
    return cfg_cgroups_append(c, &cfg.cgroups, &cfg.ncgroups);
  case K_NEW_GROUPS:
    return cfg_key_int(&keys[k], c, &cfg.new_groups);
  }
  return -1;
}

int pressure_config(const oconfig_item_t *ci) {
  bool seen[NKEYS] = {0};
  cfg.host = cfg_key_default(&pressure_keys, K_HOST) != 0;
  cfg.new_groups = (long long)cfg_key_default(&pressure_keys, K_NEW_GROUPS);
  int errors = cfg_block_walk(&pressure_keys, ci, seen, config_key, NULL);
  if (!errors && !cfg.host && cfg.ncgroups == 0) {
    E_ERROR("block <Pressure> has \"Host false\" and no \"Cgroup\": nothing "
            "to read.");
    errors++;
  }
  return errors ? -1 : 0;
}

void pressure_config_reset(void) {
  cfg_free_list(cfg.cgroups);
  cfg.cgroups = NULL;
  cfg.ncgroups = 0;
  cfg.host = cfg_key_default(&pressure_keys, K_HOST) != 0;
  cfg.resources = (1u << RES_COUNT) - 1;
  cfg.averages = 7;
  cfg.new_groups = (long long)cfg_key_default(&pressure_keys, K_NEW_GROUPS);
}
