// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat: per-hook latency histograms of received packets, from the
 * packet's receive timestamp to points of the network stack; dispatched as
 * quantiles, mean, event count and per-bucket rates. See bpf/netstacklat/netstacklat.bpf.c
 * for the kernel side, the README's "netstacklat hooks" for what each hook
 * means and docs/netstacklat.md for the Cgroup filter and GroupBy. */
#include "netstacklat/internal.h"
#include "cgprobe.skel.h"
#include "netstacklat.skel.h"
#include "netstacklat_outliers.skel.h"
#include "netstacklat_sampled.skel.h"
#include "core/testenv.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <bpf/bpf.h>
#include <linux/net_tstamp.h>
#include <math.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* netstacklat_outliers.bpf.o is opened through netstacklat's skeleton. */
_Static_assert(sizeof(struct netstacklat_bpf__rodata) ==
                   sizeof(struct netstacklat_outliers_bpf__rodata) &&
               sizeof(struct netstacklat_bpf__bss) ==
                   sizeof(struct netstacklat_outliers_bpf__bss) &&
               sizeof(struct netstacklat_bpf) ==
                   sizeof(struct netstacklat_outliers_bpf),
               "the two netstacklat objects differ");
_Static_assert(sizeof(struct netstacklat_bpf__rodata) ==
                   sizeof(struct netstacklat_sampled_bpf__rodata) &&
               sizeof(struct netstacklat_bpf__bss) ==
                   sizeof(struct netstacklat_sampled_bpf__bss) &&
               sizeof(struct netstacklat_bpf) ==
                   sizeof(struct netstacklat_sampled_bpf),
               "the netstacklat objects differ");

#define P(...) HOOK_PROG(netstacklat_bpf, __VA_ARGS__)
static const struct hook_def hook_defs[NSL_NHOOKS] = {
    {"ip_start",
     {P(ip_start_fentry_v4),
      P(ip_start_fentry_v6, true),
      P(ip_start_tp),
      P(ip_start_kprobe_v4),
      P(ip_start_kprobe_v6, true)}},
    {"tcp_start",
     {P(tcp_start_fentry_v4),
      P(tcp_start_fentry_v6, true),
      P(tcp_start_tp),
      P(tcp_start_kprobe_v4),
      P(tcp_start_kprobe_v6, true)}},
    {"udp_start",
     {P(udp_start_fentry_v4),
      P(udp_start_fentry_v6, true),
      P(udp_start_kprobe_v4),
      P(udp_start_kprobe_v6, true)}},
    {"tcp_socket_enqueued",
     /* enqueued_tp serves both enqueue hooks (one program on the
      * tracepoint): the loader loads and attaches it once. */
     {P(tcp_enqueued_fexit), P(enqueued_tp), P(tcp_enqueued_kprobe)}},
    {"udp_socket_enqueued",
     /* Entry before return in each pair: the loader attaches in this
      * order, so every return that fires had its entry seen. */
     {P(udp_enqueued_fentry),
      P(udp_enqueued_fexit),
      P(enqueued_tp),
      P(udp_enqueued_kprobe),
      P(udp_enqueued_kretprobe)}},
    {"tcp_socket_read",
     {P(tcp_read_fentry), P(tcp_read_tp), P(tcp_read_kprobe)}},
    {"udp_socket_read", {P(udp_read_fentry), P(udp_read_kprobe)}},
};
/* tcp_socket_read with IncludeHOLBlocked false: each flavour's read
 * program with the program that follows out-of-order arrivals on the
 * receive path; kprobe programs cannot have socket storage (refused). */
static const struct hook_def tcp_read_hol_def = {
    "tcp_socket_read",
    {P(tcp_read_fentry), P(hol_arrival_fentry), P(tcp_read_tp),
     P(hol_arrival_tp), P(tcp_read_kprobe)}};
#undef P

/* ------------------------------------------------------------- state */

struct group_prev {
  struct nsl_group_key key;
  struct nsl_hist h;
  char inst[DATA_MAX_NAME_LEN]; /* "<hook>-<group>", made when named */
  uint64_t le[MAX_BOUNDS]; /* BucketBounds: events at or below, so far */
};

/* The static state of the one running netstacklat. */
static struct nsl_state nsl = {.ts_sock = -1, .cg_filter_size = 4096};

static void set_clock_offset(struct nsl_state *s) {
  int64_t off;
  if (s->skel && rtclock_offset(s->bpf_clock, &off, NULL) == 0)
    s->skel->bss->realtime_offset_ns = off;
}

/* ---------------------------------------------------------------- loader */

static struct bpf_object *nsl_open(void *ctx, void **skel_out) {
  struct nsl_state *s = ctx;
  const struct nsl_config *cfg = &s->cfg;
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  if (!cfg->outlier_s && cfg->sample_every == 1) {
    s->skel = netstacklat_bpf__open_opts(&opts);
  } else {
    /* The same maps, programs and variables, with the outlier path (and
     * the sampling path), or with the sampling path alone. */
    s->skel = calloc(1, sizeof(*s->skel));
    int err = s->skel ? netstacklat_bpf__create_skeleton(s->skel) : -ENOMEM;
    if (!err) {
      s->skel->skeleton->data =
          cfg->outlier_s
              ? netstacklat_outliers_bpf__elf_bytes(&s->skel->skeleton->data_sz)
              : netstacklat_sampled_bpf__elf_bytes(&s->skel->skeleton->data_sz);
      err = bpf_object__open_skeleton(s->skel->skeleton, &opts);
    }
    if (err) {
      if (s->skel)
        netstacklat_bpf__destroy(s->skel);
      s->skel = NULL;
      errno = -err;
    }
  }
  if (!s->skel)
    return NULL;
  *skel_out = s->skel;
  s->skel->rodata->targ_netns = s->netns.inum;
  s->skel->rodata->targ_filter_ifindex = cfg->nifaces > 0;
  s->skel->rodata->targ_filter_cgroup = cfg->ncgroups > 0;
  s->skel->rodata->targ_groupby = (__u32)cfg->groupby;
  s->skel->rodata->targ_min_qlen = (__u32)cfg->min_qlen;
  s->skel->rodata->targ_include_hol = cfg->include_hol;
  s->skel->rodata->targ_clock_tai = s->bpf_clock == RTCLOCK_TAI;
  s->skel->rodata->targ_outlier_ns = (__u64)(cfg->outlier_s * 1e9 + 0.5);
  s->skel->rodata->targ_outlier_limit = (__u64)cfg->outlier_limit;
  s->skel->rodata->targ_sample_every = (__u32)cfg->sample_every;
  s->skel->rodata->targ_sample_auto = cfg->sample_every == 0;
  for (int h = 0; h < NSL_NHOOKS; h++)
    s->skel->bss->sample_n[h] = 1;
  /* Off: the smallest ring buffer there is (one page). */
  if (!cfg->outlier_s)
    bpf_map__set_max_entries(s->skel->maps.netstacklat_outliers,
                             (__u32)sysconf(_SC_PAGESIZE));
  /* The initial value of the map: in force from the first event on. */
  set_clock_offset(s);
  /* One table of (hook, group) entries for all hooks: MaxGroups x wanted
   * hooks, a pool that a busy hook may use more of than its share.
   * Preallocated per CPU: entries x CPUs x NSL_HIST_SIZE (1,680) bytes. */
  __u32 nwanted = 0;
  for (int h = 0; h < NSL_NHOOKS; h++)
    nwanted += s->hooks[h].wanted;
  bpf_map__set_max_entries(s->skel->maps.netstacklat_grouped_seconds,
                           cfg->groupby && nwanted
                               ? (__u32)cfg->max_groups * nwanted
                               : 1);
  bpf_map__set_max_entries(s->skel->maps.netstacklat_cgroup_filter,
                           cfg->ncgroups ? s->cg_filter_size : 1);
  /* Cgroup storage, or on a kernel without it a harmless one-entry array
   * in its place (its path is pruned by the verifier). */
  s->skel->rodata->targ_cg_storage = s->cgf.storage;
  /* The ancestors way: the levels are constants of the program; the ids
   * are in force from the first event. */
  s->skel->rodata->targ_anc_n = s->cgf.anc ? (__u32)cfg->ncgroups : 0;
  nsl_cgf_opened(&s->cgf, s->skel->rodata->targ_anc_level,
                 &s->skel->data->cg_filter_gen, s->skel->bss->anc_id);
  if (!s->cgf.storage) {
    bpf_map__set_type(s->skel->maps.netstacklat_cgroup_state,
                      BPF_MAP_TYPE_ARRAY);
    bpf_map__set_map_flags(s->skel->maps.netstacklat_cgroup_state, 0);
    bpf_map__set_max_entries(s->skel->maps.netstacklat_cgroup_state, 1);
  }
  s->nwanted_pos = 0;
  for (int h = 0; h < NSL_NHOOKS; h++) {
    s->hook_pos[h] = s->hooks[h].wanted ? s->nwanted_pos++ : 0;
    s->skel->rodata->targ_hook_pos[h] = s->hook_pos[h];
  }
  s->skel->rodata->targ_nwanted = s->nwanted_pos ? s->nwanted_pos : 1;
  if (s->cgslots.slot && s->nwanted_pos) {
    bpf_map__set_max_entries(s->skel->maps.netstacklat_cgroup_slots,
                             (__u32)cfg->max_groups * s->nwanted_pos);
    bpf_map__set_max_entries(s->skel->maps.netstacklat_cgroup_index,
                             s->cgslots.index_size);
    s->skel->rodata->targ_cg_index_mask = s->cgslots.index_size - 1;
    /* The slots are preallocated; the group table then holds each
     * group's events before its slot: allocated as they come, so the two
     * together stay near the memory of the table alone. Only where
     * tracing programs may use maps that are not preallocated (6.1+;
     * cgroup storage, 6.2, tells): older kernels preallocate both. */
    if (s->cgf.storage)
      bpf_map__set_map_flags(s->skel->maps.netstacklat_grouped_seconds,
                             BPF_F_NO_PREALLOC);
  }
  if (!cfg->nifaces)
    bpf_map__set_max_entries(s->skel->maps.netstacklat_ifindex_filter, 1);
  return s->skel->obj;
}

static int nsl_load(void *ctx) {
  struct nsl_state *s = ctx;
  /* The flavours are chosen by now: the shared sk_data_ready program
   * serves the enqueue hooks that chose it, and only those. */
  s->skel->rodata->targ_tcp_enqueued_tp =
      s->hooks[NSL_TCP_SOCKET_ENQUEUED].flavour == FLAVOUR_TP;
  s->skel->rodata->targ_udp_enqueued_tp =
      s->hooks[NSL_UDP_SOCKET_ENQUEUED].flavour == FLAVOUR_TP;
  int err = netstacklat_bpf__load(s->skel);
  if (!err)
    nsl_cgf_loaded(&s->cgf, &s->skel->data->cg_filter_gen, s->skel->bss->anc_id,
                   bpf_map__fd(s->skel->maps.netstacklat_cgroup_state),
                   bpf_map__fd(s->skel->maps.netstacklat_cgroup_filter),
                   bpf_map__max_entries(s->skel->maps.netstacklat_cgroup_filter));
  if (!err && s->cgslots.slot)
    nsl_slots_bind(&s->cgslots,
                   bpf_map__fd(s->skel->maps.netstacklat_cgroup_slots),
                   bpf_map__fd(s->skel->maps.netstacklat_cgroup_index), s->ncpus,
                   s->nwanted_pos);
  return err;
}

static void nsl_destroy(void *ctx) {
  struct nsl_state *s = ctx;
  netstacklat_bpf__destroy(s->skel);
  s->skel = NULL;
}

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

static void netstacklat_shutdown(void);

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

static int netstacklat_init(void) {
  struct nsl_state *s = &nsl;
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
  if ((cfg->ncgroups || cfg->groupby == NSL_GROUP_CGROUP) && !cgroup2_root()) {
    E_WARNING("netstacklat: no cgroup2 hierarchy is mounted: the Cgroup and "
              "GroupBy cgroup options cannot work; netstacklat is disabled.");
    return -ENOENT;
  }
  s->ncpus = libbpf_num_possible_cpus();
  if (s->ncpus <= 0) {
    E_WARNING("netstacklat: cannot count CPUs: %s", ERRSTR(s->ncpus));
    return s->ncpus ? s->ncpus : -EINVAL;
  }

  for (int h = 0; h < NSL_NHOOKS; h++) {
    s->hooks[h] = (struct hook_state){.def = &hook_defs[h],
                                   .wanted = cfg->hook_on[h]};
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
  bool cg_storage = false, cg_hash = false, cg_anc = false;
  if (cfg->ncgroups || cfg->groupby == NSL_GROUP_CGROUP) {
    /* Test-only: EBPF_TEST_CGROUP_FILTER skips the ways before it. */
    const char *force = test_switch(TEST_CGROUP_FILTER);
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
    cg_anc = !no_anc;
    int r = libbpf_probe_bpf_map_type(
        (enum bpf_map_type)32 /* BPF_MAP_TYPE_CGRP_STORAGE, 6.2: newer than
                                 some UAPI headers we build with */,
        NULL);
    bool hash_forced = force && strcmp(force, "hash") == 0;
    cg_storage = !cg_anc && r == 1 && !hash_forced;
    char refused[400] = "";
    if (cg_storage && cg_storage_refused(refused, sizeof(refused)))
      cg_storage = false;
    cg_hash = !cg_storage && !cg_anc;
    if (cg_anc)
      E_INFO("netstacklat: the Cgroup filter uses the cgroups' ancestors "
             "(%zu Cgroup paths without globs: each socket cgroup's ancestor "
             "at a configured path's level is compared with it).",
             cfg->ncgroups);
    else
      E_INFO("netstacklat: the Cgroup filter and GroupBy cgroup use %s (%s%s%s).",
             cg_storage ? "cgroup storage" : "hash maps",
             hash_forced ? "forced by EBPF_TEST_CGROUP_FILTER=hash"
             : refused[0] ? refused
             : r == 1    ? "the kernel has BPF_MAP_TYPE_CGRP_STORAGE"
                         : "the kernel has no BPF_MAP_TYPE_CGRP_STORAGE (6.2+)",
             cfg->ncgroups ? "; not the cgroups' ancestors: " : "",
             cfg->ncgroups ? no_anc : "");
    if (cfg->groupby == NSL_GROUP_CGROUP) {
      /* The group index: 4 positions per slot, a power of two, so that
       * two probes nearly always find room (EBPF_TEST_CG_INDEX_SIZE, a
       * power of two, forces a size for the tests). */
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
    }
  }
  nsl_cgf_free(&s->cgf);
  nsl_cgf_init(&s->cgf, cfg->cgroups, cfg->ncgroups, cg_anc, cg_storage, cg_hash);
  if (cfg->ncgroups) {
    /* Sized from the tree; EBPF_TEST_CG_FILTER_SIZE forces a size for the
     * tests. */
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
  struct loader_ops ops = {s, nsl_open, nsl_load, nsl_destroy};
  int n = loader_run(FEATURE, &ops, s->hooks, NSL_NHOOKS);
  if (n <= 0 || !s->skel) {
    E_WARNING("netstacklat: no hook could be attached; netstacklat is "
              "disabled.");
    if (s->skel)
      netstacklat_shutdown();
    return n < 0 ? n : -ENOENT;
  }

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
  if (nsl_outliers_open(s)) {
    netstacklat_shutdown();
    return -errno;
  }
  memset(s->prev, 0, sizeof(s->prev));
  memset(s->prev_le, 0, sizeof(s->prev_le));
  nsl_sample_start(s);
  now_mono(&s->last_read);
  return 0;
}

/* By group, then hook: a group's hooks are next to each other, so that it
 * is looked up and named once per read. */
static int cmp_gkey(const void *a, const void *b) {
  const struct nsl_group_key *x = a, *y = b;
  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  return x->hook < y->hook ? -1 : x->hook > y->hook;
}

/* A key and where it is in the batch read: sorted by cmp_gkey (the key
 * comes first, as in struct group_prev). */
struct gkey_at {
  struct nsl_group_key key;
  size_t at;
};
_Static_assert(offsetof(struct gkey_at, key) == 0 &&
                   offsetof(struct group_prev, key) == 0,
               "cmp_gkey reads the key at the start");

/* The group's name by the naming rule, and the hash of its path (for
 * names_unshare()); false when the group is gone. */
static bool group_name(struct nsl_state *s, const struct nsl_group_key *k,
                       char buf[EBPF_NAME_LEN], uint32_t *hash,
                       bool *refreshed) {
  if (s->cfg.groupby == NSL_GROUP_INTERFACE) {
    const struct nsl_if_group *g = nsl_ifnames_find(&s->ifnames, k->group);
    if (!g || g->gone)
      return false;
    memcpy(buf, g->name, EBPF_NAME_LEN);
    *hash = g->hash;
    return true;
  }
  /* The tree is walked again only when a group is not in it, or is no
   * longer where the tree says (gone, or moved): not every interval. */
  const char *rel = cgroup_tree_path(&s->cgroups, k->group);
  if (rel && !*refreshed && !cgroup_is(rel, k->group))
    rel = NULL;
  if (!rel && !*refreshed) {
    cgroup_tree_refresh(&s->cgroups);
    *refreshed = true;
    rel = cgroup_tree_path(&s->cgroups, k->group);
  }
  if (!rel)
    return false; /* the cgroup is gone */
  cgroup_name(rel, buf);
  *hash = path_hash(rel);
  return true;
}

/* -------------------------------------------- GroupBy cgroup, slots */

/* Add the slots' counts to this interval's (hook, group) entries: a
 * (hook, cgroup) pair with an entry in the hash, or with any event in its
 * slot. *cur has room for n + the slots' rows. Returns the new count. */
static size_t cg_slots_merge(struct nsl_state *s, struct group_prev *cur,
                             size_t n) {
  int fd = bpf_map__fd(s->skel->maps.netstacklat_cgroup_slots);
  long long top = -1; /* the highest slot in use */
  for (size_t u = 0; u < s->cgslots.nused; u++)
    if ((long long)s->cgslots.used[u].slot > top)
      top = s->cgslots.used[u].slot;
  if (top < 0)
    return n;
  /* One batched read of the rows up to the highest slot in use (a lookup
   * per slot and hook cost ~3 us each: 0.5 ms for 50 cgroups x 3 hooks);
   * one lookup per row where batches are not supported. */
  __u32 want = (__u32)(top + 1) * s->nwanted_pos, got = 0;
  __u32 *keys = malloc(want * sizeof(*keys));
  size_t vbytes = (size_t)want * s->ncpus * sizeof(struct nsl_slot_hist);
  struct nsl_slot_hist *v =
      malloc(vbytes <= ((size_t)4 << 20) ? vbytes : s->ncpus * sizeof(*v));
  struct nsl_hist *per = calloc((size_t)s->ncpus, sizeof(*per));
  bool batched = false;
  /* Past 4 MiB of values (many slots on many CPUs) the rows are read one
   * by one rather than holding all of them at once. */
  if (keys && v && per &&
      vbytes <= ((size_t)4 << 20)) {
    __u32 out_batch = 0, count = want;
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    int err = bpf_map_lookup_batch(fd, NULL, &out_batch, keys, v, &count, &bo);
    if (!err || errno == ENOENT) {
      batched = true;
      got = count;
    }
  }
  size_t n0 = n;
  for (long long i = 0; v && per && i <= top; i++) {
    if (!s->cgslots.slot[i].id)
      continue;
    for (__u32 h = 0; h < NSL_NHOOKS; h++) {
      if (!s->hooks[h].wanted || s->hooks[h].flavour < 0)
        continue;
      __u32 k = (__u32)i * s->nwanted_pos + s->hook_pos[h];
      const struct nsl_slot_hist *row;
      if (batched) {
        if (k >= got || keys[k] != k)
          continue;
        row = &v[(size_t)k * s->ncpus];
      } else {
        if (bpf_map_lookup_elem(fd, &k, v) != 0)
          continue;
        row = v;
      }
      for (int c = 0; c < s->ncpus; c++)
        per[c] = row[c].h;
      struct group_prev e = {
          .key = {.group = s->cgslots.slot[i].id, .hook = h}};
      nsl_sum_cpus(s->ncpus, per, &e.h);
      struct group_prev *p = bsearch(&e, cur, n0, sizeof(*cur), cmp_gkey);
      if (!p) {
        if (e.h.count == 0 && /* every timed event is counted */
            !memcmp(e.h.skipped, (struct nsl_hist){0}.skipped,
                    sizeof(e.h.skipped)))
          continue; /* no event yet for this hook */
        cur[n++] = e;
        continue;
      }
      for (int b = 0; b < NSL_NFINE; b++)
        p->h.bucket[b] += e.h.bucket[b];
      p->h.sum_ns += e.h.sum_ns;
      p->h.count += e.h.count;
      for (int r = 0; r < NSL_NSKIPS; r++)
        p->h.skipped[r] += e.h.skipped[r];
    }
  }
  free(keys);
  free(v);
  free(per);
  if (n != n0)
    qsort(cur, n, sizeof(*cur), cmp_gkey);
  return n;
}

/* cur->inst: "<hook>-<gname>", kept from the previous interval's p while
 * the group keeps its name (gname, from group_name()), else made again. */
static void group_inst(struct group_prev *cur, const struct group_prev *p,
                       const char *gname) {
  const char *hook = nsl_hook_names[cur->key.hook];
  size_t hl = strlen(hook);
  /* The kept name is "<hook>-" + gname: compare instead of formatting. */
  if (p && p->inst[0] && !strncmp(p->inst + hl + 1, gname, EBPF_NAME_LEN)) {
    memcpy(cur->inst, p->inst, sizeof(cur->inst));
    return;
  }
  snprintf(cur->inst, sizeof(cur->inst), "%s-%s", hook, gname);
}

/* The group table one key at a time (bpf_map_get_next_key and a lookup
 * each): for a kernel or map where batched lookups fail. Returns the
 * number of entries read into *keys and *vals (grown as needed), or -1. */
static ssize_t read_grouped_keys(const struct bpf_map *map, int fd,
                                 struct nsl_group_key **keys,
                                 struct nsl_hist **vals, size_t *cap,
                                 size_t vsize) {
  size_t n = 0, max = bpf_map__max_entries(map);
  struct nsl_group_key k, next;
  bool first = true;
  while (bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0 && n <= max) {
    first = false;
    k = next;
    if (n == *cap) {
      struct nsl_group_key *k2 = realloc(*keys, 2 * *cap * sizeof(**keys));
      if (!k2)
        return -1;
      *keys = k2;
      struct nsl_hist *v2 = realloc(*vals, 2 * *cap * vsize);
      if (!v2)
        return -1;
      *vals = v2;
      *cap *= 2;
    }
    if (bpf_map_lookup_elem(fd, &next, (char *)*vals + n * vsize) == 0)
      (*keys)[n++] = next; /* else deleted meanwhile */
  }
  return (ssize_t)n;
}

static void read_grouped(struct nsl_state *s, double elapsed) {
  struct timespec now_ts;
  nsl_slots_tick(&s->cgslots, now_mono(&now_ts));
  int fd = bpf_map__fd(s->skel->maps.netstacklat_grouped_seconds);
  size_t vsize = sizeof(struct nsl_hist) * (size_t)s->ncpus;
  size_t cap = 256, n = 0;
  struct nsl_group_key *keys = malloc(cap * sizeof(*keys));
  struct nsl_hist *vals = malloc(cap * vsize);
  if (!keys || !vals)
    goto out;
  /* Batched read; one key at a time where that fails (any error but the
   * end of the map or a bucket bigger than the room left). When both fail,
   * this interval's grouped values are left out and the last ones kept as
   * they are, so that the next interval's counters go on from them (a
   * group read only in part would go backwards). */
  __u32 out_batch = 0;
  bool first = true, grow = false;
  static bool warned_batch;
  bool batch = !test_switch(TEST_NO_BATCH);
  if (!batch && !warned_batch)
    E_INFO("netstacklat: EBPF_TEST_NO_BATCH: reading the group table one "
           "key at a time.");
  warned_batch = warned_batch || !batch;
  for (;;) {
    if (!batch) {
      ssize_t r = read_grouped_keys(s->skel->maps.netstacklat_grouped_seconds,
                                    fd, &keys, &vals, &cap, vsize);
      if (r < 0) {
        E_WARNING("netstacklat: reading the grouped histograms failed: %s; "
                  "this interval's grouped values are left out.",
                  ERRSTR(errno));
        goto out;
      }
      n = (size_t)r;
      break;
    }
    if (n == cap || grow) {
      cap *= 2;
      grow = false;
      struct nsl_group_key *k2 = realloc(keys, cap * sizeof(*keys));
      if (!k2)
        goto out;
      keys = k2;
      struct nsl_hist *v2 = realloc(vals, cap * vsize);
      if (!v2)
        goto out;
      vals = v2;
    }
    __u32 count = (__u32)(cap - n);
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    int err = bpf_map_lookup_batch(fd, first ? NULL : &out_batch, &out_batch,
                                   keys + n, (char *)vals + n * vsize, &count,
                                   &bo);
    first = false;
    n += count;
    if (err) {
      if (errno == ENOENT)
        break; /* end of map */
      if (errno == ENOSPC) { /* a hash bucket bigger than the room left */
        grow = true;
        continue;
      }
      if (!warned_batch)
        E_INFO("netstacklat: batched lookups of the group table failed (%s): "
               "reading it one key at a time.",
               ERRSTR(errno));
      warned_batch = true;
      batch = false;
      n = 0;
      continue;
    }
  }

  bool slots = s->cgslots.slot != NULL;
  size_t room = n + (slots ? s->cgslots.nused * NSL_NHOOKS : 0);
  struct group_prev *cur = calloc(room ? room : 1, sizeof(*cur));
  /* Sort (key, index) pairs, not the ~400-byte entries. */
  struct gkey_at *order = malloc((n ? n : 1) * sizeof(*order));
  if (!cur || !order) {
    free(cur);
    free(order);
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    order[i] = (struct gkey_at){keys[i], i};
  qsort(order, n, sizeof(*order), cmp_gkey);
  for (size_t i = 0; i < n; i++) {
    cur[i].key = order[i].key;
    nsl_sum_cpus(s->ncpus,
             (struct nsl_hist *)((char *)vals + order[i].at * vsize),
             &cur[i].h);
  }
  free(order);
  if (slots)
    n = cg_slots_merge(s, cur, n);
  if (s->cfg.groupby == NSL_GROUP_INTERFACE) {
    uint64_t *groups = malloc((n ? n : 1) * sizeof(*groups));
    for (size_t i = 0; groups && i < n; i++)
      groups[i] = cur[i].key.group;
    nsl_ifnames_refresh(&s->ifnames, groups, groups ? n : 0);
    free(groups);
  }
  /* Every group is named before any is dispatched: two groups that the
   * naming rule names alike (foo-bar.service and foo_bar.service; with
   * NetworkNamespace "all", namespace x's eth0 and an interface x_eth0)
   * are told apart by the hashes of their paths (names_unshare()). */
  size_t ng = 0;
  for (size_t i = 0; i < n; i++)
    ng += i == 0 || cur[i].key.group != cur[i - 1].key.group;
  struct gname_of {
    char name[EBPF_NAME_LEN];
    bool named; /* false: the group is gone */
  } *gs = malloc((ng ? ng : 1) * sizeof(*gs));
  struct name_use *gu = malloc((ng ? ng : 1) * sizeof(*gu));
  if (!gs || !gu) {
    free(gs);
    free(gu);
    free(cur);
    goto out;
  }
  bool refreshed = false;
  size_t nu = 0;
  for (size_t i = 0, g = 0; i < n; i++) {
    if (i && cur[i].key.group == cur[i - 1].key.group)
      continue;
    uint32_t hash = 0;
    gs[g].named =
        group_name(s, &cur[i].key, gs[g].name, &hash, &refreshed);
    if (gs[g].named)
      gu[nu++] = (struct name_use){gs[g].name, hash};
    g++;
  }
  size_t shared = names_unshare(gu, nu);
  if (shared != s->groups_shared) {
    if (shared)
      E_INFO("netstacklat: %zu groups have a name that the naming rule "
             "gives to another group too: each of them is named "
             "<name>_<hash of its path> while they share it.",
             shared);
    else
      E_INFO("netstacklat: no two groups share a name any more.");
    s->groups_shared = shared;
  }
  free(gu);
  size_t kept = 0;
  const char *gname = NULL;
  bool named = false; /* gname is cur[i]'s group's, when it has one */
  for (size_t i = 0, g = 0; i < n; i++) {
    if (i == 0 || cur[i].key.group != cur[i - 1].key.group) {
      named = gs[g].named;
      gname = gs[g].name;
      g++;
    }
    if (cur[i].key.hook >= NSL_NHOOKS)
      continue;
    struct group_prev *p =
        bsearch(&cur[i], s->gprev, s->ngprev, sizeof(*s->gprev), cmp_gkey);
    if (!named) {
      /* The group is gone: free its slot for new groups, and forget its
       * counters (a group made again later starts from zero). */
      bpf_map_delete_elem(fd, &cur[i].key);
      if (slots)
        nsl_slot_free(&s->cgslots, cur[i].key.group);
      continue;
    }
    /* A cgroup still known by its path: a slot for its events. */
    if (slots && cgroup_tree_path(&s->cgroups, cur[i].key.group))
      nsl_slot_give(&s->cgslots, cur[i].key.group);
    group_inst(&cur[i], p, gname);
    static const struct nsl_hist zero;
    value_list_t vl;
    vl_prepare(&vl, FEATURE, cur[i].inst);
    if (p)
      memcpy(cur[i].le, p->le, sizeof(cur[i].le));
    nsl_dispatch(s, cur[i].key.hook, &vl, &cur[i].h, p ? &p->h : &zero, elapsed,
             cur[i].le);
    cur[kept++] = cur[i]; /* still sorted */
  }
  free(gs);
  free(s->gprev);
  s->gprev = cur;
  s->ngprev = kept;
out:
  free(keys);
  free(vals);
}

static int netstacklat_read(void) {
  struct nsl_state *s = &nsl;
  const struct nsl_config *cfg = &s->cfg;
  if (!s->skel)
    return -1;
  struct timespec ts;
  double t = now_mono(&ts);
  double elapsed = t - (s->last_read.tv_sec + s->last_read.tv_nsec / 1e9);
  s->last_read = ts;
  set_clock_offset(s);
  /* GroupBy cgroup walks the tree only when it meets a group it cannot
   * name (group_name()); the hash-way Cgroup filter needs it every
   * interval. */
  if (s->cgf.hash)
    cgroup_tree_refresh(&s->cgroups);
  if (cfg->ncgroups)
    nsl_cgf_refresh(&s->cgf, &s->cgroups, true);
  nsl_iff_refresh(&s->iff, false);

  if (nsl_read_hooks(s, elapsed))
    return -1;
  if (cfg->groupby != NSL_GROUP_NONE)
    read_grouped(s, elapsed);
  if (s->outlier_rb)
    nsl_outliers_read(s);
  nsl_sample_read(s, elapsed);
  return 0;
}

static void netstacklat_shutdown(void) {
  struct nsl_state *s = &nsl;
  loader_detach(s->hooks, NSL_NHOOKS);
  ring_buffer__free(s->outlier_rb);
  s->outlier_rb = NULL;
  if (s->skel)
    netstacklat_bpf__destroy(s->skel);
  s->skel = NULL;
  if (s->ts_sock >= 0)
    close(s->ts_sock);
  s->ts_sock = -1;
  free(s->gprev);
  s->gprev = NULL;
  s->ngprev = 0;
  s->groups_shared = 0;
  nsl_ifnames_free(&s->ifnames);
  nsl_iff_free(&s->iff);
  s->warned_map_full = false;
  cgroup_tree_free(&s->cgroups);
  nsl_cgf_free(&s->cgf);
  nsl_slots_free(&s->cgslots);
  nsl_config_free(&s->cfg);
}

static struct bpf_object *netstacklat_object(void) {
  return nsl.skel ? nsl.skel->obj : NULL;
}

static int netstacklat_config_entry(const oconfig_item_t *ci) {
  return nsl_configure(&nsl, ci);
}

/* ----------------------------------- tcp_window's sk_data_ready work */

int netstacklat_serve_tcp_window(uint32_t threshold, uint32_t netns_inum) {
  if (!nsl.skel || !threshold ||
      nsl.hooks[NSL_TCP_SOCKET_ENQUEUED].flavour != FLAVOUR_TP)
    return -ENOENT;
  nsl.skel->bss->tcpw_netns = netns_inum;
  /* The namespace before the switch: the program reads it after. */
  __atomic_store_n(&nsl.skel->bss->tcpw_threshold, threshold, __ATOMIC_RELEASE);
  return 0;
}

struct bpf_map *netstacklat_tcp_window_map(void) {
  return nsl.skel && nsl.skel->bss->tcpw_threshold
             ? nsl.skel->maps.netstacklat_tcpw_wakeups
             : NULL;
}

void netstacklat_unserve_tcp_window(void) {
  if (nsl.skel)
    __atomic_store_n(&nsl.skel->bss->tcpw_threshold, 0, __ATOMIC_RELEASE);
}

int netstacklat_serve_stalled(uint32_t netns_inum, int *marks_fd) {
  const struct hook_state *h = &nsl.hooks[NSL_TCP_SOCKET_ENQUEUED];
  if (!nsl.skel || h->flavour < 0 || h->nlinks == 0)
    return -ENOENT;
  nsl.skel->bss->tcpw_mark_netns = netns_inum;
  *marks_fd = bpf_map__fd(nsl.skel->maps.netstacklat_tcpw_marks);
  return 0;
}

int netstacklat_stalled_epoch(uint32_t epoch, uint64_t *lost) {
  if (!nsl.skel)
    return -ENOENT;
  /* The namespace before the first epoch: the program reads it after. */
  __atomic_store_n(&nsl.skel->bss->tcpw_epoch, epoch, __ATOMIC_RELEASE);
  *lost = __atomic_load_n(&nsl.skel->bss->tcpw_marks_lost, __ATOMIC_RELAXED);
  return 0;
}

void netstacklat_unserve_stalled(void) {
  if (nsl.skel)
    __atomic_store_n(&nsl.skel->bss->tcpw_epoch, 0, __ATOMIC_RELEASE);
}

const struct ebpf_feature feature_netstacklat = {
    .block = "Netstacklat",
    .name = FEATURE,
    .config = netstacklat_config_entry,
    .init = netstacklat_init,
    .read = netstacklat_read,
    .shutdown = netstacklat_shutdown,
    .bpf_object = netstacklat_object,
};
