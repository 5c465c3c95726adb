// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's start: the hooks it wants of the receive path (plugin/rx/,
 * which loads the programs once for every feature with handlers there)
 * and the paths its settings need compiled in, its rodata and maps set
 * when the part opens the object, the Cgroup filter's way (ancestors,
 * cgroup storage where the kernel lets the programs use it, or hash maps),
 * the clock of "now", and once the hooks are attached, the filters filled
 * and the timestamping socket. */
#include "netstacklat/internal.h"
#include "cgprobe.skel.h"
#include "core/testenv.h"
#include "rx.skel.h"

#include <bpf/bpf.h>
#include <linux/net_tstamp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define P(...) HOOK_PROG(rx_bpf, __VA_ARGS__)
/* tcp_socket_read with IncludeHOLBlocked false: each flavour's read
 * program with the program that follows out-of-order arrivals on the
 * receive path; kprobe programs cannot have socket storage (refused). */
static const struct hook_def tcp_read_hol_def = {
    "tcp_socket_read",
    {P(tcp_read_fentry), P(hol_arrival_fentry), P(tcp_read_tp),
     P(hol_arrival_tp), P(tcp_read_kprobe)}};
#undef P

void nsl_set_clock_offset(struct nsl_state *s) {
  int64_t off;
  if (s->skel && rtclock_offset(s->bpf_clock, &off, NULL) == 0)
    s->skel->bss->realtime_offset_ns = off;
}

/* ---------------------------------------------------------------- open */

/* The settings, as constants of the programs (rodata) and the initial
 * values of their variables. */
static void set_settings(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  struct rx_bpf *skel = s->skel;
  skel->rodata->nsl_hooks = 0;
  for (int h = 0; h < NSL_NHOOKS; h++)
    if (s->hooks[h].wanted)
      skel->rodata->nsl_hooks |= 1u << h;
  skel->rodata->targ_netns = s->netns.inum;
  skel->rodata->targ_filter_ifindex = cfg->nifaces > 0;
  skel->rodata->targ_filter_cgroup = cfg->ncgroups > 0;
  skel->rodata->targ_groupby = (__u32)cfg->groupby;
  skel->rodata->targ_min_qlen = (__u32)cfg->min_qlen;
  skel->rodata->targ_include_hol = cfg->include_hol;
  skel->rodata->targ_clock_tai = s->bpf_clock == RTCLOCK_TAI;
  skel->rodata->targ_outlier_ns = (__u64)(cfg->outlier_s * 1e9 + 0.5);
  skel->rodata->targ_outlier_limit = (__u64)cfg->outlier_limit;
  skel->rodata->targ_sample_every = (__u32)cfg->sample_every;
  skel->rodata->targ_sample_auto = cfg->sample_every == 0;
  for (int h = 0; h < NSL_NHOOKS; h++)
    skel->bss->sample_n[h] = 1;
  /* Off: the smallest ring buffer there is (one page). */
  if (!cfg->outlier_s)
    bpf_map__set_max_entries(skel->maps.netstacklat_outliers,
                             (__u32)sysconf(_SC_PAGESIZE));
  /* The initial value of the map: in force from the first event on. */
  nsl_set_clock_offset(s);
}

/* The CPUs' ways, unused (no GroupBy): one value of 8 bytes per CPU
 * instead of 6,752 per hook. */
static void no_fronts(struct rx_bpf *skel) {
  bpf_map__set_max_entries(skel->maps.netstacklat_fronts, 1);
  bpf_map__set_value_size(skel->maps.netstacklat_fronts, 8);
}

/* GroupBy's values: S stripes (struct nsl_stripe), a CPU writing stripe
 * cpu & (S - 1); CPUs share stripes, adding atomically, only past
 * NSL_STRIPES_MAX possible CPUs (or with EBPF_TEST_STRIPES). */
static void size_stripes(struct nsl_state *s) {
  struct rx_bpf *skel = s->skel;
  __u32 value = (__u32)s->stripes * NSL_STRIPE_SIZE;
  skel->rodata->targ_stripe_mask = (__u32)s->stripes - 1;
  skel->rodata->targ_stripes_shared = s->ncpus > s->stripes;
  bpf_map__set_value_size(skel->maps.netstacklat_grouped_seconds, value);
  bpf_map__set_value_size(skel->maps.netstacklat_cgroup_slots, value);
  /* With GroupBy, each CPU's ways (struct nsl_front): 6,752 bytes per
   * hook and possible CPU, and a release per hook and CPU. */
  skel->rodata->targ_fronts = s->fronts;
  if (s->fronts)
    bpf_map__set_max_entries(skel->maps.netstacklat_front_release,
                             (__u32)s->ncpus * NSL_NHOOKS);
  else
    no_fronts(skel);
}

static int stripes_for(int ncpus) {
  const char *t = test_switch(TEST_STRIPES);
  int v = t ? atoi(t) : 0;
  if (v >= 1 && v <= NSL_STRIPES_MAX && !(v & (v - 1)))
    return v;
  int n = 1;
  while (n < ncpus && n < NSL_STRIPES_MAX)
    n <<= 1;
  return n;
}

/* The group table, and the Cgroup filter's maps for the way chosen at
 * init. */
static void size_cgroup_maps(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  struct rx_bpf *skel = s->skel;
  /* One table of (hook, group) entries for all hooks: MaxGroups x wanted
   * hooks, a pool that a busy hook may use more of than its share.
   * Preallocated: entries x stripes x NSL_STRIPE_SIZE (1,728) bytes. */
  __u32 nwanted = 0;
  for (int h = 0; h < NSL_NHOOKS; h++)
    nwanted += s->hooks[h].wanted;
  /* And an entry per hook for the group "other" (made after load). */
  bool grouped = cfg->groupby && nwanted;
  bpf_map__set_max_entries(skel->maps.netstacklat_grouped_seconds,
                           grouped ? (__u32)cfg->max_groups * nwanted + nwanted
                                   : 1);
  /* Without GroupBy the table is never written, but a preallocated hash
   * holds a spare element per possible CPU beside its one entry (6.8 MiB
   * at 256 CPUs, 16 stripes): not preallocated where tracing programs may
   * use such maps (6.1+; told by cgroup storage, 6.2). */
  if (!grouped &&
      libbpf_probe_bpf_map_type((enum bpf_map_type)32 /* CGRP_STORAGE */,
                                NULL) == 1)
    bpf_map__set_map_flags(skel->maps.netstacklat_grouped_seconds,
                           BPF_F_NO_PREALLOC);
  bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_filter,
                           cfg->ncgroups ? s->cg_filter_size : 1);
  /* Cgroup storage, or on a kernel without it a harmless one-entry array
   * in its place (its path is pruned by the verifier). */
  skel->rodata->targ_cg_storage = s->cgf.storage;
  /* The ancestors way: the levels are constants of the program; the ids
   * are in force from the first event. */
  skel->rodata->targ_anc_n = s->cgf.anc ? (__u32)cfg->ncgroups : 0;
  nsl_cgf_opened(&s->cgf, skel->rodata->targ_anc_level,
                 &skel->data->cg_filter_gen, skel->bss->anc_id);
  if (!s->cgf.storage) {
    bpf_map__set_type(skel->maps.netstacklat_cgroup_state, BPF_MAP_TYPE_ARRAY);
    bpf_map__set_map_flags(skel->maps.netstacklat_cgroup_state, 0);
    bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_state, 1);
  }
}

/* Each wanted hook's row in a slot, and GroupBy cgroup's slots and group
 * index. */
static void size_slot_maps(struct nsl_state *s) {
  struct rx_bpf *skel = s->skel;
  s->nwanted_pos = 0;
  for (int h = 0; h < NSL_NHOOKS; h++) {
    s->hook_pos[h] = s->hooks[h].wanted ? s->nwanted_pos++ : 0;
    skel->rodata->targ_hook_pos[h] = s->hook_pos[h];
  }
  skel->rodata->targ_nwanted = s->nwanted_pos ? s->nwanted_pos : 1;
  if (!s->cgslots.slot || !s->nwanted_pos)
    return;
  bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_slots,
                           (__u32)s->cfg.max_groups * s->nwanted_pos);
  bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_index,
                           s->cgslots.index_size);
  __u32 wsize = s->cgslots.index_size > NSL_WAIT_MIN ? s->cgslots.index_size
                                                     : NSL_WAIT_MIN;
  bpf_map__set_max_entries(skel->maps.netstacklat_cg_waiting, wsize);
  skel->rodata->targ_wait_mask = wsize - 1;
  skel->rodata->targ_cg_index_mask = s->cgslots.index_size - 1;
  /* The slots are preallocated; the group table then holds each
   * group's events before its slot: allocated as they come, so the two
   * together stay near the memory of the table alone. Only where
   * tracing programs may use maps that are not preallocated (6.1+;
   * cgroup storage, 6.2, tells): older kernels preallocate both. */
  if (s->cgf.storage)
    bpf_map__set_map_flags(skel->maps.netstacklat_grouped_seconds,
                           BPF_F_NO_PREALLOC);
}

/* netstacklat is out (not configured, or its start failed): its maps at
 * their smallest, its handlers pruned (nsl_hooks 0). */
static void open_out(struct rx_bpf *skel) {
  long page = sysconf(_SC_PAGESIZE);
  bpf_map__set_max_entries(skel->maps.netstacklat_outliers,
                           page > 0 ? (__u32)page : 4096);
  bpf_map__set_max_entries(skel->maps.netstacklat_seconds, 1);
  bpf_map__set_max_entries(skel->maps.netstacklat_grouped_seconds, 1);
  if (libbpf_probe_bpf_map_type((enum bpf_map_type)32 /* CGRP_STORAGE */,
                                NULL) == 1)
    bpf_map__set_map_flags(skel->maps.netstacklat_grouped_seconds,
                           BPF_F_NO_PREALLOC);
  bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_filter, 1);
  bpf_map__set_max_entries(skel->maps.netstacklat_ifindex_filter, 1);
  bpf_map__set_max_entries(skel->maps.netstacklat_reads, 1);
  bpf_map__set_type(skel->maps.netstacklat_cgroup_state, BPF_MAP_TYPE_ARRAY);
  bpf_map__set_map_flags(skel->maps.netstacklat_cgroup_state, 0);
  bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_state, 1);
}

void nsl_rx_open(void *ctx, struct rx_bpf *skel, bool joined) {
  struct nsl_state *s = ctx;
  if (!joined) {
    skel->rodata->nsl_hooks = 0;
    open_out(skel);
    no_fronts(skel);
    return;
  }
  s->skel = skel;
  set_settings(s);
  size_stripes(s);
  size_cgroup_maps(s);
  size_slot_maps(s);
  if (!s->cfg.nifaces)
    bpf_map__set_max_entries(s->skel->maps.netstacklat_ifindex_filter, 1);
}

/* The group "other" of each wanted hook, in the group table before any
 * event: where an event that finds the table full is counted. */
static void make_other_entries(struct nsl_state *s) {
  int fd = bpf_map__fd(s->skel->maps.netstacklat_grouped_seconds);
  struct nsl_stripe *zero = calloc((size_t)s->stripes, sizeof(*zero));
  for (__u32 h = 0; zero && h < NSL_NHOOKS; h++) {
    struct nsl_group_key k = {.group = NSL_GROUP_OTHER, .hook = h};
    if (s->hooks[h].wanted &&
        bpf_map_update_elem(fd, &k, zero, BPF_NOEXIST) && errno != EEXIST)
      E_WARNING("netstacklat: hook %s: cannot make the group \"other\" in "
                "the group table: %s; events that find it full are lost.",
                nsl_hook_names[h], ERRSTR(errno));
  }
  free(zero);
}

void nsl_rx_loaded(void *ctx, struct rx_bpf *skel) {
  struct nsl_state *s = ctx;
  nsl_cgf_loaded(&s->cgf, &skel->data->cg_filter_gen, skel->bss->anc_id,
                 bpf_map__fd(skel->maps.netstacklat_cgroup_state),
                 bpf_map__fd(skel->maps.netstacklat_cgroup_filter),
                 bpf_map__max_entries(skel->maps.netstacklat_cgroup_filter));
  if (s->cgslots.slot)
    nsl_slots_bind(&s->cgslots,
                   bpf_map__fd(skel->maps.netstacklat_cgroup_slots),
                   bpf_map__fd(skel->maps.netstacklat_cgroup_index), s->stripes,
                   s->nwanted_pos);
  if (s->cfg.groupby)
    make_other_entries(s);
}

void nsl_rx_gone(void *ctx) {
  struct nsl_state *s = ctx;
  s->skel = NULL;
}

/* What netstacklat asks of the receive path: the hooks Hooks wants, in
 * the flavours its settings allow, and the paths SampleEvery and
 * OutlierThreshold need compiled in. */
void nsl_join(struct nsl_state *s) {
  struct rx_client *c = &s->rx;
  for (int h = 0; h < NSL_NHOOKS; h++) {
    c->want[h] = s->hooks[h].wanted;
    c->def[h] = s->hooks[h].def;
    for (int f = 0; f < FLAVOUR_COUNT; f++)
      c->refuse[h][f] = s->hooks[h].refuse[f];
  }
  c->paths = s->cfg.outlier_s            ? RX_PATH_OUTLIERS
             : s->cfg.sample_every != 1 ? RX_PATH_SAMPLING
                                        : 0;
  rx_join(c);
}

/* ---------------------------------------------------------------- init */

/* Receive timestamps are taken only while some socket on the host asks
 * for them: hold one such socket for as long as we run. The kernel turns
 * the timestamping static key on from a work queue, ~100 ms later. */
static int open_tstamp_socket(void) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) <
      0) {
    int err = -errno;
    close(fd);
    return err;
  }
  return fd;
}

static int cgprobe_load(void *p) { return cgprobe_bpf__load(p); }

/* Whether the kernel, which has cgroup storage, refuses a socket's cgroup
 * (and its parent's) to the storage helpers in a tracing program
 * (bpf/common/cgprobe.bpf.c: 6.18.44's verifier calls them untrusted pointers).
 * true: refused, with why in *why. */
static bool cg_storage_refused(char *why, size_t len) {
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  struct cgprobe_bpf *p = cgprobe_bpf__open_opts(&opts);
  char verdict[200] = "";
  int err = p ? loader_quiet_load(cgprobe_load, p, verdict, sizeof(verdict))
              : -errno;
  cgprobe_bpf__destroy(p);
  if (!err)
    return false;
  snprintf(why, len,
           "the kernel has BPF_MAP_TYPE_CGRP_STORAGE but refuses a socket's "
           "cgroup to its helpers: %s%s%s%s",
           ERRSTR(err), verdict[0] ? " (the verifier: \"" : "", verdict,
           verdict[0] ? "\")" : "");
  return true;
}

/* NetworkNamespace, and the Interface filter's names in it. */
static int open_netns(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  int err = netns_resolve(cfg->netns, FEATURE, &s->netns);
  if (err)
    return err;
  nsl_iff_free(&s->iff);
  if (nsl_iff_init(&s->iff, cfg->ifaces, cfg->nifaces, &s->netns))
    return -ENOMEM;
  s->ifnames.ns = &s->netns;
  if (cfg->nifaces) {
    /* The names are looked up inside the namespace (setns(), which needs
     * CAP_SYS_ADMIN): without that the filter could never be filled, and
     * netstacklat would count nothing under its names. */
    int back;
    if ((err = netns_enter(&s->netns, FEATURE, &back)) != 0) {
      E_WARNING("netstacklat: the Interface option needs its names looked "
                "up in %s; netstacklat is disabled.",
                s->netns.path);
      return err == -EINVAL ? -ENOENT : err;
    }
    netns_leave(back, FEATURE);
  }
  return 0;
}

/* The hooks Hooks asks for, in the flavours the settings allow. */
static void want_hooks(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  for (int h = 0; h < NSL_NHOOKS; h++) {
    s->hooks[h] = (struct hook_state){.wanted = cfg->hook_on[h]};
    if (h == NSL_TCP_SOCKET_READ && !cfg->include_hol) {
      s->hooks[h].def = &tcp_read_hol_def;
      s->hooks[h].refuse[FLAVOUR_KPROBE] =
          "not with IncludeHOLBlocked false (it needs socket storage, "
          "which kprobe programs cannot use)";
    }
    if ((cfg->ncgroups || cfg->groupby == NSL_GROUP_CGROUP) &&
        !hook_has_socket(h) && s->hooks[h].wanted) {
      s->hooks[h].wanted = false;
      E_INFO("netstacklat: hook %s is not loaded: it has no socket, so no "
             "cgroup to filter or group by.",
             nsl_hook_names[h]);
    }
  }
}

/* Why the Cgroup filter cannot compare the cgroups' ancestors, or NULL
 * when it can (force: EBPF_TEST_CGROUP_FILTER's way). */
static const char *no_ancestors(const struct nsl_config *cfg,
                                const char *force) {
  const char *no_anc = NULL;
  if (!cfg->ncgroups)
    no_anc = "no Cgroup option";
  else if (cfg->groupby == NSL_GROUP_CGROUP)
    no_anc = "GroupBy cgroup looks the cgroup up anyway";
  else if (cfg->ncgroups > NSL_CG_ANC_MAX)
    no_anc = "more than 8 Cgroup paths";
  _Static_assert(NSL_CG_ANC_MAX == 8, "the message above says 8");
  for (size_t i = 0; !no_anc && i < cfg->ncgroups; i++)
    if (cgroup_is_glob(cfg->cgroups[i]))
      no_anc = "a Cgroup glob may match cgroups at other levels later";
  if (!no_anc && !cgroup2_is_whole(&no_anc))
    no_anc = no_anc ? no_anc : "the cgroup2 mount is not the whole tree";
  if (!no_anc && force && strcmp(force, "ancestors") != 0)
    no_anc = strcmp(force, "hash") == 0
                 ? "forced off by EBPF_TEST_CGROUP_FILTER=hash"
                 : "forced off by EBPF_TEST_CGROUP_FILTER=storage";
  return no_anc;
}

/* The way of the Cgroup filter and GroupBy cgroup: the cgroups'
 * ancestors, cgroup storage or hash maps, said at INFO with why. */
static void choose_cgroup_way(const struct nsl_config *cfg, bool *anc,
                              bool *storage, bool *hash) {
  /* Test-only: EBPF_TEST_CGROUP_FILTER skips the ways before it. */
  const char *force = test_switch(TEST_CGROUP_FILTER);
  const char *no_anc = no_ancestors(cfg, force);
  *anc = !no_anc;
  int r = libbpf_probe_bpf_map_type(
      (enum bpf_map_type)32 /* BPF_MAP_TYPE_CGRP_STORAGE, 6.2: newer than
                               some UAPI headers we build with */,
      NULL);
  bool hash_forced = force && strcmp(force, "hash") == 0;
  *storage = !*anc && r == 1 && !hash_forced;
  char refused[400] = "";
  if (*storage && cg_storage_refused(refused, sizeof(refused)))
    *storage = false;
  *hash = !*storage && !*anc;
  if (*anc)
    E_INFO("netstacklat: the Cgroup filter uses the cgroups' ancestors "
           "(%zu Cgroup paths without globs: each socket cgroup's ancestor "
           "at a configured path's level is compared with it).",
           cfg->ncgroups);
  else
    E_INFO("netstacklat: the Cgroup filter and GroupBy cgroup use %s (%s%s%s).",
           *storage ? "cgroup storage" : "hash maps",
           hash_forced ? "forced by EBPF_TEST_CGROUP_FILTER=hash"
           : refused[0] ? refused
           : r == 1    ? "the kernel has BPF_MAP_TYPE_CGRP_STORAGE"
                       : "the kernel has no BPF_MAP_TYPE_CGRP_STORAGE (6.2+)",
           cfg->ncgroups ? "; not the cgroups' ancestors: " : "",
           cfg->ncgroups ? no_anc : "");
}

/* GroupBy cgroup: MaxGroups slots, found through a group index of 4
 * positions per slot, a power of two, so that two probes nearly always
 * find room (EBPF_TEST_CG_INDEX_SIZE, a power of two, forces a size for
 * the tests). Returns 0 or a negative errno. */
static int alloc_cg_slots(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  const char *isz = test_switch(TEST_CG_INDEX_SIZE);
  unsigned long long want = 4ULL * (unsigned long long)cfg->max_groups;
  if (isz && *isz) {
    char *end;
    want = strtoull(isz, &end, 10);
    if (*end || !want || (want & (want - 1)) || want > (1ULL << 24)) {
      E_ERROR("netstacklat: EBPF_TEST_CG_INDEX_SIZE \"%s\" is not a "
              "power of two up to 2^24.",
              isz);
      return -EINVAL;
    }
  }
  __u32 isize = 1;
  while (isize < want)
    isize <<= 1;
  if (nsl_slots_alloc(&s->cgslots, cfg->max_groups, isize))
    return -ENOMEM;
  E_INFO("netstacklat: GroupBy cgroup: %lld slots (MaxGroups), found "
         "through a group index of %u entries (array lookups, no "
         "helper call).",
         cfg->max_groups, isize);
  return 0;
}

/* The Cgroup filter's hash map: sized from the tree;
 * EBPF_TEST_CG_FILTER_SIZE forces a size for the tests. */
static void size_cg_filter(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  cgroup_tree_refresh(&s->cgroups);
  uint64_t *ids;
  size_t n = cgroup_subtree_ids(&s->cgroups, cfg->cgroups, cfg->ncgroups, &ids);
  free(ids);
  unsigned long long want = 4ULL * n;
  s->cg_filter_size = 4096;
  while (s->cg_filter_size < want && s->cg_filter_size < (1U << 20))
    s->cg_filter_size <<= 1;
  const char *fsz = test_switch(TEST_CG_FILTER_SIZE);
  if (fsz && *fsz && strtoul(fsz, NULL, 10) > 0)
    s->cg_filter_size = (__u32)strtoul(fsz, NULL, 10);
}

/* "Now" in BPF: TAI where the kernel has it, said with why. */
static void choose_clock(struct nsl_state *s) {
  const char *clock_why;
  bool tai_refused;
  s->bpf_clock = rtclock_choose(&clock_why, &tai_refused);
  if (tai_refused)
    E_WARNING("netstacklat: \"now\" is CLOCK_%s plus its offset to "
              "REALTIME (%s).",
              rtclock_name(s->bpf_clock), clock_why);
  else
    E_INFO("netstacklat: \"now\" is CLOCK_%s plus its offset to REALTIME "
           "(%s).",
           rtclock_name(s->bpf_clock), clock_why);
}

int nsl_prepare(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  int err = open_netns(s);
  if (err)
    return err;
  bool by_cgroup = cfg->ncgroups || cfg->groupby == NSL_GROUP_CGROUP;
  if (by_cgroup && !cgroup2_root()) {
    E_WARNING("netstacklat: no cgroup2 hierarchy is mounted: the Cgroup and "
              "GroupBy cgroup options cannot work; netstacklat is disabled.");
    return -ENOENT;
  }
  s->ncpus = libbpf_num_possible_cpus();
  if (s->ncpus <= 0) {
    E_WARNING("netstacklat: cannot count CPUs: %s", ERRSTR(s->ncpus));
    return s->ncpus ? s->ncpus : -EINVAL;
  }
  s->stripes = stripes_for(s->ncpus);
  s->fronts = cfg->groupby != NSL_GROUP_NONE && !test_switch(TEST_NO_WAYS);
  if ((err = nsl_fronts_init(s)) != 0) {
    E_WARNING("netstacklat: out of memory for the CPUs' ways.");
    return err;
  }
  if (s->fronts)
    E_INFO("netstacklat: GroupBy: each CPU counts the first %d groups of a "
           "hook it sees in histograms of its own (%.1f MiB of kernel memory "
           "for %d possible CPUs), the others in %d stripes%s.",
           NSL_FRONT_WAYS,
           (double)s->ncpus * NSL_NHOOKS * sizeof(struct nsl_front) /
               1048576.0,
           s->ncpus, s->stripes,
           s->ncpus > s->stripes ? " that CPUs share, adding atomically"
                                 : ", one per CPU");
  want_hooks(s);
  bool cg_storage = false, cg_hash = false, cg_anc = false;
  if (by_cgroup) {
    choose_cgroup_way(cfg, &cg_anc, &cg_storage, &cg_hash);
    if (cfg->groupby == NSL_GROUP_CGROUP && (err = alloc_cg_slots(s)) != 0)
      return err;
  }
  nsl_cgf_free(&s->cgf);
  nsl_cgf_init(&s->cgf, cfg->cgroups, cfg->ncgroups, cg_anc, cg_storage,
               cg_hash);
  if (cfg->ncgroups)
    size_cg_filter(s);
  choose_clock(s);
  return 0;
}

void nsl_after_attach(struct nsl_state *s) {
  const struct nsl_config *cfg = &s->cfg;
  s->iff.map_fd = bpf_map__fd(s->skel->maps.netstacklat_ifindex_filter);
  nsl_iff_refresh(&s->iff, true);
  /* kprobe programs have no cgroup storage: with a socket hook in that
   * flavour, the hash filter is kept filled as well. */
  for (int h = 0; (s->cgf.storage || s->cgf.anc) && h < NSL_NHOOKS; h++)
    if (hook_has_socket(h) && s->hooks[h].flavour == FLAVOUR_KPROBE &&
        !s->cgf.hash) {
      s->cgf.hash = true;
      E_INFO("netstacklat: hook %s runs as a kprobe, which %s: the cgroup "
             "hash filter is kept as well.",
             nsl_hook_names[h],
             s->cgf.storage ? "has no cgroup storage"
                            : "would read the ancestors through helper calls");
    }
  if (s->cgf.hash || cfg->groupby == NSL_GROUP_CGROUP)
    cgroup_tree_refresh(&s->cgroups);
  if (cfg->ncgroups && nsl_cgf_refresh(&s->cgf, &s->cgroups, false) == 0)
    E_WARNING("netstacklat: the Cgroup option matches no cgroup yet; "
              "matching cgroups are picked up when they appear.");
  s->ts_sock = cfg->timestamps ? open_tstamp_socket() : -1;
  if (cfg->timestamps && s->ts_sock < 0)
    E_WARNING("netstacklat: cannot enable receive timestamps "
              "(SO_TIMESTAMPING): %s; packets are stamped only if another "
              "socket asks for it.",
              ERRSTR(s->ts_sock));
}
