// SPDX-License-Identifier: GPL-2.0-only
/* drops: packets the kernel dropped, per reason (enum skb_drop_reason, its
 * names read from the running kernel's BTF, 5.17+) or, on kernels without
 * reasons, per drop location (the kernel function that freed the packet,
 * named from /proc/kallsyms when it is first seen). docs/drops.md is the
 * reference; bpf/drops/drops.bpf.c says which program runs on which kernel. */
#define _GNU_SOURCE 1
#include "core/ebpf.h"
#include "common/cgroup.h"
#include "drops/drops.h"
#include "drops.skel.h"
#include "common/loader.h"
#include "common/netns.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FEATURE "drops"
#define BLOCK "Drops"
#define MAX_LOCATIONS_DEFAULT 32
#define MAX_LOCATIONS_MAX 1000
/* Sanity bound on the enum's size (6.18 has 128 values). */
#define MAX_REASONS 4096

static struct {
  char *netns;
  long long max_locations;
  char **ignore; /* IgnoreReason names, lower case */
  size_t nignore;
  bool notify;      /* DropNotifications */
  long long limit;  /* DropLimit, a second */
} cfg;

static void cfg_defaults(void) {
  free(cfg.netns);
  cfg.netns = NULL;
  cfg.max_locations = MAX_LOCATIONS_DEFAULT;
  cfg_free_list(cfg.ignore);
  cfg.ignore = NULL;
  cfg.nignore = 0;
  cfg.notify = false;
  cfg.limit = 10;
}

/* A reason as the metric names it: [a-z0-9_], as the kernel spells it
 * after the prefix. */
static bool reason_name_ok(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) &&
        *s != '_')
      return false;
  return true;
}

static int drops_config(const oconfig_item_t *ci) {
  int errors = 0;
  bool seen_ns = false, seen_ml = false, seen_dn = false, seen_dl = false;
  cfg_defaults();
  for (int i = 0; i < ci->children_num; i++) {
    const oconfig_item_t *c = &ci->children[i];
    int st;
    if (strcasecmp(c->key, "NetworkNamespace") == 0) {
      st = cfg_once(c, &seen_ns) || cfg_string(c, &cfg.netns);
    } else if (strcasecmp(c->key, "MaxLocations") == 0) {
      st = cfg_once(c, &seen_ml) ||
           cfg_int_range(c, 1, MAX_LOCATIONS_MAX, &cfg.max_locations);
    } else if (strcasecmp(c->key, "DropNotifications") == 0) {
      st = cfg_once(c, &seen_dn) || cfg_bool(c, &cfg.notify);
    } else if (strcasecmp(c->key, "DropLimit") == 0) {
      st = cfg_once(c, &seen_dl) || cfg_int_range(c, 1, 10000, &cfg.limit);
    } else if (strcasecmp(c->key, "IgnoreReason") == 0) {
      size_t from = cfg.nignore;
      st = cfg_strings_append(c, &cfg.ignore, &cfg.nignore);
      for (size_t k = from; !st && k < cfg.nignore; k++) {
        char *s = cfg.ignore[k];
        for (char *p = s; *p; p++)
          *p = (char)tolower((unsigned char)*p);
        if (!reason_name_ok(s)) {
          E_ERROR("invalid value \"%s\" for option \"IgnoreReason\" in block "
                  "<" BLOCK ">: a reason is written as the metric names it "
                  "(letters, digits and '_', e.g. \"no_socket\").",
                  s);
          st = -1;
        }
      }
    } else {
      st = cfg_unknown(c, BLOCK);
    }
    if (st)
      errors++;
  }
  if (!errors && seen_dl && !cfg.notify) {
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

/* Reasons: slot i < nreasons is the enum's value i (its name in
 * reason_names[i], NULL for a gap); slot nreasons counts the rest. */
static uint32_t nreasons;
static char **reason_names;
static bool *reason_on;     /* dispatched: seen once, and not ignored */
static bool *reason_ignored;
static value_list_t *reason_vls;
static int64_t consumed = -1; /* SKB_CONSUMED, -1 when the enum has none */

/* Locations: each address seen, and the function it is in. */
struct location {
  uint64_t addr;
  int fn; /* index into fns, -1: at_other */
};
struct function {
  char name[DATA_MAX_NAME_LEN]; /* plugin_instance "at_<function>" */
  value_list_t vl;
  int64_t sum; /* this read */
};
static struct location *locs;
static size_t nlocs;
static struct function *fns;
static size_t nfns;
static value_list_t other_vl; /* drops-at_other */
/* DropNotifications */
static struct ring_buffer *events_rb;
static struct cgroup_tree cgroups;
static bool cg_refreshed;
static uint64_t notified;
static int64_t mono_to_real; /* CLOCK_REALTIME - CLOCK_MONOTONIC, this read */
static uint32_t self_netns;
static bool other_seen, other_ready;
static bool kallsyms_warned;
/* Where the kernel's symbols are (a unit test gives its own file). */
static const char *kallsyms_path = "/proc/kallsyms";

/* -------------------------------------------------- the kernel's BTF */

static struct btf *load_btf(void) {
  struct btf *btf = ebpf_global.btf_path ? btf__parse(ebpf_global.btf_path, NULL)
                                         : btf__load_vmlinux_btf();
  return btf && !libbpf_get_error(btf) ? btf : NULL;
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

/* The metric's name of an enumerator: SKB_DROP_REASON_NO_SOCKET ->
 * no_socket. */
static char *reason_name(const char *e) {
  if (!strncmp(e, "SKB_DROP_REASON_", 16))
    e += 16;
  else if (!strncmp(e, "SKB_", 4))
    e += 4;
  char *s = strdup(e);
  for (char *p = s; p && *p; p++)
    *p = (char)tolower((unsigned char)*p);
  return s;
}

/* Names of enum skb_drop_reason's values; 0 when the kernel has no such
 * enum (drop reasons came with 5.17). */
static int read_reasons(const struct btf *btf) {
  int id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
  if (id < 0)
    return 0;
  const struct btf_type *t = btf__type_by_id(btf, id);
  const struct btf_enum *e = btf_enum(t);
  int n = btf_vlen(t);
  int64_t maxv = -1, explicit_max = -1;
  for (int i = 0; i < n; i++) {
    const char *name = btf__name_by_offset(btf, e[i].name_off);
    if (!strcmp(name, "SKB_DROP_REASON_MAX"))
      explicit_max = e[i].val;
    else if (e[i].val >= 0 && e[i].val < MAX_REASONS && e[i].val > maxv)
      maxv = e[i].val;
  }
  nreasons = (uint32_t)(explicit_max > 0 && explicit_max <= MAX_REASONS
                            ? explicit_max
                            : maxv + 1);
  reason_names = calloc(nreasons + 1, sizeof(*reason_names));
  reason_on = calloc(nreasons + 1, sizeof(*reason_on));
  reason_ignored = calloc(nreasons + 1, sizeof(*reason_ignored));
  reason_vls = calloc(nreasons + 1, sizeof(*reason_vls));
  if (!reason_names || !reason_on || !reason_ignored || !reason_vls)
    return -ENOMEM;
  for (int i = 0; i < n; i++) {
    const char *name = btf__name_by_offset(btf, e[i].name_off);
    if (!strcmp(name, "SKB_CONSUMED"))
      consumed = e[i].val;
    if (e[i].val < 0 || (uint32_t)e[i].val >= nreasons ||
        reason_names[e[i].val])
      continue;
    reason_names[e[i].val] = reason_name(name);
  }
  reason_names[nreasons] = strdup("other");
  return 1;
}

/* IgnoreReason against this kernel's names: a name it does not have is a
 * condition of the host (the reason came with another kernel), not an
 * error of the configuration. */
static void apply_ignore(void) {
  for (size_t k = 0; k < cfg.nignore; k++) {
    bool found = false;
    for (uint32_t i = 0; i <= nreasons; i++)
      if (reason_names[i] && !strcmp(reason_names[i], cfg.ignore[k])) {
        reason_ignored[i] = found = true;
      }
    if (!found)
      E_WARNING(FEATURE ": IgnoreReason \"%s\": this kernel has no such drop "
                "reason (its names are read from its BTF, enum "
                "skb_drop_reason); nothing is left out for it.",
                cfg.ignore[k]);
  }
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
  skel->rodata->targ_nreasons = nreasons;
  skel->rodata->targ_consumed = consumed;
  skel->rodata->targ_notify = cfg.notify;
  skel->rodata->targ_drop_limit = (__u64)cfg.limit;
  bpf_map__set_max_entries(skel->maps.drops_by_reason, nreasons + 1);
  bpf_map__set_max_entries(skel->maps.drops_quiet, nreasons + 1);
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

/* ------------------------------------------------------ notifications */

static const char *location_name(uint64_t addr);

/* One record: one WARNING notification (fields: README, "Dropped
 * packets"). */
static int on_event(void *ctx, void *data, size_t len) {
  (void)ctx;
  const struct drops_event *e = data;
  if (len < sizeof(*e))
    return 0;
  struct ebpf_nfield f[10];
  size_t n = 0;
  char local[EBPF_ADDR_LEN], remote[EBPF_ADDR_LEN], proto[8];
  char rname[DATA_MAX_NAME_LEN];
  const char *reason;
  if (gen == GEN_LOCATION) {
    reason = location_name(e->cause);
  } else if (e->cause < nreasons && reason_names[e->cause]) {
    reason = reason_names[e->cause];
  } else if (e->cause < nreasons) { /* a gap in the enum */
    snprintf(rname, sizeof(rname), "reason_%u", (unsigned)e->cause);
    reason = rname;
  } else {
    reason = "other";
  }
  f[n++] = NF_STR("reason", reason);
  if (e->proto) {
    ebpf_proto_str(e->proto, proto);
    f[n++] = NF_STR("proto", proto);
  }
  if (e->family == AF_INET || e->family == AF_INET6) {
    ebpf_addr_str(e->family, e->laddr, e->lport, e->has_ports, local);
    ebpf_addr_str(e->family, e->raddr, e->rport, e->has_ports, remote);
    f[n++] = NF_STR("local", local);
    f[n++] = NF_STR("remote", remote);
  }
  struct ebpf_where where;
  n += ebpf_where_fields(f + n, &where, e->ifindex, e->netns, self_netns,
                         e->cgroup, &cgroups, &cg_refreshed);
  ebpf_notify_at((int64_t)e->time_ns + mono_to_real, NOTIF_WARNING, FEATURE,
                 reason, "", "drop", f, n);
  notified++;
  return 0;
}

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void read_events(void) {
  cg_refreshed = false;
  self_netns = netns_self_inum();
  mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  int err = ring_buffer__consume(events_rb);
  if (err < 0)
    E_WARNING(FEATURE ": reading the drop records failed: %s", ERRSTR(err));
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0)
    return;
  uint64_t vals[ncpu], suppressed = 0;
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.drops_events_suppressed),
                          &zero, vals) == 0)
    for (int c = 0; c < ncpu; c++)
      suppressed += vals[c];
  static value_list_t vl;
  vl_prepare(&vl, PLUGIN_NAME, FEATURE "-kfree_skb");
  vl_derive(&vl, "derive", "notifications", (int64_t)notified);
  vl_derive(&vl, "derive", "notifications_suppressed", (int64_t)suppressed);
}

static void drops_shutdown(void);

static int drops_init(void) {
  struct netns ns;
  int err = netns_resolve(cfg.netns, FEATURE, &ns);
  if (err)
    return err;
  netns_ino = ns.inum; /* 0 for "all" */

  struct btf *btf = load_btf();
  if (!btf) {
    E_WARNING(FEATURE ": the kernel's BTF (%s) cannot be read: the drop "
              "reasons cannot be named and the programs cannot be relocated; "
              "the feature is disabled.",
              ebpf_global.btf_path ? ebpf_global.btf_path
                                   : "/sys/kernel/btf/vmlinux");
    return -ENOTSUP;
  }
  int nargs = tp_nargs(btf, "kfree_skb");
  int have = nargs >= 3 ? read_reasons(btf) : 0;
  /* 6.11 added the receiving socket to both (rx_sk). */
  bool sk_drop =
      nargs >= 4 &&
      btf__find_by_name_kind(btf, "sk_skb_reason_drop", BTF_KIND_FUNC) >= 0;
  btf__free(btf);
  if (have < 0) {
    drops_shutdown();
    return have;
  }
  if (have) {
    gen = sk_drop ? GEN_REASON_SK : GEN_REASON;
    apply_ignore();
    E_INFO(FEATURE ": counting by drop reason (%u names from the kernel's "
           "enum skb_drop_reason).",
           nreasons);
  } else {
    gen = GEN_LOCATION;
    nreasons = 0;
    E_INFO(FEATURE ": this kernel gives no drop reasons (before 5.17): "
           "counting by drop location (the function that freed the packet), "
           "at most %lld names, the rest as at_other.",
           cfg.max_locations);
    if (cfg.nignore)
      E_WARNING(FEATURE ": IgnoreReason has no effect on a kernel without "
                "drop reasons.");
  }

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
  struct loader_ops ops = {
      .open = drops_open, .load = drops_load, .destroy = drops_destroy};
  int n = loader_run(FEATURE, &ops, hooks, 1);
  if (n <= 0) {
    E_WARNING(FEATURE ": no program can count drops on this kernel (see "
              "above); the feature is disabled.");
    drops_shutdown();
    return n < 0 ? n : -ENOTSUP;
  }
  /* IgnoreReason: no record for those either. */
  uint8_t one = 1;
  for (uint32_t i = 0; i < nreasons + 1 && gen != GEN_LOCATION; i++)
    if (reason_ignored[i])
      bpf_map_update_elem(bpf_map__fd(skel->maps.drops_quiet), &i, &one, 0);
  if (cfg.notify) {
    events_rb = ring_buffer__new(bpf_map__fd(skel->maps.drops_events),
                                 on_event, NULL, NULL);
    if (!events_rb) {
      int err = -errno;
      E_ERROR(FEATURE ": cannot read the ring buffer of DropNotifications: "
              "%s",
              ERRSTR(err));
      drops_shutdown();
      return err;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ reading */

static void read_reasons_map(void) {
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0)
    return;
  uint64_t vals[ncpu];
  int fd = bpf_map__fd(skel->maps.drops_by_reason);
  for (uint32_t i = 0; i <= nreasons; i++) {
    if (reason_ignored[i])
      continue;
    if (bpf_map_lookup_elem(fd, &i, vals) != 0)
      continue;
    uint64_t sum = 0;
    for (int c = 0; c < ncpu; c++)
      sum += vals[c];
    if (!reason_on[i]) {
      if (!sum)
        continue; /* dispatched from its first drop on */
      char inst[DATA_MAX_NAME_LEN];
      if (reason_names[i])
        snprintf(inst, sizeof(inst), "%s", reason_names[i]);
      else
        snprintf(inst, sizeof(inst), "reason_%u", i);
      vl_prepare(&reason_vls[i], FEATURE, inst);
      reason_on[i] = true;
    }
    vl_derive(&reason_vls[i], "operations", "", (int64_t)sum);
  }
}

/* The function an address is in, as a metric name: the text symbol of
 * /proc/kallsyms with the highest address not above it, cut at its first
 * '.' (a compiler's .isra.0, .cold...). */
static int name_fn(const char *sym) {
  char name[DATA_MAX_NAME_LEN];
  size_t n = strcspn(sym, ".");
  snprintf(name, sizeof(name), "at_%.*s", (int)n, sym);
  for (size_t i = 0; i < nfns; i++)
    if (!strcmp(fns[i].name, name))
      return (int)i;
  if (nfns >= (size_t)cfg.max_locations)
    return -1;
  struct function *f = &fns[nfns];
  snprintf(f->name, sizeof(f->name), "%s", name);
  vl_prepare(&f->vl, FEATURE, f->name);
  return (int)nfns++;
}

/* Name the locations from `from` on, in one pass over /proc/kallsyms. */
static void name_locations(size_t from) {
  size_t n = nlocs - from;
  uint64_t best[n];
  char(*sym)[256] = calloc(n, sizeof(*sym));
  if (!sym)
    return;
  memset(best, 0, sizeof(best));
  FILE *f = fopen(kallsyms_path, "re");
  bool addrs = false;
  if (f) {
    char line[512];
    while (fgets(line, sizeof(line), f)) {
      unsigned long long a;
      char type, name[256];
      if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
        continue;
      if (a)
        addrs = true;
      if (type != 't' && type != 'T')
        continue;
      for (size_t i = 0; i < n; i++)
        if (a <= locs[from + i].addr && a > best[i]) {
          best[i] = a;
          snprintf(sym[i], sizeof(sym[i]), "%s", name);
        }
    }
    fclose(f);
  }
  if ((!f || !addrs) && !kallsyms_warned) {
    E_WARNING(FEATURE ": %s %s: drop locations cannot be named "
              "and are counted as at_other (collectd needs CAP_SYSLOG, or "
              "kernel.kptr_restrict 0 or 1 with root, to see kernel "
              "addresses).",
              kallsyms_path, f ? "shows no addresses" : "cannot be read");
    kallsyms_warned = true;
  }
  for (size_t i = 0; i < n; i++)
    locs[from + i].fn = best[i] ? name_fn(sym[i]) : -1;
  free(sym);
}

/* The index of a location in locs, added (not yet named: fn -2) when it
 * is new; nlocs when locs is full. */
static size_t loc_index(uint64_t addr) {
  size_t i;
  for (i = 0; i < nlocs && locs[i].addr != addr; i++)
    ;
  if (i == nlocs && nlocs < DROPS_LOCATIONS_MAX) {
    locs[nlocs].addr = addr;
    locs[nlocs].fn = -2;
    nlocs++;
  }
  return i;
}

static void read_locations_map(void) {
  int fd = bpf_map__fd(skel->maps.drops_by_location);
  size_t from = nlocs, nseen = 0;
  static struct {
    size_t loc;
    uint64_t drops;
  } seen[DROPS_LOCATIONS_MAX];
  uint64_t key, next, val, *cur = NULL;
  while (nseen < DROPS_LOCATIONS_MAX &&
         bpf_map_get_next_key(fd, cur, &next) == 0) {
    key = next;
    cur = &key;
    if (bpf_map_lookup_elem(fd, &key, &val) == 0) {
      seen[nseen].loc = loc_index(key);
      seen[nseen++].drops = val;
    }
  }
  if (nlocs > from) /* new ones: named now, from /proc/kallsyms */
    name_locations(from);
  for (size_t i = 0; i < nfns; i++)
    fns[i].sum = 0;
  int64_t other = 0;
  for (size_t i = 0; i < nseen; i++) {
    size_t l = seen[i].loc;
    if (l < nlocs && locs[l].fn >= 0)
      fns[locs[l].fn].sum += (int64_t)seen[i].drops;
    else
      other += (int64_t)seen[i].drops;
  }
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu > 0) {
    uint64_t vals[ncpu];
    uint32_t zero = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.drops_location_overflow),
                            &zero, vals) == 0)
      for (int c = 0; c < ncpu; c++)
        other += (int64_t)vals[c];
  }
  for (size_t i = 0; i < nfns; i++)
    vl_derive(&fns[i].vl, "operations", "", fns[i].sum);
  if (other)
    other_seen = true;
  if (other_seen) {
    if (!other_ready) {
      vl_prepare(&other_vl, FEATURE, "at_other");
      other_ready = true;
    }
    vl_derive(&other_vl, "operations", "", other);
  }
}

/* The metric name of a location (for a notification): named like the
 * counters, from /proc/kallsyms when first seen. */
static const char *location_name(uint64_t addr) {
  size_t from = nlocs, i = loc_index(addr);
  if (nlocs > from)
    name_locations(from);
  return i < nlocs && locs[i].fn >= 0 ? fns[locs[i].fn].name : "at_other";
}

static int drops_read(void) {
  if (!skel)
    return 0;
  if (gen == GEN_LOCATION)
    read_locations_map();
  else
    read_reasons_map();
  if (events_rb)
    read_events();
  return 0;
}

/* ---------------------------------------------------------------- feature */

static void drops_shutdown(void) {
  ring_buffer__free(events_rb);
  events_rb = NULL;
  cgroup_tree_free(&cgroups);
  notified = 0;
  loader_detach(hooks, 1);
  if (skel)
    drops_destroy(NULL);
  for (uint32_t i = 0; reason_names && i <= nreasons; i++)
    free(reason_names[i]);
  free(reason_names);
  free(reason_on);
  free(reason_ignored);
  free(reason_vls);
  reason_names = NULL;
  reason_on = reason_ignored = NULL;
  reason_vls = NULL;
  nreasons = 0;
  consumed = -1;
  free(locs);
  free(fns);
  locs = NULL;
  fns = NULL;
  nlocs = nfns = 0;
  other_seen = other_ready = kallsyms_warned = false;
  cfg_defaults();
}

static int drops_init_entry(void) {
  locs = calloc(DROPS_LOCATIONS_MAX, sizeof(*locs));
  fns = calloc((size_t)cfg.max_locations, sizeof(*fns));
  if (!locs || !fns) {
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
    .init = drops_init_entry,
    .read = drops_read,
    .shutdown = drops_shutdown,
    .bpf_object = drops_bpf_object,
};
