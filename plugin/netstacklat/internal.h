// SPDX-License-Identifier: GPL-2.0-only
/* What netstacklat's parts (the .c files of plugin/netstacklat/) share:
 * the settings of the <Netstacklat> block and the state of a running
 * netstacklat, one struct nsl_state that the feature's entry points own
 * and hand down. Private to this folder: "netstacklat/netstacklat.h" is
 * the header the BPF side shares (bpf/netstacklat/netstacklat.h). */
#ifndef EBPF_NSL_INTERNAL_H
#define EBPF_NSL_INTERNAL_H

#include "common/cgroup.h"
#include "common/hist.h"
#include "common/loader.h"
#include "common/newnames.h"
#include "common/netns.h"
#include "common/ring.h"
#include "common/rtclock.h"
#include "core/ebpf.h"
#include "rx/rx.h"
#include "netstacklat/netstacklat.h"
#include "netstacklat/cgfilter.h"
#include "netstacklat/ifaces.h"
#include "netstacklat/outliers.h"
#include "netstacklat/slots.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define FEATURE "netstacklat"

#define MAX_PERCENTILES 16
#define MAX_BOUNDS 32
#define PCT_NAME_LEN 24 /* "p" and up to 15 digits, with room */

/* Hooks that see the packet before socket lookup: no socket, no cgroup. */
static inline bool hook_has_socket(int h) {
  return h >= NSL_TCP_SOCKET_ENQUEUED;
}

static inline double now_mono(struct timespec *ts) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  return ts->tv_sec + ts->tv_nsec / 1e9;
}

/* What the <Netstacklat> block sets. */
struct nsl_config {
  bool hooks_set;
  bool hook_on[NSL_NHOOKS];
  double pct[MAX_PERCENTILES];
  int npct;
  bool buckets;
  char **cgroups;
  size_t ncgroups;
  char **ifaces;
  size_t nifaces;
  char *netns; /* "host", "all" or a name under /run/netns */
  int groupby;
  long long min_qlen;
  bool include_hol;
  long long max_groups;
  long long new_groups; /* NewGroupsPerHour (0: no limit) */
  bool timestamps; /* hold an SO_TIMESTAMPING socket */
  double outlier_s; /* OutlierThreshold; 0: off */
  long long outlier_limit;
  long long sample_every; /* SampleEvery: time one event in this many; 0:
                           * auto (each hook's N chosen to keep CostBudget) */
  double cost_budget;      /* CostBudget, % of one CPU (SampleEvery auto) */
  /* BucketBounds, in ns, rounded to fine bucket edges, sorted, unique */
  uint64_t bounds[MAX_BOUNDS];
  int nbounds;
};

struct rx_bpf;
struct ring_buffer;
struct group_prev;

struct nsl_state {
  struct nsl_config cfg;
  /* The identity of each hook's values (plugin, plugin_instance), and the
   * type_instance of each percentile, bucket and bound: made once at
   * config, reused every interval. */
  value_list_t hook_vl[NSL_NHOOKS];
  char pct_names[MAX_PERCENTILES][PCT_NAME_LEN];
  char bucket_names[HIST_NBUCKETS][32];
  char bound_names[MAX_BOUNDS][32]; /* "le_<ns>" */

  /* The receive path's object while netstacklat is its client, and each
   * hook as netstacklat wants it (before the start) and got it (after:
   * rx_view()); the links are the part's. */
  struct rx_bpf *skel;
  struct hook_state hooks[NSL_NHOOKS];
  int ncpus;
  /* GroupBy's stripes per value (struct nsl_stripe): the possible CPUs
   * rounded up to a power of two, at most NSL_STRIPES_MAX. */
  int stripes;
  /* GroupBy (but with EBPF_TEST_NO_WAYS): each CPU's ways
   * (netstacklat_fronts) are read and added to their groups' values;
   * front_rel[(cpu * NSL_NHOOKS + hook) * NSL_FRONT_WAYS + way]: the
   * release last written there (the group that way held when it went,
   * 0 for none). */
  bool fronts;
  __u64 *front_rel;
  __u64 *front_keys; /* the group of each way at the last read, as rel */
  void *front_buf;   /* a hook's ways of every CPU, as a lookup gives them */
  int ts_sock; /* the SO_TIMESTAMPING socket, or -1 */
  struct netns netns;
  /* "Now" in BPF: the clock chosen at init, plus REALTIME minus that
   * clock, written before the programs attach (in the skeleton's .bss
   * before load) and refreshed every interval. */
  enum rtclock bpf_clock;
  /* Each wanted hook's position among the wanted hooks (its row in a
   * GroupBy cgroup slot), and their number. */
  __u32 hook_pos[NSL_NHOOKS], nwanted_pos;

  struct cgroup_tree cgroups;
  /* The cgroup tree was walked in this read (GroupBy cgroup): a group it
   * cannot name and a cgroup waiting for a slot then share one walk. */
  bool tree_walked;
  /* Entries of the Cgroup filter's hash map (the hash way): room for 4
   * times the cgroups matching at start, at least 4096, at most 2^20; more
   * than it holds are retried every interval, with a WARNING. */
  __u32 cg_filter_size;
  /* The Cgroup filter (plugin/netstacklat/cgfilter.c): the ways chosen at
   * init and what the kernel was given. cgf.hash: the hash filter is kept
   * filled (no cgroup storage, or a socket hook runs as a kprobe). */
  struct nsl_cgfilter cgf;
  /* The Interface filter and GroupBy interface's names
   * (plugin/netstacklat/ifaces.c). */
  struct nsl_iffilter iff;
  struct nsl_ifnames ifnames;
  /* GroupBy cgroup: the slots and the group index
   * (plugin/netstacklat/slots.c); cgslots.slot is NULL without GroupBy
   * cgroup. */
  struct nsl_slots cgslots;
  struct ebpf_ring outliers; /* .rb set: OutlierThreshold */
  struct nsl_outlier_ctx outlier_ctx;

  /* The last read: when, and each hook's histogram and BucketBounds
   * counters then (ungrouped), or each (hook, group)'s (grouped, sorted by
   * key; groups_shared: groups named with their hash). */
  struct timespec last_read;
  struct nsl_hist prev[NSL_NHOOKS];
  uint64_t prev_le[NSL_NHOOKS][MAX_BOUNDS];
  bool warned_map_full;
  bool table_full; /* skipped-map_full grew at this read */
  struct group_prev *gprev;
  size_t ngprev;
  /* The batch lookups' room for keys and values (GroupBy's table and
   * slots), kept from read to read: made anew at each read, its pages
   * (up to 4 MiB of values) were faulted in again every time, 1.6 to 13
   * ms a read on this project's VM (groups.c, batch_room()). */
  void *batch_keys, *batch_vals;
  size_t batch_keys_size, batch_vals_size;
  /* Likewise the table's entries as read (keys and sums, room for
   * tr_cap), and the entries of the read before last (gspare, room for
   * gspare_cap; gprev has room for gprev_cap), made into the next read's. */
  void *tr_keys, *tr_sums;
  size_t tr_cap;
  struct group_prev *gspare;
  size_t gspare_cap, gprev_cap;
  size_t groups_shared;
  /* NewGroupsPerHour: the names given; and the group "other", per hook:
   * the events of the groups refused a name, of groups gone since the last
   * read, and the kernel's "other" entry (a full table), summed so far
   * (other), at the last read (other_prev); dispatched once it has any. */
  struct newnames names;
  struct nsl_hist other[NSL_NHOOKS], other_prev[NSL_NHOOKS];
  uint64_t other_le[NSL_NHOOKS][MAX_BOUNDS];
  bool other_on[NSL_NHOOKS];

  /* SampleEvery: each hook's N during the interval being read (fixed N,
   * or auto's choice at the read before), and its events in that interval
   * (exact, every N), summed by nsl_dispatch(). */
  uint32_t n_used[NSL_NHOOKS];
  uint64_t hook_events[NSL_NHOOKS];
  /* SampleEvery auto: the programs' run time at the last read (BPF stats;
   * 0 while they are off), and whether the budget was out of reach then. */
  uint64_t auto_run_ns;
  bool auto_over;
  /* netstacklat as a client of the receive path (plugin/rx/rx.h): what it
   * asks of the part and its callbacks. */
  struct rx_client rx;
};

/* ---- config.c: the <Netstacklat> block */

/* The hooks' names: the Hooks option's values, the plugin_instance of
 * their values. */
extern const char *const nsl_hook_names[NSL_NHOOKS];

/* The block, and the names its values are dispatched under. Returns 0 or
 * -1 (after an ERROR for each wrong key). */
/* The <Netstacklat> block's keys (config.c). */
extern const struct cfg_block nsl_keys;
int nsl_configure(struct nsl_state *s, const oconfig_item_t *ci);

/* Back to the defaults, as before any configuration (at shutdown). */
void nsl_config_free(struct nsl_config *cfg);

/* ---- load.c: the start */

/* Everything the object is opened with (namespace, hooks, the Cgroup
 * filter's way, GroupBy cgroup's slots, the clock). Returns 0, or a
 * negative errno that the log has said (but -ENOMEM). */
int nsl_prepare(struct nsl_state *s);

/* netstacklat joins the receive path (s->rx): its hooks, their flavours'
 * refusals and programs, its paths and its callbacks. */
void nsl_join(struct nsl_state *s);
/* The callbacks of s->rx (rx.h), ctx the state. */
void nsl_rx_open(void *ctx, struct rx_bpf *skel, bool joined);
void nsl_rx_loaded(void *ctx, struct rx_bpf *skel);
void nsl_rx_gone(void *ctx);

/* Once attached: the filters filled, the timestamping socket opened. */
void nsl_after_attach(struct nsl_state *s);

/* REALTIME minus the clock of "now", into the programs' variable (before
 * load, and every interval). */
void nsl_set_clock_offset(struct nsl_state *s);

/* ---- read.c: the histograms' reads and their values */

/* fronts.c: each CPU's ways, with GroupBy (and nsl_fronts_merge(),
 * groups.h). */
int nsl_fronts_init(struct nsl_state *s);
void nsl_fronts_free(struct nsl_state *s);
void nsl_fronts_release(struct nsl_state *s, __u32 hook, __u64 group);

/* out += h (read.c). */
void nsl_add_hist(struct nsl_hist *restrict out,
                  const struct nsl_hist *restrict h);
/* out: the sum of ncpus per-CPU histograms (the buckets modulo 2^32, as
 * the BPF side counts them). */
void nsl_sum_cpus(int ncpus, const struct nsl_hist *percpu,
                  struct nsl_hist *out);

/* out: the sum of a GroupBy value's n stripes (struct nsl_stripe). */
void nsl_sum_stripes(int n, const struct nsl_stripe *restrict v,
                     struct nsl_hist *restrict out);

/* One hook's or group's values: its histogram now against the last
 * read's (before), under vl's identity (vl_prepare()); le[]: its
 * BucketBounds counters, kept by the caller. The interval's events are
 * added to s->hook_events[hook]. */
void nsl_dispatch(struct nsl_state *s, __u32 hook, value_list_t *vl,
                  const struct nsl_hist *now, const struct nsl_hist *before,
                  double elapsed, uint64_t le[MAX_BOUNDS]);

/* Every attached hook's own histogram: its values without GroupBy, its
 * skipped-map_full with it. Returns -1 when out of memory. */
int nsl_read_hooks(struct nsl_state *s, double elapsed);

/* OutlierThreshold's ring buffer, at init: 0, or -1 after an ERROR. */
int nsl_outliers_open(struct nsl_state *s);

/* Its records as notifications, and its counters: every read. */
void nsl_outliers_read(struct nsl_state *s);

/* ---- groups.c: GroupBy */

/* The interval's (hook, group) entries and their values; the groups that
 * are gone deleted (every read with GroupBy). */
void nsl_read_grouped(struct nsl_state *s, double elapsed);

/* ---- other.c: the group "other" (NewGroupsPerHour, a full table) */

/* Forget its counts (at init and shutdown). */
void nsl_other_reset(struct nsl_state *s);

/* Add a (hook, group)'s events since the last read (now against before,
 * NULL: none before) to the group "other" of its hook. */
void nsl_other_add(struct nsl_state *s, __u32 hook, const struct nsl_hist *now,
                   const struct nsl_hist *before);

/* A (hook, group) whose group is gone: its events since the last read
 * (as when its table entry (fd) is deleted, where the kernel can say:
 * 5.14+, and the group has no slot; else as read: now) to "other", its
 * entry deleted and its slot freed. */
void nsl_other_gone(struct nsl_state *s, int fd, const struct nsl_group_key *k,
                    const struct nsl_hist *now, const struct nsl_hist *before);

/* Each hook's group "other", once it has had events: "<hook>-other". */
void nsl_other_dispatch(struct nsl_state *s, double elapsed);

/* GroupBy cgroup: slots for the cgroups whose events found the group table
 * full (the kernel notes them), when they are alive and get a name. */
void nsl_other_waiting(struct nsl_state *s);

/* ---- sample.c: SampleEvery */

/* At init: each hook's N (SampleEvery; 1 for auto's first interval). */
void nsl_sample_start(struct nsl_state *s);

/* After the interval's values: each hook's N as a gauge (when sampling),
 * auto's N for the next interval, and the interval's events forgotten. */
void nsl_sample_read(struct nsl_state *s, double elapsed);

#endif
