/* netstacklat's outlier records as notifications: each record one WARNING
 * of plugin netstacklat, plugin_instance the hook, type_instance outlier,
 * with the fields the record has (collectd-ebpf(5), "Latency outliers"),
 * in order, the message and the typed meta data alike; a record too short,
 * or of a hook out of range, sends nothing. */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/netstacklat/outliers.c"
#include "mock_collectd.h"
#include "testlib.h"

#include <arpa/inet.h>

#include <sys/stat.h>

static const char *const names[NSL_NHOOKS] = {
    "ip_start",        "tcp_start",           "udp_start",
    "tcp_socket_enqueued", "udp_socket_enqueued", "tcp_socket_read",
    "udp_socket_read"};
static struct cgroup_tree tree;

static struct nsl_outlier_ctx ctx(void) {
  mock_reset();
  return (struct nsl_outlier_ctx){
      .plugin = "netstacklat", .hook_names = names, .cgroups = &tree,
      .self_netns = 4026531840u};
}

/* A TCP read with its reader, in collectd's namespace on lo. */
DEF_TEST(tcp_read_names_everything) {
  struct nsl_outlier_ctx c = ctx();
  struct nsl_outlier o = {.time_ns = 1795934465123000000ull,
                          .latency_ns = 12500000,
                          .hook = NSL_TCP_SOCKET_READ,
                          .netns = 4026531840u, .ifindex = 1, .pid = 4242,
                          .qlen = 3, .family = AF_INET, .proto = 6,
                          .has_ports = 1, .lport = 8080, .rport = 54321,
                          .comm = "stall rcv"};
  inet_pton(AF_INET, "10.1.2.3", o.laddr);
  inet_pton(AF_INET, "10.9.8.7", o.raddr);
  CHECK_EQ_INT(0, nsl_outlier_notify(&c, &o, sizeof(o)));
  CHECK_EQ_INT(1, mock_nnotif);
  const struct mock_notif *m = &mock_notifs[0];
  CHECK_EQ_STR("hook=tcp_socket_read latency_s=0.0125 proto=tcp "
               "local=10.1.2.3:8080 remote=10.9.8.7:54321 pid=4242 "
               "comm=\"stall rcv\" queue_len=3 interface=lo ifindex=1 "
               "netns=4026531840",
               m->n.message);
  CHECK_EQ_INT(NOTIF_WARNING, m->n.severity);
  CHECK_EQ_STR("netstacklat", m->n.plugin);
  CHECK_EQ_STR("tcp_socket_read", m->n.plugin_instance);
  CHECK_EQ_STR("outlier", m->n.type_instance);
  CHECK_EQ_U64(1795934465123000000ull, CDTIME_T_TO_NS(m->n.time) / 1000000 * 1000000);
  CHECK_EQ_INT(4242, mock_nmeta_find(m, "pid")->i);
  CHECK(mock_nmeta_find(m, "latency_s")->d == 0.0125);
  CHECK_EQ_U64(1, c.notified);
  return 0;
}

/* An unconnected UDP socket (no remote), IPv6, another namespace (no
 * interface name: names are collectd's namespace's), no reader. */
DEF_TEST(udp_enqueued_unconnected_ipv6) {
  struct nsl_outlier_ctx c = ctx();
  struct nsl_outlier o = {.latency_ns = 2000000000ull,
                          .hook = NSL_UDP_SOCKET_ENQUEUED, .netns = 7,
                          .ifindex = 1, .qlen = 0, .family = AF_INET6,
                          .proto = 17, .has_ports = 1, .lport = 53};
  inet_pton(AF_INET6, "2001:db8::1", o.laddr);
  nsl_outlier_notify(&c, &o, sizeof(o));
  CHECK_EQ_INT(1, mock_nnotif);
  CHECK_EQ_STR("hook=udp_socket_enqueued latency_s=2 proto=udp "
               "local=[2001:db8::1]:53 queue_len=0 ifindex=1 netns=7",
               mock_notifs[0].n.message);
  CHECK(mock_nmeta_find(&mock_notifs[0], "remote") == NULL);
  return 0;
}

/* A packet hook: no socket, so no queue length; nothing known of the
 * packet's addresses. Then what is refused. */
DEF_TEST(packet_hook_and_refused_records) {
  struct nsl_outlier_ctx c = ctx();
  struct nsl_outlier o = {.latency_ns = 1500, .hook = NSL_IP_START};
  nsl_outlier_notify(&c, &o, sizeof(o));
  CHECK_EQ_INT(1, mock_nnotif);
  CHECK_EQ_STR("hook=ip_start latency_s=1.5e-06", mock_notifs[0].n.message);
  CHECK_EQ_INT(0, nsl_outlier_notify(&c, &o, sizeof(o) - 1));
  o.hook = NSL_NHOOKS;
  CHECK_EQ_INT(0, nsl_outlier_notify(&c, &o, sizeof(o)));
  CHECK_EQ_INT(1, mock_nnotif);
  CHECK_EQ_U64(1, c.notified);
  return 0;
}

/* The socket's cgroup by id, named by the rule: this process's own. */
DEF_TEST(cgroup_named_by_the_rule) {
  const char *root = cgroup2_root();
  char rel[4096] = "", buf[4096];
  FILE *f = fopen("/proc/self/cgroup", "r");
  while (f && fgets(buf, sizeof(buf), f))
    if (!strncmp(buf, "0::/", 4)) {
      buf[strcspn(buf, "\n")] = 0;
      snprintf(rel, sizeof(rel), "%s", buf + 4);
    }
  if (f)
    fclose(f);
  char path[8192];
  struct stat sb;
  snprintf(path, sizeof(path), "%s/%s", root ? root : "", rel);
  if (!root || stat(path, &sb) != 0) {
    printf("SKIP: no cgroup2 here\n");
    return 0;
  }
  struct nsl_outlier_ctx c = ctx();
  struct nsl_outlier o = {.latency_ns = 1000000, .hook = NSL_UDP_SOCKET_READ,
                          .cgroup = sb.st_ino};
  nsl_outlier_notify(&c, &o, sizeof(o));
  char want[EBPF_NAME_LEN], msg[256];
  cgroup_name(rel, want);
  snprintf(msg, sizeof(msg), "hook=udp_socket_read latency_s=0.001 "
           "queue_len=0 cgroup=%s", want);
  CHECK_EQ_STR(msg, mock_notifs[0].n.message);
  CHECK(c.cg_refreshed);
  cgroup_tree_free(&tree);
  return 0;
}

int main(void) {
  tl_prog = "nsl_outliers";
  RUN_TEST(tcp_read_names_everything);
  RUN_TEST(udp_enqueued_unconnected_ipv6);
  RUN_TEST(packet_hook_and_refused_records);
  RUN_TEST(cgroup_named_by_the_rule);
  END_TEST;
}
