/* Config validation, every key good and bad: a bad one is an ERROR that
 * names the key, and makes init fail (so `collectd -T` exits non-zero). */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/ebpf.c"
#include "mock_collectd.h"
#include "testlib.h"

/* Feed `<Plugin ebpf>` with one child: a global option (block NULL) or an
 * option inside a feature block. Returns the number of config errors. */
static int feed(const char *block, oconfig_item_t *opt) {
  oconfig_item_t *root = mock_ci("Plugin");
  mock_str(root, "ebpf");
  if (block) {
    oconfig_item_t *b = mock_ci(block);
    mock_child(b, opt);
    mock_child(root, b);
  } else {
    mock_child(root, opt);
  }
  mock_reset();
  ebpf_config(root);
  int errors = config_errors;
  ebpf_shutdown(); /* resets every feature's settings */
  mock_ci_free(root);
  return errors;
}

struct kcase {
  const char *block, *key;
  int kind; /* 's' strings, 'n' numbers, 'b' boolean */
  const char *v[3];
  double n[3];
  int nv;
  bool ok;
};

static oconfig_item_t *make(const struct kcase *c) {
  oconfig_item_t *o = mock_ci(c->key);
  for (int i = 0; i < c->nv; i++) {
    if (c->kind == 's')
      mock_str(o, c->v[i]);
    else if (c->kind == 'n')
      mock_num(o, c->n[i]);
    else
      mock_bool(o, (int)c->n[i]);
  }
  return o;
}

#define S1(b, k, a, ok) {b, k, 's', {a}, {0}, 1, ok}
#define S2(b, k, a, c, ok) {b, k, 's', {a, c}, {0}, 2, ok}
#define N1(b, k, a, ok) {b, k, 'n', {0}, {a}, 1, ok}
#define N2(b, k, a, c, ok) {b, k, 'n', {0}, {a, c}, 2, ok}
#define B1(b, k, a, ok) {b, k, 'b', {0}, {a}, 1, ok}
#define NONE(b, k) {b, k, 's', {0}, {0}, 0, false}

static const struct kcase cases[] = {
    /* global */
    S1(NULL, "AttachMode", "auto", true),
    S1(NULL, "AttachMode", "fentry", true),
    S1(NULL, "AttachMode", "tracepoint", true),
    S1(NULL, "AttachMode", "kprobe", true),
    S1(NULL, "AttachMode", "uprobe", false),
    N1(NULL, "AttachMode", 1, false),
    NONE(NULL, "AttachMode"),
    B1(NULL, "BPFStats", 1, true),
    S1(NULL, "BPFStats", "yes", true),
    S1(NULL, "BPFStats", "maybe", false),
    N1(NULL, "BPFStats", 1, false),
    S1(NULL, "BTFPath", "/sys/kernel/btf/vmlinux", true),
    S1(NULL, "BTFPath", "", false),
    B1(NULL, "BPFStatz", 1, false),
    /* Pressure */
    B1("Pressure", "Host", 1, true),
    N1("Pressure", "Host", 3, false),
    S2("Pressure", "Resources", "cpu", "irq", true),
    S1("Pressure", "Resources", "disk", false),
    N1("Pressure", "Resources", 1, false),
    NONE("Pressure", "Resources"),
    S1("Pressure", "Cgroup", "system.slice/*", true),
    S1("Pressure", "Cgroup", "../etc", false),
    S1("Pressure", "Cgroup", "/", false),
    S1("Pressure", "Cgroup", "", false),
    N1("Pressure", "Cgroup", 5, false),
    B1("Pressure", "Hots", 1, false),
    /* Netstacklat */
    S2("Netstacklat", "Hooks", "ip_start", "tcp_socket_read", true),
    S1("Netstacklat", "Hooks", "tcp_socket_raed", false),
    NONE("Netstacklat", "Hooks"),
    N2("Netstacklat", "Percentiles", 50, 99.9, true),
    N1("Netstacklat", "Percentiles", 0, false),
    N1("Netstacklat", "Percentiles", 101, false),
    S1("Netstacklat", "Percentiles", "p50", false),
    B1("Netstacklat", "Buckets", 0, true),
    S1("Netstacklat", "Buckets", "sometimes", false),
    S1("Netstacklat", "Cgroup", "system.slice", true),
    S1("Netstacklat", "Cgroup", "a/../b", false),
    S1("Netstacklat", "Interface", "eth0", true),
    S1("Netstacklat", "Interface", "a-very-long-interface-name", false),
    S1("Netstacklat", "Interface", "a/b", false),
    S1("Netstacklat", "NetworkNamespace", "all", true),
    N1("Netstacklat", "NetworkNamespace", 1, false),
    S1("Netstacklat", "GroupBy", "cgroup", true),
    S1("Netstacklat", "GroupBy", "interface", true),
    S1("Netstacklat", "GroupBy", "pid", false),
    N1("Netstacklat", "MinQueueLength", 4, true),
    N1("Netstacklat", "MinQueueLength", -1, false),
    N1("Netstacklat", "MinQueueLength", 1.5, false),
    B1("Netstacklat", "IncludeHOLBlocked", 0, true),
    N1("Netstacklat", "IncludeHOLBlocked", 0, false),
    N1("Netstacklat", "MaxGroups", 64, true),
    N1("Netstacklat", "MaxGroups", 0, false),
    N1("Netstacklat", "MaxGroups", 70000, false),
    B1("Netstacklat", "EnableTimestamps", 0, true),
    S1("Netstacklat", "EnableTimestamps", "", false),
    B1("Netstacklat", "Bukets", 1, false),
    /* WindowClamp */
    N1("WindowClamp", "Threshold", 32768, true),
    N1("WindowClamp", "Threshold", 0, false),
    N1("WindowClamp", "Threshold", -5, false),
    S1("WindowClamp", "Threshold", "big", false),
    N1("WindowClamp", "StalledAfter", 2, true),
    N1("WindowClamp", "StalledAfter", 0, false),
    S1("WindowClamp", "StalledAfter", "1m", false),
    B1("WindowClamp", "Clamps", 0, true),
    B1("WindowClamp", "ClampTransitions", 1, true),
    B1("WindowClamp", "TcpMemory", 1, true),
    B1("WindowClamp", "StalledReceivers", 1, true),
    N1("WindowClamp", "StalledReceivers", 1, false),
    S1("WindowClamp", "NetworkNamespace", "x", true),
    B1("WindowClamp", "Thresold", 1, false),
};

DEF_TEST(every_key_good_and_bad) {
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const struct kcase *c = &cases[i];
    int errors = feed(c->block, make(c));
    if (c->ok && errors)
      FAILF("<%s> %s: good value refused: %s", c->block ? c->block : "ebpf",
            c->key, mock_nlog ? mock_log[0] : "");
    if (!c->ok) {
      if (!errors)
        FAILF("<%s> %s: bad value (case %zu) accepted",
              c->block ? c->block : "ebpf", c->key, i);
      if (mock_log_find(LOG_ERR, c->key) < 0 &&
          !(c->kind == 's' && c->nv && mock_log_find(LOG_ERR, c->v[0]) >= 0))
        FAILF("<%s> %s: the ERROR does not name the key: %s",
              c->block ? c->block : "ebpf", c->key,
              mock_nlog ? mock_log[0] : "(no log)");
    }
  }
  return 0;
}

DEF_TEST(repeated_key_refused) {
  oconfig_item_t *root = mock_ci("Plugin");
  mock_child(root, mock_str(mock_ci("AttachMode"), "auto"));
  mock_child(root, mock_str(mock_ci("AttachMode"), "kprobe"));
  mock_reset();
  ebpf_config(root);
  CHECK(config_errors == 1);
  CHECK(mock_log_find(LOG_ERR, "\"AttachMode\" given more than once") >= 0);
  ebpf_shutdown();
  mock_ci_free(root);
  return 0;
}

DEF_TEST(unknown_block_and_init_fails) {
  oconfig_item_t *root = mock_ci("Plugin");
  oconfig_item_t *b = mock_ci("WindowClam");
  mock_child(b, mock_bool(mock_ci("Enable"), 1));
  mock_child(root, b);
  mock_reset();
  ebpf_config(root);
  CHECK(config_errors == 1);
  CHECK(mock_log_find(LOG_ERR, "WindowClam") >= 0);
  CHECK(ebpf_init() != 0); /* init refuses: collectd -T exits non-zero */
  CHECK(mock_log_find(LOG_ERR, "the plugin is disabled") >= 0);
  ebpf_shutdown();
  mock_ci_free(root);
  return 0;
}

DEF_TEST(instance_names) {
  char b[64];
  CHECK(instance_from_path("system.slice/ssh.service", b, sizeof(b)) == 0);
  CHECK_EQ_STR("system.slice_ssh.service", b);
  CHECK(instance_from_path("/user.slice/user-1000.slice/", b, sizeof(b)) == 0);
  CHECK_EQ_STR("user.slice_user_1000.slice", b);
  CHECK(instance_from_path("Docker/ABC:x@y", b, sizeof(b)) == 0);
  CHECK_EQ_STR("docker_abc_x_y", b);
  CHECK(instance_from_path("0123456789", b, 5) == -ENAMETOOLONG);
  return 0;
}

int main(void) {
  tl_prog = "config";
  RUN_TEST(every_key_good_and_bad);
  RUN_TEST(repeated_key_refused);
  RUN_TEST(unknown_block_and_init_fails);
  RUN_TEST(instance_names);
  END_TEST;
}
