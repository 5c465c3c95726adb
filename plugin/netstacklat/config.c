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

static void cfg_defaults(struct nsl_config *cfg) {
  cfg->hooks_set = false;
  for (int h = 0; h < NSL_NHOOKS; h++)
    cfg->hook_on[h] = true;
  static const double def_pct[] = {50, 90, 99, 99.9};
  cfg->npct = 4;
  memcpy(cfg->pct, def_pct, sizeof(def_pct));
  cfg->buckets = false;
  cfg->groupby = NSL_GROUP_NONE;
  cfg->min_qlen = 0;
  cfg->include_hol = true;
  cfg->max_groups = 128;
  cfg->timestamps = true;
  cfg->outlier_s = 0;
  cfg->outlier_limit = 10;
  cfg->sample_every = 1;
  cfg->cost_budget = 0.5;
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

/* CostBudget: a percentage of one CPU, 0.001 to 100. */
static int cfg_percent(const oconfig_item_t *ci, double *out) {
  if (ci->values_num != 1 || ci->children_num != 0 ||
      ci->values[0].type != OCONFIG_TYPE_NUMBER ||
      !isfinite(ci->values[0].value.number) ||
      ci->values[0].value.number < 0.001 || ci->values[0].value.number > 100) {
    E_ERROR("invalid value %s for option \"%s\" in block <Netstacklat>: "
            "expected one number from 0.001 to 100 (percent of one CPU).",
            cfg_values_str(ci, (char[256]){0}, 256), ci->key);
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
    if (!(p > 0 && p <= 100))
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
    if (!(sec >= 1e-6 && sec <= 17.0))
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
static int cfg_sample_every(struct nsl_config *cfg, const oconfig_item_t *c,
                            bool *seen) {
  if (c->values_num == 1 && c->children_num == 0 &&
      c->values[0].type == OCONFIG_TYPE_STRING &&
      !strcasecmp(c->values[0].value.string, "auto")) {
    int st = cfg_once(c, seen);
    cfg->sample_every = 0;
    return st;
  }
  if (c->values_num == 1 && c->values[0].type == OCONFIG_TYPE_NUMBER)
    return cfg_once(c, seen) || cfg_int_range(c, 1, 65536, &cfg->sample_every);
  E_ERROR("invalid value %s for option \"SampleEvery\" in block "
          "<Netstacklat>: expected one integer from 1 to 65536, or "
          "\"auto\".",
          cfg_values_str(c, (char[256]){0}, 256));
  return -1;
}

/* The keys that may be given once each: their index in seen[]. */
enum {
  SEEN_HOOKS,
  SEEN_PERCENTILES,
  SEEN_BUCKETS,
  SEEN_NETNS,
  SEEN_GROUPBY,
  SEEN_MIN_QLEN,
  SEEN_INCLUDE_HOL,
  SEEN_MAX_GROUPS,
  SEEN_TIMESTAMPS,
  SEEN_OUTLIER_THRESHOLD,
  SEEN_OUTLIER_LIMIT,
  SEEN_SAMPLE_EVERY,
  SEEN_COST_BUDGET,
  NSEEN
};

/* One key of the block: 0, or not 0 after an ERROR. */
static int cfg_key(struct nsl_config *cfg, const oconfig_item_t *c,
                   bool seen[NSEEN]) {
  const char *k = c->key;
  if (!strcasecmp(k, "Hooks"))
    return cfg_once(c, &seen[SEEN_HOOKS]) || cfg_hooks(cfg, c);
  if (!strcasecmp(k, "Percentiles"))
    return cfg_once(c, &seen[SEEN_PERCENTILES]) || cfg_percentiles(cfg, c);
  if (!strcasecmp(k, "Buckets"))
    return cfg_once(c, &seen[SEEN_BUCKETS]) || cfg_bool(c, &cfg->buckets);
  if (!strcasecmp(k, "BucketBounds"))
    return cfg_bounds(cfg, c);
  if (!strcasecmp(k, "Cgroup"))
    return cfg_cgroups_append(c, &cfg->cgroups, &cfg->ncgroups);
  if (!strcasecmp(k, "Interface"))
    return cfg_interfaces(cfg, c);
  if (!strcasecmp(k, "NetworkNamespace"))
    return cfg_once(c, &seen[SEEN_NETNS]) || cfg_string(c, &cfg->netns);
  if (!strcasecmp(k, "GroupBy")) {
    static const char *const g[] = {"none", "cgroup", "interface"};
    return cfg_once(c, &seen[SEEN_GROUPBY]) ||
           cfg_choice(c, g, 3, &cfg->groupby, "cgroup, interface or none");
  }
  if (!strcasecmp(k, "MinQueueLength"))
    return cfg_once(c, &seen[SEEN_MIN_QLEN]) ||
           cfg_int_range(c, 0, 1000000, &cfg->min_qlen);
  if (!strcasecmp(k, "IncludeHOLBlocked"))
    return cfg_once(c, &seen[SEEN_INCLUDE_HOL]) ||
           cfg_bool(c, &cfg->include_hol);
  if (!strcasecmp(k, "EnableTimestamps"))
    return cfg_once(c, &seen[SEEN_TIMESTAMPS]) || cfg_bool(c, &cfg->timestamps);
  if (!strcasecmp(k, "OutlierThreshold"))
    return cfg_once(c, &seen[SEEN_OUTLIER_THRESHOLD]) ||
           cfg_seconds(c, 0.000001, 3600, &cfg->outlier_s);
  if (!strcasecmp(k, "OutlierLimit"))
    return cfg_once(c, &seen[SEEN_OUTLIER_LIMIT]) ||
           cfg_int_range(c, 1, 10000, &cfg->outlier_limit);
  if (!strcasecmp(k, "SampleEvery"))
    return cfg_sample_every(cfg, c, &seen[SEEN_SAMPLE_EVERY]);
  if (!strcasecmp(k, "CostBudget"))
    return cfg_once(c, &seen[SEEN_COST_BUDGET]) ||
           cfg_percent(c, &cfg->cost_budget);
  if (!strcasecmp(k, "MaxGroups"))
    return cfg_once(c, &seen[SEEN_MAX_GROUPS]) ||
           cfg_int_range(c, 1, 65536, &cfg->max_groups);
  return cfg_unknown(c, "Netstacklat");
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
  int errors = 0;
  bool seen[NSEEN] = {0};
  for (int i = 0; i < ci->children_num; i++)
    if (cfg_key(cfg, &ci->children[i], seen))
      errors++;
  if (!errors)
    errors = cfg_check(cfg, seen[SEEN_COST_BUDGET]);
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
