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

static void cfg_defaults(void) {
  free(cfg.netns);
  cfg.threshold = TCP_WINDOW_DEFAULT_THRESHOLD;
  cfg.stalled_after = 60;
  cfg.clamps = cfg.tcp_memory = cfg.stalled = true;
  cfg.stalled_notify = true;
  /* Off by default: its sk_storage work takes the tracepoint flavour from
   * ~1.3x to ~2.2x an empty program (docs/tcp_window.md). */
  cfg.transitions = false;
  cfg.netns = NULL;
}

/* ---------------------------------------------------------------- config */

static int tcp_window_config(const oconfig_item_t *ci) {
  int errors = 0;
  bool seen_thr = false, seen_sa = false, seen_cl = false, seen_tm = false,
       seen_st = false, seen_ns = false, seen_tr = false, seen_sn = false;
  cfg_defaults();
  for (int i = 0; i < ci->children_num; i++) {
    const oconfig_item_t *c = &ci->children[i];
    int st;
    if (strcasecmp(c->key, "Threshold") == 0)
      /* rcv_ssthresh is a u32 */
      st = cfg_once(c, &seen_thr) ||
           cfg_int_range(c, 1, UINT32_MAX, &cfg.threshold);
    else if (strcasecmp(c->key, "StalledAfter") == 0)
      /* tcpi_last_data_recv is u32 milliseconds */
      st = cfg_once(c, &seen_sa) ||
           cfg_seconds(c, 0.001, UINT32_MAX / 1000, &cfg.stalled_after);
    else if (strcasecmp(c->key, "Clamps") == 0)
      st = cfg_once(c, &seen_cl) || cfg_bool(c, &cfg.clamps);
    else if (strcasecmp(c->key, "ClampTransitions") == 0)
      st = cfg_once(c, &seen_tr) || cfg_bool(c, &cfg.transitions);
    else if (strcasecmp(c->key, "TcpMemory") == 0)
      st = cfg_once(c, &seen_tm) || cfg_bool(c, &cfg.tcp_memory);
    else if (strcasecmp(c->key, "StalledReceivers") == 0)
      st = cfg_once(c, &seen_st) || cfg_bool(c, &cfg.stalled);
    else if (strcasecmp(c->key, "StalledNotifications") == 0)
      st = cfg_once(c, &seen_sn) || cfg_bool(c, &cfg.stalled_notify);
    else if (strcasecmp(c->key, "NetworkNamespace") == 0)
      st = cfg_once(c, &seen_ns) || cfg_string(c, &cfg.netns);
    else
      st = cfg_unknown(c, BLOCK);
    if (st)
      errors++;
  }
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
  if (!errors && seen_sn && cfg.stalled_notify && !cfg.stalled) {
    E_ERROR("option \"StalledNotifications\" true in block <" BLOCK "> "
            "needs StalledReceivers true.");
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
  if (stalled_on && tcpw_marks_start(netns_ino) != 0)
    stalled_on = false;
  /* TCP memory and net.ipv4.tcp_mem are host-wide (tcp_mem exists only in
   * the initial namespace): read them from collectd's own. */
  tcp_memory_on = cfg.tcp_memory && tcpw_mem_init() == 0;
  clamps_on = cfg.clamps && tcpw_clamps_init(&cfg, netns_ino) == 0;
  if (!clamps_on && !tcp_memory_on && !stalled_on) {
    E_WARNING(FEATURE ": nothing of this feature can run here; it is "
              "disabled.");
    tcp_window_shutdown();
    return -ENOTSUP;
  }
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
    .init = tcp_window_init,
    .read = tcp_window_read,
    .shutdown = tcp_window_shutdown,
    .bpf_object = tcp_window_bpf_object,
};
