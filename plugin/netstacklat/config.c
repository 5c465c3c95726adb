// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's <Netstacklat> block: its keys, their defaults and checks,
 * and the names the values are dispatched under, made once from them. */
#include "netstacklat/internal.h"

#include <math.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const nsl_hook_names[NSL_NHOOKS] = {
    "ip_start",            "tcp_start",           "udp_start",
    "tcp_socket_enqueued", "udp_socket_enqueued", "tcp_socket_read",
    "udp_socket_read",
};

enum {
  K_HOOKS, K_PERCENTILES, K_BUCKETS, K_BOUNDS, K_NETNS, K_INTERFACE,
  K_CGROUP, K_GROUPBY, K_MAX_GROUPS, K_MIN_QLEN, K_INCLUDE_HOL,
  K_TIMESTAMPS, K_OUTLIER_THRESHOLD, K_OUTLIER_LIMIT, K_SAMPLE_EVERY,
  K_COST_BUDGET, K_NEW_GROUPS, NKEYS
};
static const struct cfg_key keys[NKEYS] = {
    [K_HOOKS] = {"Hooks", CK_OTHER,
                 .show = "ip_start tcp_start udp_start tcp_socket_enqueued "
                         "udp_socket_enqueued tcp_socket_read udp_socket_read",
                 .doc = "the points of the stack measured"},
    /* The lowest a percentile's name can say in digits: 0.0001 ("%.15g"
     * of anything smaller has an exponent). */
    [K_PERCENTILES] = {"Percentiles", CK_OTHER, 0.0001, 100,
                       .show = "50 90 99 99.9",
                       .doc = "the quantiles dispatched as latency-p<digits>"},
    [K_BUCKETS] = {"Buckets", CK_BOOL, .def = 0,
                   .doc = "the histogram's 26 bucket rates per hook"},
    /* The fine buckets' range: 1 us to 17 s. */
    [K_BOUNDS] = {"BucketBounds", CK_OTHER, 0.000001, 17, .show = "none",
                  .repeat = true,
                  .doc = "seconds: a cumulative count of the events at or "
                         "below each"},
    [K_NETNS] = {"NetworkNamespace", CK_STRING, .show = "host",
                 .doc = "host, all, or a namespace's name or path"},
    [K_INTERFACE] = {"Interface", CK_STRINGS, .show = "none", .repeat = true,
                     .doc = "only packets received on these interfaces"},
    [K_CGROUP] = {"Cgroup", CK_STRINGS, .show = "none", .repeat = true,
                  .doc = "only sockets of these cgroups (paths or globs)"},
    [K_GROUPBY] = {"GroupBy", CK_OTHER, .show = "none",
                   .doc = "none, cgroup or interface: a histogram per group"},
    [K_MAX_GROUPS] = {"MaxGroups", CK_INT, 1, 65536, 128,
                      .doc = "groups of GroupBy at most"},
    [K_MIN_QLEN] = {"MinQueueLength", CK_INT, 0, 1000000, 0,
                    .doc = "socket reads only when this many bytes or more "
                           "were queued"},
    [K_INCLUDE_HOL] = {"IncludeHOLBlocked", CK_BOOL, .def = 1,
                       .doc = "count reads whose data waited behind a hole"},
    [K_TIMESTAMPS] = {"EnableTimestamps", CK_BOOL, .def = 1,
                      .doc = "hold a socket that turns receive timestamps on"},
    [K_OUTLIER_THRESHOLD] = {"OutlierThreshold", CK_SECONDS, 0.000001, 3600,
                             .show = "none",
                             .doc = "a notification for each event slower"},
    [K_OUTLIER_LIMIT] = {"OutlierLimit", CK_INT, 1, 10000, 10,
                         .doc = "outlier notifications a second at most"},
    [K_SAMPLE_EVERY] = {"SampleEvery", CK_OTHER, 1, 65536, 1,
                        .show = "1",
                        .doc = "time one event in N (or auto), count all"},
    [K_COST_BUDGET] = {"CostBudget", CK_OTHER, 0.001, 100, 0.5,
                       .show = "0.5",
                       .doc = "percent of one CPU SampleEvery auto keeps to"},
    [K_NEW_GROUPS] = {"NewGroupsPerHour", CK_INT, 0, 1000000, 256,
                      .doc = "new group names an hour (a quarter a read); "
                             "the rest counted in the group other"},
};
const struct cfg_block nsl_keys = {"Netstacklat", keys, NKEYS};

static void cfg_defaults(struct nsl_config *cfg) {
  cfg->hooks_set = false;
  for (int h = 0; h < NSL_NHOOKS; h++)
    cfg->hook_on[h] = true;
  static const double def_pct[] = {50, 90, 99, 99.9};
  cfg->npct = 4;
  memcpy(cfg->pct, def_pct, sizeof(def_pct));
  cfg->buckets = cfg_key_default(&nsl_keys, K_BUCKETS) != 0;
  cfg->groupby = NSL_GROUP_NONE;
  cfg->min_qlen = (long long)cfg_key_default(&nsl_keys, K_MIN_QLEN);
  cfg->include_hol = cfg_key_default(&nsl_keys, K_INCLUDE_HOL) != 0;
  cfg->max_groups = (long long)cfg_key_default(&nsl_keys, K_MAX_GROUPS);
  cfg->new_groups = (long long)cfg_key_default(&nsl_keys, K_NEW_GROUPS);
  cfg->timestamps = cfg_key_default(&nsl_keys, K_TIMESTAMPS) != 0;
  cfg->outlier_s = 0; /* off */
  cfg->outlier_limit = (long long)cfg_key_default(&nsl_keys, K_OUTLIER_LIMIT);
  cfg->sample_every = (long long)cfg_key_default(&nsl_keys, K_SAMPLE_EVERY);
  cfg->cost_budget = cfg_key_default(&nsl_keys, K_COST_BUDGET);
  cfg->nbounds = 0;
}

static int cfg_hooks(struct nsl_config *cfg, const oconfig_item_t *ci) {
  bool on[NSL_NHOOKS] = {0};
  char buf[256];
  if (ci->values_num < 1 || ci->children_num != 0)
    goto bad;
  for (int i = 0; i < ci->values_num; i++) {
    if (ci->values[i].type != OCONFIG_TYPE_STRING)
      goto bad;
    int h;
    for (h = 0; h < NSL_NHOOKS; h++)
      if (strcmp(ci->values[i].value.string, nsl_hook_names[h]) == 0)
        break;
    if (h == NSL_NHOOKS) {
      E_ERROR("invalid value \"%s\" for option \"Hooks\" in block "
              "<Netstacklat>: unknown hook (hooks: ip_start tcp_start "
              "udp_start tcp_socket_enqueued udp_socket_enqueued "
              "tcp_socket_read udp_socket_read).",
              ci->values[i].value.string);
      return -1;
    }
    on[h] = true;
  }
  memcpy(cfg->hook_on, on, sizeof(on));
  cfg->hooks_set = true;
  return 0;
bad:
  E_ERROR("invalid value %s for option \"Hooks\" in block <Netstacklat>: "
          "expected one or more hook names.",
          cfg_values_str(ci, buf, sizeof(buf)));
  return -1;
}

/* The type instance of a percentile: "p" and its digits without the dot
 * (50 -> p50, 99.9 -> p999), to 15 significant digits (99.999999 ->
 * p99999999, not p100). Returns false for a name that would not be
 * digits (1e-05) or would not fit. */
static bool pct_name(double p, char *buf, size_t len) {
  char tmp[40];
  snprintf(tmp, sizeof(tmp), "%.15g", p);
  size_t o = 0;
  buf[o++] = 'p';
  for (char *s = tmp; *s; s++) {
    if (*s == '.')
      continue;
    if (*s < '0' || *s > '9' || o + 1 >= len) /* 1e-05, or too long */
      return false;
    buf[o++] = *s;
  }
  buf[o] = 0;
  return true;
}

/* CostBudget: a percentage of one CPU. */
static int cfg_percent(const oconfig_item_t *ci, double *out) {
  const struct cfg_key *k = &keys[K_COST_BUDGET];
  if (ci->values_num != 1 || ci->children_num != 0 ||
      ci->values[0].type != OCONFIG_TYPE_NUMBER ||
      !isfinite(ci->values[0].value.number) ||
      ci->values[0].value.number < k->min ||
      ci->values[0].value.number > k->max) {
    E_ERROR("invalid value %s for option \"%s\" in block <Netstacklat>: "
            "expected one number from %g to %g (percent of one CPU).",
            cfg_values_str(ci, (char[256]){0}, 256), ci->key, k->min, k->max);
    return -1;
  }
  *out = ci->values[0].value.number;
  return 0;
}

static int cfg_percentiles(struct nsl_config *cfg, const oconfig_item_t *ci) {
  char buf[256];
  if (ci->values_num < 1 || ci->values_num > MAX_PERCENTILES ||
      ci->children_num != 0)
    goto bad;
  for (int i = 0; i < ci->values_num; i++) {
    if (ci->values[i].type != OCONFIG_TYPE_NUMBER)
      goto bad;
    double p = ci->values[i].value.number;
    if (!(p >= keys[K_PERCENTILES].min && p <= keys[K_PERCENTILES].max))
      goto bad;
    cfg->pct[i] = p;
    /* Dropping the dot can make two percentiles one name (99.9 and 9.99
     * are both p999): refuse rather than dispatch two series as one. */
    char name[PCT_NAME_LEN];
    if (!pct_name(p, name, sizeof(name)))
      goto bad;
    for (int j = 0; j < i; j++) {
      char other[PCT_NAME_LEN];
      pct_name(cfg->pct[j], other, sizeof(other));
      if (strcmp(name, other) == 0) {
        E_ERROR("invalid value %s for option \"Percentiles\" in block "
                "<Netstacklat>: %g and %g would both be dispatched as "
                "latency-%s (the name drops the dot); leave one out.",
                cfg_values_str(ci, buf, sizeof(buf)), cfg->pct[j], p, name);
        return -1;
      }
    }
  }
  cfg->npct = ci->values_num;
  return 0;
bad:
  E_ERROR("invalid value %s for option \"Percentiles\" in block "
          "<Netstacklat>: expected 1 to %d numbers in [0.0001, 100] of at "
          "most 15 significant digits, like 50 90 99 99.9.",
          cfg_values_str(ci, buf, sizeof(buf)), MAX_PERCENTILES);
  return -1;
}

/* BucketBounds <seconds>...: repeatable, at most MAX_BOUNDS in all, each
 * rounded to the nearest fine bucket edge (said once, at INFO). */
static int cfg_bounds(struct nsl_config *cfg, const oconfig_item_t *ci) {
  char buf[256];
  if (ci->values_num < 1 || ci->children_num != 0)
    goto bad;
  for (int i = 0; i < ci->values_num; i++) {
    if (ci->values[i].type != OCONFIG_TYPE_NUMBER)
      goto bad;
    double sec = ci->values[i].value.number;
    if (!(sec >= keys[K_BOUNDS].min && sec <= keys[K_BOUNDS].max))
      goto bad;
    uint64_t ns = (uint64_t)(sec * 1e9 + 0.5);
    uint64_t edge = hist_fine_edge_near(ns);
    if (edge != ns)
      E_INFO("netstacklat: BucketBounds %g s is counted at %.9g s, the "
             "nearest edge of the fine buckets (%llu ns): within 1/32 of "
             "it.",
             sec, edge / 1e9, (unsigned long long)edge);
    bool dup = false;
    for (int j = 0; j < cfg->nbounds; j++)
      dup = dup || cfg->bounds[j] == edge;
    if (dup) /* given twice (or rounded to one edge): counted once */
      continue;
    if (cfg->nbounds == MAX_BOUNDS) {
      E_ERROR("option \"BucketBounds\" in block <Netstacklat>: more than "
              "%d bounds in all.",
              MAX_BOUNDS);
      return -1;
    }
    cfg->bounds[cfg->nbounds++] = edge;
  }
  qsort(cfg->bounds, (size_t)cfg->nbounds, sizeof(cfg->bounds[0]), cmp_u64);
  return 0;
bad:
  E_ERROR("invalid value %s for option \"BucketBounds\" in block "
          "<Netstacklat>: expected one or more numbers of seconds from "
          "0.000001 to 17, like 0.001 0.01 0.1.",
          cfg_values_str(ci, buf, sizeof(buf)));
  return -1;
}

static int cfg_choice(const oconfig_item_t *ci, const char *const *names,
                      int n, int *out, const char *want) {
  char *s = NULL;
  if (cfg_string(ci, &s))
    return -1;
  for (int i = 0; i < n; i++)
    if (strcasecmp(s, names[i]) == 0) {
      *out = i;
      free(s);
      return 0;
    }
  E_ERROR("invalid value \"%s\" for option \"%s\" in block <Netstacklat>: "
          "expected %s.",
          s, ci->key, want);
  free(s);
  return -1;
}

/* Interface <name>...: repeatable, each a name an interface can have. */
static int cfg_interfaces(struct nsl_config *cfg, const oconfig_item_t *c) {
  int st = cfg_strings_append(c, &cfg->ifaces, &cfg->nifaces);
  for (size_t j = 0; !st && j < cfg->nifaces; j++)
    if (strlen(cfg->ifaces[j]) >= IFNAMSIZ || strchr(cfg->ifaces[j], '/')) {
      E_ERROR("invalid value \"%s\" for option \"Interface\" in block "
              "<Netstacklat>: not an interface name.",
              cfg->ifaces[j]);
      st = -1;
    }
  return st;
}

/* SampleEvery <N> or "auto" (0). */
static int cfg_sample_every(struct nsl_config *cfg, const oconfig_item_t *c) {
  const struct cfg_key *k = &keys[K_SAMPLE_EVERY];
  if (c->values_num == 1 && c->children_num == 0 &&
      c->values[0].type == OCONFIG_TYPE_STRING &&
      !strcasecmp(c->values[0].value.string, "auto")) {
    cfg->sample_every = 0;
    return 0;
  }
  if (c->values_num == 1 && c->values[0].type == OCONFIG_TYPE_NUMBER)
    return cfg_key_int(k, c, &cfg->sample_every);
  E_ERROR("invalid value %s for option \"SampleEvery\" in block "
          "<Netstacklat>: expected one integer from %g to %g, or \"auto\".",
          cfg_values_str(c, (char[256]){0}, 256), k->min, k->max);
  return -1;
}

/* One key of the block: 0, or not 0 after an ERROR. */
static int cfg_key(void *ctx, const oconfig_item_t *c, int k) {
  struct nsl_config *cfg = ctx;
  static const char *const groupby[] = {"none", "cgroup", "interface"};
  switch (k) {
  case K_HOOKS:
    return cfg_hooks(cfg, c);
  case K_PERCENTILES:
    return cfg_percentiles(cfg, c);
  case K_BUCKETS:
    return cfg_key_bool(&keys[k], c, &cfg->buckets);
  case K_BOUNDS:
    return cfg_bounds(cfg, c);
  case K_CGROUP:
    return cfg_cgroups_append(c, &cfg->cgroups, &cfg->ncgroups);
  case K_INTERFACE:
    return cfg_interfaces(cfg, c);
  case K_NETNS:
    return cfg_string(c, &cfg->netns);
  case K_GROUPBY:
    return cfg_choice(c, groupby, 3, &cfg->groupby,
                      "cgroup, interface or none");
  case K_MIN_QLEN:
    return cfg_key_int(&keys[k], c, &cfg->min_qlen);
  case K_INCLUDE_HOL:
    return cfg_key_bool(&keys[k], c, &cfg->include_hol);
  case K_TIMESTAMPS:
    return cfg_key_bool(&keys[k], c, &cfg->timestamps);
  case K_OUTLIER_THRESHOLD:
    return cfg_key_seconds(&keys[k], c, &cfg->outlier_s);
  case K_OUTLIER_LIMIT:
    return cfg_key_int(&keys[k], c, &cfg->outlier_limit);
  case K_SAMPLE_EVERY:
    return cfg_sample_every(cfg, c);
  case K_COST_BUDGET:
    return cfg_percent(c, &cfg->cost_budget);
  case K_MAX_GROUPS:
    return cfg_key_int(&keys[k], c, &cfg->max_groups);
  case K_NEW_GROUPS:
    return cfg_key_int(&keys[k], c, &cfg->new_groups);
  }
  return -1;
}

/* What no key says alone: the keys together. Returns the errors. */
static int cfg_check(const struct nsl_config *cfg, bool cost_budget_given) {
  if (cost_budget_given && cfg->sample_every != 0) {
    E_ERROR("option \"CostBudget\" in block <Netstacklat>: it sets what "
            "SampleEvery \"auto\" keeps to; add SampleEvery \"auto\" or "
            "remove CostBudget.");
    return 1;
  }
  int errors = 0;
  if ((cfg->ncgroups || cfg->groupby == NSL_GROUP_CGROUP) && cfg->hooks_set) {
    for (int h = 0; h < NSL_NHOOKS; h++)
      if (cfg->hook_on[h] && !hook_has_socket(h)) {
        E_ERROR("option \"Hooks\" in block <Netstacklat>: hook %s sees "
                "packets before they have a socket, so it cannot be "
                "filtered or grouped by cgroup; remove it or the cgroup "
                "option.",
                nsl_hook_names[h]);
        errors++;
      }
  }
  return errors;
}

static int netstacklat_config(struct nsl_config *cfg,
                              const oconfig_item_t *ci) {
  bool seen[NKEYS] = {0};
  int errors = cfg_block_walk(&nsl_keys, ci, seen, cfg_key, cfg);
  if (!errors)
    errors = cfg_check(cfg, seen[K_COST_BUDGET]);
  return errors ? -1 : 0;
}

int nsl_configure(struct nsl_state *s, const oconfig_item_t *ci) {
  struct nsl_config *cfg = &s->cfg;
  static bool defaults_set;
  if (!defaults_set) {
    cfg_defaults(cfg);
    defaults_set = true;
  }
  int st = netstacklat_config(cfg, ci);
  for (int i = 0; i < cfg->npct; i++)
    pct_name(cfg->pct[i], s->pct_names[i], sizeof(s->pct_names[i]));
  for (unsigned k = 0; k < HIST_NBUCKETS; k++)
    hist_bucket_name(k, s->bucket_names[k], sizeof(s->bucket_names[k]));
  for (int b = 0; b < cfg->nbounds; b++)
    snprintf(s->bound_names[b], sizeof(s->bound_names[b]), "le_%llu",
             (unsigned long long)cfg->bounds[b]);
  for (__u32 h = 0; h < NSL_NHOOKS; h++)
    vl_prepare(&s->hook_vl[h], FEATURE, nsl_hook_names[h]);
  return st;
}

void nsl_config_free(struct nsl_config *cfg) {
  cfg_free_list(cfg->cgroups);
  cfg_free_list(cfg->ifaces);
  free(cfg->netns);
  memset(cfg, 0, sizeof(*cfg));
  cfg_defaults(cfg);
}
