// SPDX-License-Identifier: GPL-2.0-only
/* drops: packets the kernel dropped, per reason (enum skb_drop_reason, its
 * names read from the running kernel's BTF, 5.17+) or, on kernels without
 * reasons, per drop location (the kernel function that freed the packet,
 * named from /proc/kallsyms when it is first seen). docs/drops.md is the
 * reference; bpf/drops/drops.bpf.c says which program runs on which kernel.
 * This file: the configuration, which generation of programs the kernel
 * gets, loading, reading; names.c the names and counters, notify.c the
 * DropNotifications. */
#define _GNU_SOURCE 1
#include "core/ebpf.h"
#include "drops/names.h"
#include "drops/notify.h"
#include "drops.skel.h"
#include "common/loader.h"
#include "common/netns.h"

#include <bpf/btf.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FEATURE "drops"
#define BLOCK "Drops"

static struct {
  char *netns;
  long long max_locations;
  char **ignore; /* IgnoreReason names, lower case */
  size_t nignore;
  bool notify;      /* DropNotifications */
  long long limit;  /* DropLimit, a second */
} cfg;

enum { K_NETNS, K_MAX_LOCATIONS, K_NOTIFY, K_LIMIT, K_IGNORE, NKEYS };
static const struct cfg_key keys[NKEYS] = {
    [K_NETNS] = {"NetworkNamespace", CK_STRING, .show = "host",
                 .doc = "host, all, or a namespace's name or path"},
    [K_MAX_LOCATIONS] = {"MaxLocations", CK_INT, 1, 1000, 32,
                         .doc = "kernels without drop reasons: how many drop "
                                "locations get a series of their own"},
    [K_NOTIFY] = {"DropNotifications", CK_BOOL, .def = 0,
                  .doc = "a notification for each drop, naming the "
                         "connection, process and cgroup"},
    [K_LIMIT] = {"DropLimit", CK_INT, 1, 10000, 10,
                 .doc = "notifications a second at most, the rest counted"},
    [K_IGNORE] = {"IgnoreReason", CK_STRINGS, .show = "none", .repeat = true,
                  .doc = "reasons left out, as the metric names them"},
};
static const struct cfg_block block = {BLOCK, keys, NKEYS};

static void cfg_defaults(void) {
  free(cfg.netns);
  cfg.netns = NULL;
  cfg.max_locations = (long long)cfg_key_default(&block, K_MAX_LOCATIONS);
  cfg_free_list(cfg.ignore);
  cfg.ignore = NULL;
  cfg.nignore = 0;
  cfg.notify = cfg_key_default(&block, K_NOTIFY) != 0;
  cfg.limit = (long long)cfg_key_default(&block, K_LIMIT);
}

static int cfg_ignore(const oconfig_item_t *c) {
  size_t from = cfg.nignore;
  int st = cfg_strings_append(c, &cfg.ignore, &cfg.nignore);
  for (size_t k = from; !st && k < cfg.nignore; k++) {
    char *s = cfg.ignore[k];
    for (char *p = s; *p; p++)
      *p = (char)tolower((unsigned char)*p);
    if (!drops_reason_name_ok(s)) {
      E_ERROR("invalid value \"%s\" for option \"IgnoreReason\" in block "
              "<" BLOCK ">: a reason is written as the metric names it "
              "(letters, digits and '_', e.g. \"no_socket\").",
              s);
      st = -1;
    }
  }
  return st;
}

static int config_key(void *ctx, const oconfig_item_t *c, int k) {
  (void)ctx;
  switch (k) {
  case K_NETNS:
    return cfg_string(c, &cfg.netns);
  case K_MAX_LOCATIONS:
    return cfg_key_int(&keys[k], c, &cfg.max_locations);
  case K_NOTIFY:
    return cfg_key_bool(&keys[k], c, &cfg.notify);
  case K_LIMIT:
    return cfg_key_int(&keys[k], c, &cfg.limit);
  case K_IGNORE:
    return cfg_ignore(c);
  }
  return -1;
}

static int drops_config(const oconfig_item_t *ci) {
  bool seen[NKEYS] = {0};
  cfg_defaults();
  int errors = cfg_block_walk(&block, ci, seen, config_key, NULL);
  if (!errors && seen[K_LIMIT] && !cfg.notify) {
    E_ERROR("option \"DropLimit\" in block <" BLOCK "> needs "
            "DropNotifications true.");
    errors++;
  }
  return errors ? -1 : 0;
}

/* ------------------------------------------------------------------ state */

static struct drops_bpf *skel;
static uint32_t netns_ino; /* BPF filter; 0: all */

enum gen { GEN_REASON_SK, GEN_REASON, GEN_LOCATION };
static enum gen gen;

#define P(...) HOOK_PROG(drops_bpf, __VA_ARGS__)
static const struct hook_def hook_defs[] = {
    [GEN_REASON_SK] = {"kfree_skb",
                       {P(drops_fentry_sk), P(drops_tp_sk), P(drops_kprobe_sk)}},
    [GEN_REASON] = {"kfree_skb",
                    {P(drops_fentry), P(drops_tp), P(drops_kprobe)}},
    [GEN_LOCATION] = {"kfree_skb", {P(drops_loc_tp), P(drops_loc_kprobe)}},
};
#undef P
static struct hook_state hooks[1];

/* -------------------------------------------------- the kernel's BTF */

/* BTFPath's file, parsed for this (*own: to free), or the kernel's BTF
 * that the loader parsed once for every feature's start. */
static const struct btf *load_btf(struct btf **own) {
  *own = NULL;
  if (!ebpf_global.btf_path)
    return loader_kernel_btf();
  struct btf *btf = btf__parse(ebpf_global.btf_path, NULL);
  *own = btf && !libbpf_get_error(btf) ? btf : NULL;
  return *own;
}

/* The number of arguments of a tracepoint (its btf_trace_<name> typedef:
 * a pointer to a function whose first parameter is the probe's data),
 * -1 when the kernel has no such tracepoint. */
static int tp_nargs(const struct btf *btf, const char *tp) {
  char name[128];
  snprintf(name, sizeof(name), "btf_trace_%s", tp);
  int id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
  if (id < 0)
    return -1;
  const struct btf_type *t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
  if (!t || !btf_is_ptr(t))
    return -1;
  t = btf__type_by_id(btf, t->type);
  if (!t || !btf_is_func_proto(t))
    return -1;
  return (int)btf_vlen(t) - 1;
}

/* ------------------------------------------------------------ loading */

static struct bpf_object *drops_open(void *ctx, void **skel_out) {
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  skel = drops_bpf__open_opts(&opts);
  if (!skel)
    return NULL;
  *skel_out = skel;
  skel->rodata->targ_netns = netns_ino;
  skel->rodata->targ_nreasons = drops_nreasons();
  skel->rodata->targ_consumed = drops_consumed();
  skel->rodata->targ_notify = cfg.notify;
  skel->rodata->targ_drop_limit = (__u64)cfg.limit;
  bpf_map__set_max_entries(skel->maps.drops_by_reason, drops_nreasons() + 1);
  bpf_map__set_max_entries(skel->maps.drops_quiet, drops_nreasons() + 1);
  if (!cfg.notify) /* the smallest ring buffer: one page */
    bpf_map__set_max_entries(skel->maps.drops_events,
                             (__u32)sysconf(_SC_PAGESIZE));
  if (gen != GEN_LOCATION) /* no location is counted */
    bpf_map__set_max_entries(skel->maps.drops_by_location, 1);
  return skel->obj;
}

static int drops_load(void *ctx) { return drops_bpf__load(skel); }

static void drops_destroy(void *ctx) {
  drops_bpf__destroy(skel);
  skel = NULL;
}


static void drops_shutdown(void);

/* Which generation of programs this kernel gets, from its BTF: reasons
 * with the receiving socket, reasons, or locations; the reasons' names are
 * read on the way. */
static int choose_gen(void) {
  struct btf *own;
  const struct btf *btf = load_btf(&own);
  if (!btf) {
    E_WARNING(FEATURE ": the kernel's BTF (%s) cannot be read: the drop "
              "reasons cannot be named and the programs cannot be relocated; "
              "the feature is disabled.",
              ebpf_global.btf_path ? ebpf_global.btf_path
                                   : "/sys/kernel/btf/vmlinux");
    return -ENOTSUP;
  }
  int nargs = tp_nargs(btf, "kfree_skb");
  int have = nargs >= 3 ? drops_reasons_read(btf) : 0;
  /* 6.11 added the receiving socket to both (rx_sk). */
  bool sk_drop =
      nargs >= 4 &&
      btf__find_by_name_kind(btf, "sk_skb_reason_drop", BTF_KIND_FUNC) >= 0;
  btf__free(own);
  if (have < 0) {
    drops_shutdown();
    return have;
  }
  if (have) {
    gen = sk_drop ? GEN_REASON_SK : GEN_REASON;
    drops_reasons_ignore(cfg.ignore, cfg.nignore);
    E_INFO(FEATURE ": counting by drop reason (%u names from the kernel's "
           "enum skb_drop_reason).",
           drops_nreasons());
  } else { /* no reason was read: drops_nreasons() is 0 */
    gen = GEN_LOCATION;
    E_INFO(FEATURE ": this kernel gives no drop reasons (before 5.17): "
           "counting by drop location (the function that freed the packet), "
           "at most %lld names, the rest as at_other.",
           cfg.max_locations);
    if (cfg.nignore)
      E_WARNING(FEATURE ": IgnoreReason has no effect on a kernel without "
                "drop reasons.");
  }
  return 0;
}

/* The one hook, with the programs of the kernel's generation. */
static void hook_setup(void) {
  memset(hooks, 0, sizeof(hooks));
  hooks[0].def = &hook_defs[gen];
  hooks[0].wanted = true;
  if (gen == GEN_LOCATION)
    hooks[0].refuse[FLAVOUR_FENTRY] =
        "an fentry program cannot see the drop location, and this kernel "
        "has no drop reasons";
  else if (ebpf_global.attach_mode == ATTACH_AUTO)
    /* The tracepoint is the drop's own definition; a function entry misses
     * what kfree_skb_list() frees. */
    hooks[0].refuse[FLAVOUR_FENTRY] =
        "not tried in AttachMode auto: the kfree_skb tracepoint sees every "
        "drop (an fentry program misses kfree_skb_list's)";
}

static int drops_init(void) {
  struct netns ns;
  int err = netns_resolve(cfg.netns, FEATURE, &ns);
  if (err)
    return err;
  netns_ino = ns.inum; /* 0 for "all" */

  err = choose_gen();
  if (err)
    return err;
  hook_setup();
  struct loader_ops ops = {
      .open = drops_open, .load = drops_load, .destroy = drops_destroy};
  int n = loader_run(FEATURE, &ops, hooks, 1);
  if (n <= 0) {
    E_WARNING(FEATURE ": no program can count drops on this kernel (see "
              "above); the feature is disabled.");
    drops_shutdown();
    return n < 0 ? n : -ENOTSUP;
  }
  if (gen != GEN_LOCATION)
    drops_reasons_quiet(bpf_map__fd(skel->maps.drops_quiet));
  if (cfg.notify) {
    err = drops_notify_start(bpf_map__fd(skel->maps.drops_events),
                             bpf_map__fd(skel->maps.drops_events_suppressed),
                             gen == GEN_LOCATION);
    if (err) {
      drops_shutdown();
      return err;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ reading */

static int drops_read(void) {
  if (!skel)
    return 0;
  if (gen == GEN_LOCATION)
    drops_locations_dispatch(
        bpf_map__fd(skel->maps.drops_by_location),
        bpf_map__fd(skel->maps.drops_location_overflow));
  else
    drops_reasons_dispatch(bpf_map__fd(skel->maps.drops_by_reason));
  drops_notify_read();
  return 0;
}

/* ---------------------------------------------------------------- feature */

static void drops_shutdown(void) {
  drops_notify_stop();
  loader_detach(hooks, 1);
  if (skel)
    drops_destroy(NULL);
  drops_names_free();
  cfg_defaults();
}

static int drops_init_entry(void) {
  if (drops_locations_alloc(cfg.max_locations) != 0) {
    E_ERROR(FEATURE ": out of memory.");
    drops_shutdown();
    return -ENOMEM;
  }
  return drops_init();
}

static struct bpf_object *drops_bpf_object(void) {
  return skel ? skel->obj : NULL;
}

const struct ebpf_feature feature_drops = {
    .block = BLOCK,
    .name = FEATURE,
    .config = drops_config,
    .keys = &block,
    .init = drops_init_entry,
    .read = drops_read,
    .shutdown = drops_shutdown,
    .bpf_object = drops_bpf_object,
};
