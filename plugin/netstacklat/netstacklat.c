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
    nsl_read_grouped(s, elapsed);
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
