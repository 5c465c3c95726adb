// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window: TCP receive-window clamps (BPF), TCP memory against
 * net.ipv4.tcp_mem, and stalled receivers (sock_diag). The three parts start
 * and fail independently; docs/tcp_window.md is the metric reference. */
#define _GNU_SOURCE 1
#include "ebpf.h"
#include "loader.h"
#include "tcp_window.h"
#include "tcp_window.skel.h"
#include "tcp_window_parse.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <math.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define FEATURE "tcp_window"
#define BLOCK "WindowClamp"

static struct {
  long long threshold;
  double stalled_after;
  bool clamps, transitions, tcp_memory, stalled;
  char *netns; /* path of a network namespace file, or NULL */
} cfg;

static void cfg_defaults(void) {
  free(cfg.netns);
  cfg.threshold = TCP_WINDOW_DEFAULT_THRESHOLD;
  cfg.stalled_after = 60;
  cfg.clamps = cfg.tcp_memory = cfg.stalled = true;
  /* Off by default: its sk_storage work takes the tracepoint flavour from
   * ~1.3x to ~2.2x an empty program (docs/tcp_window.md). */
  cfg.transitions = false;
  cfg.netns = NULL;
}

/* ---------------------------------------------------------------- config */

static int tcp_window_config(const oconfig_item_t *ci) {
  int errors = 0;
  bool seen_thr = false, seen_sa = false, seen_cl = false, seen_tm = false,
       seen_st = false, seen_ns = false, seen_tr = false;
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
    else if (strcasecmp(c->key, "NetworkNamespace") == 0)
      st = cfg_once(c, &seen_ns) || cfg_string(c, &cfg.netns);
    else
      st = cfg_unknown(c, BLOCK);
    if (st)
      errors++;
  }
  if (!errors && !cfg.clamps && !cfg.tcp_memory && !cfg.stalled) {
    E_ERROR("block <" BLOCK "> has Clamps, TcpMemory and StalledReceivers "
            "all false: nothing to read.");
    errors++;
  }
  return errors ? -1 : 0;
}

/* ----------------------------------------------------------------- state */

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
static bool clamps_on;

static int mem_fd_sockstat = -1, mem_fd_tcp_mem = -1;
static bool tcp_memory_on;
static long page_size;

static int diag_fd = -1;
static uint32_t diag_seq;
static bool stalled_on;
static unsigned char *diag_buf;
#define DIAG_BUF_SIZE (64 * 1024)

/* ---------------------------------------------------------------- clamps */

static struct bpf_object *clamps_open(void *ctx, void **skel_out) {
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  skel = tcp_window_bpf__open_opts(&opts);
  if (!skel)
    return NULL;
  *skel_out = skel;
  skel->rodata->targ_threshold = (__u32)cfg.threshold;
  skel->rodata->targ_netns = netns_ino;
  skel->rodata->targ_transitions = cfg.transitions;
  /* The empty twin exists only to measure the tracepoint's floor. */
  bpf_program__set_autoload(skel->progs.tcp_window_empty, false);
  return skel->obj;
}

static int clamps_load(void *ctx) { return tcp_window_bpf__load(skel); }

static void clamps_destroy(void *ctx) {
  tcp_window_bpf__destroy(skel);
  skel = NULL;
}

static int clamps_init(void) {
  struct loader_ops ops = {.open = clamps_open,
                           .load = clamps_load,
                           .destroy = clamps_destroy};
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

static void clamps_read(void) {
  uint64_t v;
  if (percpu_sum(skel->maps.tcp_window_clamps_total, &v) == 0)
    submit_derive(FEATURE, "", "operations", "clamps", (int64_t)v);
  /* The kprobe flavour has no sk_storage, so no transitions. */
  if (cfg.transitions && hooks[0].flavour != FLAVOUR_KPROBE &&
      percpu_sum(skel->maps.tcp_window_clamp_transitions_total, &v) == 0)
    submit_derive(FEATURE, "", "operations", "clamp_transitions", (int64_t)v);
}

/* ------------------------------------------------------------ tcp memory */

static int pread_all(int fd, char *buf, size_t len, size_t *got) {
  ssize_t n = pread(fd, buf, len, 0);
  if (n < 0)
    return -errno;
  *got = (size_t)n;
  return 0;
}

static void tcp_memory_read(void) {
  char buf[1024];
  size_t n = 0;
  uint64_t used, lim[3];
  int err = pread_all(mem_fd_sockstat, buf, sizeof(buf), &n);
  if (!err)
    err = sockstat_tcp_mem(buf, n, &used);
  if (err) {
    E_WARNING(FEATURE ": /proc/net/sockstat: %s", ERRSTR(err));
    return;
  }
  /* Re-read every interval: the sysctl can change at any time. */
  err = pread_all(mem_fd_tcp_mem, buf, sizeof(buf), &n);
  if (!err)
    err = tcp_mem_parse(buf, n, lim);
  if (err) {
    E_WARNING(FEATURE ": /proc/sys/net/ipv4/tcp_mem: %s", ERRSTR(err));
    return;
  }
  double ps = (double)page_size;
  submit_gauge(FEATURE, "", "memory", "tcp_in_use", (double)used * ps);
  submit_gauge(FEATURE, "", "memory", "tcp_mem_low", (double)lim[0] * ps);
  submit_gauge(FEATURE, "", "memory", "tcp_mem_pressure", (double)lim[1] * ps);
  submit_gauge(FEATURE, "", "memory", "tcp_mem_max", (double)lim[2] * ps);
  /* Above 100 means the host is past the threshold: stock `percent` stops
   * at 100.1, so these use `gauge` (U:U) and are never clipped. */
  submit_gauge(FEATURE, "", "gauge", "tcp_mem_pressure_percent",
               lim[1] ? 100.0 * (double)used / (double)lim[1] : NAN);
  submit_gauge(FEATURE, "", "gauge", "tcp_mem_max_percent",
               lim[2] ? 100.0 * (double)used / (double)lim[2] : NAN);
}

static int tcp_memory_init(void) {
  page_size = sysconf(_SC_PAGESIZE);
  mem_fd_sockstat = open("/proc/net/sockstat", O_RDONLY | O_CLOEXEC);
  int err = mem_fd_sockstat < 0 ? -errno : 0;
  if (!err) {
    mem_fd_tcp_mem = open("/proc/sys/net/ipv4/tcp_mem", O_RDONLY | O_CLOEXEC);
    err = mem_fd_tcp_mem < 0 ? -errno : 0;
  }
  if (err) {
    E_WARNING(FEATURE ": TCP memory is not reported: %s", ERRSTR(err));
    return err;
  }
  return 0;
}

/* ------------------------------------------------------ stalled receivers */

/* States in which unread data can sit in the receive queue; LISTEN (whose
 * rqueue is the accept backlog), TIME_WAIT and request sockets are left
 * out by the kernel. */
#define DIAG_STATES                                                            \
  ((1u << 1) /* ESTABLISHED */ | (1u << 4) /* FIN_WAIT1 */ |                   \
   (1u << 5) /* FIN_WAIT2 */ | (1u << 8) /* CLOSE_WAIT */ |                    \
   (1u << 9) /* LAST_ACK */ | (1u << 11) /* CLOSING */)

/* Send one dump request and walk the replies. */
static int diag_request(const void *req, size_t len, uint32_t stalled_ms,
                        struct stall_acc *acc) {
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(diag_fd, req, len, 0, (struct sockaddr *)&kernel,
             sizeof(kernel)) < 0)
    return -errno;
  for (;;) {
    ssize_t n = recv(diag_fd, diag_buf, DIAG_BUF_SIZE, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      return -EPIPE;
    int st = sockdiag_walk(diag_buf, (size_t)n, stalled_ms, acc);
    if (st < 0)
      return st;
    if (st == 1)
      return 0;
  }
}

static int diag_dump(int family, uint32_t stalled_ms, struct stall_acc *acc) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } req = {
      .nlh = {.nlmsg_len = sizeof(req),
              .nlmsg_type = SOCK_DIAG_BY_FAMILY,
              .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
              .nlmsg_seq = ++diag_seq},
      .r = {.sdiag_family = (uint8_t)family,
            .sdiag_protocol = IPPROTO_TCP,
            .idiag_ext = 1u << (INET_DIAG_INFO - 1),
            .idiag_states = DIAG_STATES},
  };
  return diag_request(&req, sizeof(req), stalled_ms, acc);
}

/* The kernel's cost of a dump is the walk of the whole TCP established
 * hash (sized by RAM, not by the sockets in it), once per request. IPv4
 * and IPv6 sockets share that hash, and the older TCPDIAG_GETSOCK request
 * dumps both families in one walk: half the cost of two SOCK_DIAG_BY_FAMILY
 * dumps (0.89 -> 0.51 ms per read here with a handful of sockets). */
static int diag_dump_both(uint32_t stalled_ms, struct stall_acc *acc) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req r;
  } req = {
      .nlh = {.nlmsg_len = sizeof(req),
              .nlmsg_type = TCPDIAG_GETSOCK,
              .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
              .nlmsg_seq = ++diag_seq},
      .r = {.idiag_family = AF_UNSPEC,
            .idiag_ext = 1u << (INET_DIAG_INFO - 1),
            .idiag_states = DIAG_STATES},
  };
  return diag_request(&req, sizeof(req), stalled_ms, acc);
}

/* Drain whatever a failed dump left in the socket. */
static void diag_drain(void) {
  while (recv(diag_fd, diag_buf, DIAG_BUF_SIZE, MSG_DONTWAIT) > 0)
    ;
}

static bool diag_one_walk = true; /* until the kernel refuses it */

static void stalled_read(void) {
  struct stall_acc acc = {0};
  uint32_t ms = (uint32_t)(cfg.stalled_after * 1000.0);
  if (diag_one_walk) {
    int err = diag_dump_both(ms, &acc);
    if (err == 0)
      goto submit;
    diag_drain();
    diag_one_walk = false;
    acc = (struct stall_acc){0};
    E_INFO(FEATURE ": the one-walk sock_diag dump failed (%s); using one "
           "dump per address family.",
           ERRSTR(err));
  }
  static const int fams[] = {AF_INET, AF_INET6};
  for (size_t i = 0; i < 2; i++) {
    int err = diag_dump(fams[i], ms, &acc);
    if (err == -ENOENT && fams[i] == AF_INET6)
      continue; /* kernel without IPv6 */
    if (err) {
      E_WARNING(FEATURE ": sock_diag dump (%s) failed: %s",
                fams[i] == AF_INET ? "IPv4" : "IPv6", ERRSTR(err));
      diag_drain();
      return; /* a partial count would read as a real drop */
    }
  }
submit:
  submit_gauge(FEATURE, "", "count", "stalled_receivers", (double)acc.stalled);
  submit_gauge(FEATURE, "", "bytes", "stalled_receivers",
               (double)acc.stalled_bytes);
}

static int stalled_init(void) {
  diag_buf = malloc(DIAG_BUF_SIZE);
  if (!diag_buf)
    return -ENOMEM;
  diag_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (diag_fd < 0) {
    int err = -errno;
    E_WARNING(FEATURE ": stalled receivers are not reported: cannot open a "
              "NETLINK_SOCK_DIAG socket: %s",
              ERRSTR(err));
    free(diag_buf);
    diag_buf = NULL;
    return err;
  }
  return 0;
}

/* -------------------------------------------------------------- netns */

/* Open the files and sockets that belong to a network namespace while this
 * thread is in it: a netlink socket and /proc/net files stay bound to the
 * namespace they were opened in. */
static int enter_netns(int *back) {
  *back = -1;
  if (!cfg.netns)
    return 0;
  /* A name under /run/netns (as `ip netns` makes them) or a path. */
  char path[512];
  snprintf(path, sizeof(path), "%s%s", cfg.netns[0] == '/' ? "" : "/run/netns/",
           cfg.netns);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int err = errno;
    E_ERROR(FEATURE ": option \"NetworkNamespace\" \"%s\": %s: %s", cfg.netns,
            path, ERRSTR(err));
    if (fd >= 0)
      close(fd);
    return -EINVAL; /* names nothing real: a configuration error */
  }
  *back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (*back < 0 || setns(fd, CLONE_NEWNET) != 0) {
    int err = -errno;
    E_WARNING(FEATURE ": NetworkNamespace \"%s\": cannot enter it: %s; the "
              "feature is disabled.",
              cfg.netns, ERRSTR(err));
    close(fd);
    if (*back >= 0)
      close(*back);
    *back = -1;
    return err;
  }
  close(fd);
  netns_ino = (uint32_t)st.st_ino;
  return 0;
}

static void leave_netns(int back) {
  if (back < 0)
    return;
  if (setns(back, CLONE_NEWNET) != 0)
    E_ERROR(FEATURE ": cannot return to collectd's network namespace: %s",
            ERRSTR(errno));
  close(back);
}

/* ---------------------------------------------------------------- feature */

static void tcp_window_shutdown(void);

static int tcp_window_init(void) {
  int back;
  netns_ino = 0;
  int err = enter_netns(&back);
  if (err)
    return err;
  stalled_on = cfg.stalled && stalled_init() == 0;
  leave_netns(back);
  /* TCP memory and net.ipv4.tcp_mem are host-wide (tcp_mem exists only in
   * the initial namespace): read them from collectd's own. */
  tcp_memory_on = cfg.tcp_memory && tcp_memory_init() == 0;
  clamps_on = cfg.clamps && clamps_init() == 0;
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
    clamps_read();
  if (tcp_memory_on)
    tcp_memory_read();
  if (stalled_on)
    stalled_read();
  return 0;
}

static void tcp_window_shutdown(void) {
  diag_one_walk = true;
  loader_detach(hooks, 1);
  if (skel)
    clamps_destroy(NULL);
  if (mem_fd_sockstat >= 0)
    close(mem_fd_sockstat);
  if (mem_fd_tcp_mem >= 0)
    close(mem_fd_tcp_mem);
  mem_fd_sockstat = mem_fd_tcp_mem = -1;
  if (diag_fd >= 0)
    close(diag_fd);
  diag_fd = -1;
  free(diag_buf);
  diag_buf = NULL;
  clamps_on = tcp_memory_on = stalled_on = false;
  cfg_defaults();
}

static struct bpf_object *tcp_window_bpf_object(void) {
  return skel ? skel->obj : NULL;
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
