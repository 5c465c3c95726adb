// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window: TCP receive-window clamps (BPF), TCP memory against
 * net.ipv4.tcp_mem, and stalled receivers (sock_diag). The three parts start
 * and fail independently; docs/tcp_window.md is the metric reference. This
 * file holds the block's settings and starts, reads and stops the parts
 * (internal.h names them). */
#include "tcp_window/internal.h"

#include "common/netns.h"
#include "tcp_window/tcp_window.h"

#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

#define BLOCK "WindowClamp"

static struct tcpw_cfg cfg;

enum {
  K_THRESHOLD, K_STALLED_AFTER, K_CLAMPS, K_TRANSITIONS, K_TCP_MEMORY,
  K_STALLED, K_STALLED_NOTIFY, K_STALLED_LIMIT, K_NETNS, NKEYS
};
static const struct cfg_key keys[NKEYS] = {
    /* rcv_ssthresh is a u32 */
    [K_THRESHOLD] = {"Threshold", CK_INT, 1, UINT32_MAX,
                     TCP_WINDOW_DEFAULT_THRESHOLD,
                     .doc = "bytes: a receive window below it is clamped low"},
    /* tcpi_last_data_recv is u32 milliseconds */
    [K_STALLED_AFTER] = {"StalledAfter", CK_SECONDS, 0.001, UINT32_MAX / 1000,
                         60,
                         .doc = "seconds of unread data without a read after "
                                "which a receiver is stalled"},
    [K_CLAMPS] = {"Clamps", CK_BOOL, .def = 1,
                  .doc = "count receive-window clamps (BPF)"},
    /* Off by default: its sk_storage work takes the tracepoint flavour from
     * ~1.3x to ~2.2x an empty program (docs/tcp_window.md). */
    [K_TRANSITIONS] = {"ClampTransitions", CK_BOOL, .def = 0,
                       .doc = "count sockets entering the clamped state"},
    [K_TCP_MEMORY] = {"TcpMemory", CK_BOOL, .def = 1,
                      .doc = "TCP memory against net.ipv4.tcp_mem"},
    [K_STALLED] = {"StalledReceivers", CK_BOOL, .def = 1,
                   .doc = "count receivers that stopped reading"},
    [K_STALLED_NOTIFY] = {"StalledNotifications", CK_BOOL, .def = 1,
                          .doc = "a notification when a receiver stalls and "
                                 "when it ends"},
    /* As OutlierLimit and DropLimit: a tenant stalling thousands of
     * sockets at once must not turn into thousands of alerts a read. */
    [K_STALLED_LIMIT] = {"StalledLimit", CK_INT, 1, 10000, 10,
                         .doc = "stalled-receiver notifications a second, at "
                                "most"},
    [K_NETNS] = {"NetworkNamespace", CK_STRING, .show = "host",
                 .doc = "host, all (with StalledReceivers false), or a "
                        "namespace's name or path"},
};
static const struct cfg_block block = {BLOCK, keys, NKEYS};

static void cfg_defaults(void) {
  free(cfg.netns);
  cfg.threshold = (long long)cfg_key_default(&block, K_THRESHOLD);
  cfg.stalled_after = cfg_key_default(&block, K_STALLED_AFTER);
  cfg.clamps = cfg_key_default(&block, K_CLAMPS) != 0;
  cfg.tcp_memory = cfg_key_default(&block, K_TCP_MEMORY) != 0;
  cfg.stalled = cfg_key_default(&block, K_STALLED) != 0;
  cfg.stalled_notify = cfg_key_default(&block, K_STALLED_NOTIFY) != 0;
  cfg.stalled_limit = (long long)cfg_key_default(&block, K_STALLED_LIMIT);
  cfg.transitions = cfg_key_default(&block, K_TRANSITIONS) != 0;
  cfg.netns = NULL;
}

/* ---------------------------------------------------------------- config */

static int config_key(void *ctx, const oconfig_item_t *c, int k) {
  (void)ctx;
  switch (k) {
  case K_THRESHOLD:
    return cfg_key_int(&keys[k], c, &cfg.threshold);
  case K_STALLED_AFTER:
    return cfg_key_seconds(&keys[k], c, &cfg.stalled_after);
  case K_CLAMPS:
    return cfg_key_bool(&keys[k], c, &cfg.clamps);
  case K_TRANSITIONS:
    return cfg_key_bool(&keys[k], c, &cfg.transitions);
  case K_TCP_MEMORY:
    return cfg_key_bool(&keys[k], c, &cfg.tcp_memory);
  case K_STALLED:
    return cfg_key_bool(&keys[k], c, &cfg.stalled);
  case K_STALLED_NOTIFY:
    return cfg_key_bool(&keys[k], c, &cfg.stalled_notify);
  case K_STALLED_LIMIT:
    return cfg_key_int(&keys[k], c, &cfg.stalled_limit);
  case K_NETNS:
    return cfg_string(c, &cfg.netns);
  }
  return -1;
}

static int tcp_window_config(const oconfig_item_t *ci) {
  bool seen[NKEYS] = {0};
  cfg_defaults();
  int errors = cfg_block_walk(&block, ci, seen, config_key, NULL);
  if (!errors && cfg.stalled && cfg.netns && !strcasecmp(cfg.netns, "all")) {
    E_ERROR("option \"NetworkNamespace\" \"all\" in block <" BLOCK "> "
            "needs \"StalledReceivers false\": sock_diag reads one "
            "namespace at a time; or name one namespace.");
    errors++;
  }
  if (!errors && !cfg.clamps && !cfg.tcp_memory && !cfg.stalled) {
    E_ERROR("block <" BLOCK "> has Clamps, TcpMemory and StalledReceivers "
            "all false: nothing to read.");
    errors++;
  }
  if (!errors && seen[K_STALLED_NOTIFY] && cfg.stalled_notify && !cfg.stalled) {
    E_ERROR("option \"StalledNotifications\" true in block <" BLOCK "> "
            "needs StalledReceivers true.");
    errors++;
  }
  if (!errors && seen[K_STALLED_LIMIT] &&
      !(cfg.stalled && cfg.stalled_notify)) {
    E_ERROR("option \"StalledLimit\" in block <" BLOCK "> needs "
            "StalledReceivers and StalledNotifications true.");
    errors++;
  }
  return errors ? -1 : 0;
}

/* ----------------------------------------------------------------- state */

static uint32_t netns_ino; /* BPF filter; 0: all */
static bool clamps_on;
static bool tcp_memory_on;
static bool stalled_on;

/* The identity of every tcp_window value (plugin "tcp_window", no
 * plugin_instance), made once. */
static value_list_t *tw_vl(void) {
  static value_list_t vl;
  static bool ready;
  if (!ready) {
    vl_prepare(&vl, FEATURE, "");
    ready = true;
  }
  return &vl;
}

/* ---------------------------------------------------------------- feature */

static void tcp_window_shutdown(void);

/* No part of the feature runs (at init, or once the receive path's start
 * took the marks away): one WARNING, and the feature stops. */
static bool nothing_runs(void) {
  if (clamps_on || tcp_memory_on || stalled_on)
    return false;
  E_WARNING(FEATURE ": nothing of this feature can run here; it is "
            "disabled.");
  tcp_window_shutdown();
  return true;
}

static int tcp_window_init(void) {
  struct netns ns;
  int back, err = netns_resolve(cfg.netns, FEATURE, &ns);
  if (err)
    return err;
  /* One meaning with netstacklat: without the option, collectd's own
   * namespace; "all": clamps of every namespace (0 = no filter). */
  netns_ino = ns.inum;
  /* A netlink socket stays bound to the namespace it was opened in. */
  if ((err = netns_enter(&ns, FEATURE, &back)) != 0) {
    E_WARNING(FEATURE ": the feature is disabled.");
    return err;
  }
  stalled_on = cfg.stalled && tcpw_stalled_init(&cfg, &ns) == 0;
  netns_leave(back, FEATURE);
  /* TCP memory and net.ipv4.tcp_mem are host-wide (tcp_mem exists only in
   * the initial namespace): read them from collectd's own. */
  tcp_memory_on = cfg.tcp_memory && tcpw_mem_init() == 0;
  clamps_on = cfg.clamps && tcpw_clamps_init(&cfg, netns_ino) == 0;
  if (nothing_runs())
    return -ENOTSUP;
  tcpw_rx_join(stalled_on && tcpw_marks_wanted(),
               clamps_on && tcpw_clamps_may_ride());
  return 0;
}

/* The receive path is loaded: the marked scans and the clamped wakeups on
 * its programs where they run. */
static int tcp_window_start(void) {
  if (stalled_on && tcpw_marks_start(netns_ino) != 0)
    stalled_on = false;
  if (clamps_on)
    tcpw_clamps_start();
  if (nothing_runs())
    return -ENOTSUP;
  return 0;
}

static int tcp_window_read(void) {
  if (clamps_on)
    tcpw_clamps_read(tw_vl());
  if (tcp_memory_on)
    tcpw_mem_read(tw_vl());
  if (stalled_on)
    tcpw_stalled_read(tw_vl());
  return 0;
}

static void tcp_window_shutdown(void) {
  tcpw_marks_free();
  tcpw_stalled_free();
  tcpw_clamps_free();
  tcpw_rx_leave();
  tcpw_mem_free();
  clamps_on = tcp_memory_on = stalled_on = false;
  cfg_defaults();
}

static struct bpf_object *tcp_window_bpf_object(void) {
  return tcpw_clamps_object();
}

const struct ebpf_feature feature_tcp_window = {
    .block = BLOCK,
    .name = FEATURE,
    .config = tcp_window_config,
    .keys = &block,
    .init = tcp_window_init,
    .start = tcp_window_start,
    .read = tcp_window_read,
    .shutdown = tcp_window_shutdown,
    .bpf_object = tcp_window_bpf_object,
    .rx = &tcpw_rx,
};
