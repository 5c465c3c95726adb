// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's clamps: TCP receive-window clamps counted by BPF
 * (bpf/tcp_window/tcp_window.bpf.c, one of three flavours chosen at run
 * time by the loader), or, in the tracepoint flavour, by the receive
 * path's sk_data_ready program when it runs (rx.c). */
#include "tcp_window/internal.h"

#include "common/loader.h"
#include "tcp_window.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>

static const struct tcpw_cfg *cfg;
static struct tcp_window_bpf *skel;
static uint32_t netns_ino; /* BPF filter; 0: all */

static const struct hook_def clamp_hook = {
    .name = "clamps",
    .progs = {HOOK_PROG(tcp_window_bpf, tcp_window_fexit),
              HOOK_PROG(tcp_window_bpf, tcp_window_sk_data_ready),
              HOOK_PROG(tcp_window_bpf, tcp_window_kprobe),
              HOOK_PROG(tcp_window_bpf, tcp_window_kretprobe)},
};
static struct hook_state hooks[1] = {{.def = &clamp_hook}};

static struct bpf_object *clamps_open(void *ctx, void **skel_out) {
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  skel = tcp_window_bpf__open_opts(&opts);
  if (!skel)
    return NULL;
  *skel_out = skel;
  skel->rodata->targ_threshold = (__u32)cfg->threshold;
  skel->rodata->targ_netns = netns_ino;
  skel->rodata->targ_transitions = cfg->transitions;
  /* The empty twin exists only to measure the tracepoint's floor. */
  bpf_program__set_autoload(skel->progs.tcp_window_empty, false);
  return skel->obj;
}

static int clamps_load(void *ctx) { return tcp_window_bpf__load(skel); }

static void clamps_destroy(void *ctx) {
  tcp_window_bpf__destroy(skel);
  skel = NULL;
}

/* Clamped wakeups counted by the receive path's sk_data_ready program
 * (tcpw_rx_serve_wakeups()): ours is then detached. */
static bool served;

int tcpw_clamps_init(const struct tcpw_cfg *c, uint32_t ino) {
  struct loader_ops ops = {.open = clamps_open,
                           .load = clamps_load,
                           .destroy = clamps_destroy};
  cfg = c;
  netns_ino = ino;
  hooks[0].wanted = true;
  int n = loader_run(FEATURE, &ops, hooks, 1);
  if (n <= 0) {
    if (skel)
      clamps_destroy(NULL);
    E_WARNING(FEATURE ": clamps are not counted on this kernel (see above).");
    return n < 0 ? n : -ENOTSUP;
  }
  return 0;
}

bool tcpw_clamps_may_ride(void) {
  return hooks[0].flavour == FLAVOUR_TP && !cfg->transitions;
}

void tcpw_clamps_start(void) {
  /* One program on sk_data_ready: each program there costs every packet
   * its entry (docs/performance.md). ClampTransitions keeps ours (its
   * socket storage is this object's). */
  served = tcpw_clamps_may_ride() &&
           tcpw_rx_serve_wakeups((uint32_t)cfg->threshold, netns_ino) == 0;
  if (served) {
    loader_unlink(&hooks[0]);
    E_INFO(FEATURE ": clamped wakeups are counted by the receive path's "
                   "sk_data_ready program (one program on the tracepoint "
                   "for every feature); tcp_window's own is not attached.");
  }
}

/* Sum of a one-slot per-CPU counter map. */
static int percpu_sum(struct bpf_map *map, uint64_t *sum) {
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0)
    return -EINVAL;
  uint64_t vals[ncpu];
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(map), &zero, vals) != 0)
    return -errno;
  *sum = 0;
  for (int i = 0; i < ncpu; i++)
    *sum += vals[i];
  return 0;
}

void tcpw_clamps_read(value_list_t *vl) {
  uint64_t v;
  /* One meaning per name: only the fexit and kprobe flavours count the
   * reference (tcp_try_rmem_schedule() returned with rcv_ssthresh below
   * Threshold). No tracepoint fires there, so the tracepoint flavour counts
   * sk_data_ready events of clamped sockets, under its own name
   * (docs/tcp_window.md). */
  if (hooks[0].flavour == FLAVOUR_TP) {
    struct bpf_map *m = served ? tcpw_rx_wakeups_map()
                               : skel->maps.tcp_window_clamped_wakeups_total;
    if (m && percpu_sum(m, &v) == 0)
      vl_derive(vl, "operations", "clamped_wakeups", (int64_t)v);
  } else if (percpu_sum(skel->maps.tcp_window_clamps_total, &v) == 0) {
    vl_derive(vl, "operations", "clamps", (int64_t)v);
  }
  /* The kprobe flavour has no sk_storage, so no transitions. */
  if (cfg->transitions && hooks[0].flavour != FLAVOUR_KPROBE &&
      percpu_sum(skel->maps.tcp_window_clamp_transitions_total, &v) == 0)
    vl_derive(vl, "operations", "clamp_transitions", (int64_t)v);
}

void tcpw_clamps_free(void) {
  if (served)
    tcpw_rx_unserve_wakeups();
  served = false;
  loader_detach(hooks, 1);
  if (skel)
    clamps_destroy(NULL);
}

struct bpf_object *tcpw_clamps_object(void) {
  return skel ? skel->obj : NULL;
}
