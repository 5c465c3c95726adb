// SPDX-License-Identifier: GPL-2.0-only
/* Per-hook choice of attach flavour at run time, so that one build runs on
 * every kernel. A feature describes its hooks as lists of BPF programs (the
 * programs' fields in its skeleton, so a misspelt program does not build);
 * the flavour of a program and its target come from its ELF section name
 * ("fentry/tcp_v4_rcv", "tp_btf/netif_receive_skb", "kprobe/udp_rcv"...).
 *
 * The feature calls loader_run() with callbacks that open (and configure),
 * load and destroy its skeleton. For each wanted hook the loader tries the
 * flavours in preference order (fentry/fexit, tracepoint, kprobe), or only
 * the one AttachMode forces, probing each with an empty program on the same
 * targets; the losers' programs get autoload off. If loading or attaching the
 * real programs still fails, the flavour that failed is struck off and the
 * cycle is repeated, so one bad hook never takes the others down.
 *
 * Two hooks may list the same program (one program on a tracepoint serving
 * both): it is loaded when either hook chose its flavour and attached once
 * (its link belongs to the first such hook), and a failure strikes that
 * flavour off for both. ops->load runs after the choice, so the feature can
 * tell the program there which hooks it serves. */
#ifndef EBPF_LOADER_H
#define EBPF_LOADER_H

#include "core/base.h"

#include <bpf/libbpf.h>
#include <stddef.h>

enum flavour {
  FLAVOUR_FENTRY = 0, /* fentry/fexit */
  FLAVOUR_TP,         /* tp_btf/raw_tp */
  FLAVOUR_KPROBE,     /* kprobe/kretprobe */
  FLAVOUR_COUNT,
};
const char *flavour_name(enum flavour f);

struct hook_prog {
  /* Where the program's struct bpf_program * is in the feature's skeleton;
   * 0 ends the list. Written with HOOK_PROG. */
  size_t skel_off;
  /* An optional program may be left out (its target is missing, e.g. the
   * IPv6 twin on a kernel without IPv6) without failing the flavour. */
  bool optional;
};

/* One program of a hook, by its field in the skeleton struct SKEL (e.g.
 * rx_bpf): a name that is not a program of the object fails the build.
 * HOOK_PROG(rx_bpf, ip_start_fentry_v6, true) for an optional one. */
#define HOOK_PROG(SKEL, NAME, ...)                                             \
  { offsetof(struct SKEL, progs.NAME), ##__VA_ARGS__ }

#define HOOK_MAX_PROGS 12
#define HOOK_MAX_LINKS HOOK_MAX_PROGS

struct hook_def {
  const char *name; /* hook name, as in collectd-ebpf(5)'s METRICS */
  struct hook_prog progs[HOOK_MAX_PROGS];
};

struct hook_state {
  const struct hook_def *def;
  bool wanted;          /* set by the feature before loader_run() */
  /* The feature the hook is named after in the log and by
   * loader_for_each_hook(); NULL: loader_run()'s. Set by a part that
   * loads hooks for several features (the receive path, plugin/rx/). */
  const char *feature;
  /* Set by the feature before loader_run(): flavours its settings rule
   * out, with the reason to log (NULL: allowed). */
  const char *refuse[FLAVOUR_COUNT];
  int flavour;          /* chosen flavour, -1 when unavailable */
  bool failed[FLAVOUR_COUNT];
  char why[FLAVOUR_COUNT][400]; /* why each flavour was refused */
  struct bpf_link *links[HOOK_MAX_LINKS];
  int nlinks;
};

struct loader_ops {
  void *ctx;
  /* Open the skeleton and set its rodata; return its bpf_object, and the
   * skeleton itself in *skel (HOOK_PROG offsets are into it). */
  struct bpf_object *(*open)(void *ctx, void **skel);
  int (*load)(void *ctx);
  void (*destroy)(void *ctx);
};

/* Returns the number of hooks attached (>= 0), or a negative errno when the
 * object could not be opened at all. On return every hook is either attached
 * (flavour >= 0, links set; one INFO line said which flavour) or unavailable
 * (flavour -1; one WARNING said why, with every flavour's reason). */
/* Free the kernel's BTF that the flavour probes parsed, once for every
 * loader_run() of a start: called when every feature's init is over. */
void loader_btf_release(void);
/* The kernel's BTF (/sys/kernel/btf/vmlinux), parsed once for the plugin's
 * start and shared until loader_btf_release(); NULL when unreadable. */
const struct btf *loader_kernel_btf(void);

int loader_run(const char *feature, const struct loader_ops *ops,
               struct hook_state *hooks, size_t nhooks);

/* Destroy every link of the hooks (the caller then destroys the skeleton).
 * The hooks leave the list of loader_for_each_hook(). */
void loader_detach(struct hook_state *hooks, size_t nhooks);

/* Destroy one hook's links and keep its flavour: another program does its
 * work (tcp_window's clamps, counted on the receive path), or no client
 * of the receive path wants it any more. */
void loader_unlink(struct hook_state *h);

/* The kernel's info of a loaded program (run count and run time while BPF
 * statistics are on); -1 when it is not loaded or the kernel refuses. */
int loader_prog_info(const struct bpf_program *p, struct bpf_prog_info *info);

/* Every wanted hook of every hook array that loader_run() handled and
 * loader_detach() has not released yet, with the feature name given to
 * loader_run(): the core reports each hook's flavour from it, so that no
 * feature has to. */
void loader_for_each_hook(void (*cb)(const char *feature,
                                     const struct hook_state *h, void *arg),
                          void *arg);

/* The number that stands for a hook's flavour in the metric
 * ebpf/<feature>-<hook>/gauge-flavour: 1 fentry/fexit, 2 tracepoint,
 * 3 kprobe, 0 unavailable (flavour -1). */
int flavour_code(int flavour);

/* Parse a section name into flavour and target; exposed for tests.
 * Returns -1 when the section is not a hookable one. */
int section_flavour(const char *sec, const char **target, bool *ret);

/* libbpf output into collectd's log. */
void loader_log_install(void);
void loader_log_restore(void);

/* Load a probe object quietly (libbpf's messages at DEBUG): load(obj) runs
 * with them quieted; returns its result, and *verdict (len bytes) holds
 * the verifier's last words when it refused a program ("" otherwise). */
int loader_quiet_load(int (*load)(void *obj), void *obj, char *verdict,
                      size_t len);

#endif
