/* libFuzzer target: the whole config walk of <Plugin ebpf> on oconfig trees
 * built from the input bytes. Each byte pair picks a key (from the real
 * ones and some wrong ones), a value type and a value; 0xff opens and closes
 * blocks. The walk must never crash, leak or accept a tree it logged an
 * error for. */
#include "../../plugin/core/ebpf.c"
#include "mock_collectd.h"

static const char *const keys[] = {
    "AttachMode", "BPFStats",  "BTFPath",     "Pressure",  "Netstacklat",
    "Host",       "Resources", "Cgroup",      "Hooks",     "Percentiles",
    "Buckets",    "Interface", "NetworkNamespace", "GroupBy", "MinQueueLength",
    "IncludeHOLBlocked", "MaxGroups", "EnableTimestamps", "WindowClamp",
    "Threshold",  "StalledAfter", "Clamps", "ClampTransitions", "TcpMemory",
    "StalledReceivers", "StalledNotifications", "OutlierThreshold",
    "OutlierLimit", "Bogus", "",
};
static const char *const strs[] = {
    "auto", "fentry", "cpu", "irq", "system.slice/*", "../x", "", "true",
    "tcp_socket_read", "cgroup", "interface", "all", "host", "lo", "/",
    "p50", "udp_start", "memory", "io",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  oconfig_item_t *root = mock_ci("Plugin");
  oconfig_item_t *stack[4] = {root};
  int depth = 0;
  oconfig_item_t *block_items[4] = {0};
  for (size_t i = 0; i + 1 < size && i < 256; i += 2) {
    uint8_t a = data[i], b = data[i + 1];
    if (a == 0xff) { /* open a block (b even) or close one */
      if (!(b & 1) && depth < 3) {
        depth++;
        block_items[depth] = mock_ci(keys[b % (sizeof(keys) / sizeof(keys[0]))]);
        stack[depth] = block_items[depth];
      } else if (depth > 0) {
        mock_child(stack[depth - 1], stack[depth]);
        depth--;
      }
      continue;
    }
    oconfig_item_t *o = mock_ci(keys[a % (sizeof(keys) / sizeof(keys[0]))]);
    int nvals = (b >> 6) & 3;
    for (int v = 0; v < nvals; v++) {
      switch ((b >> (v * 2)) & 3) {
      case 0:
        mock_str(o, strs[(a + b + v) % (sizeof(strs) / sizeof(strs[0]))]);
        break;
      case 1:
        mock_num(o, (double)(int8_t)(a ^ b) * ((b & 4) ? 0.5 : 1));
        break;
      default:
        mock_bool(o, b & 1);
        break;
      }
    }
    mock_child(stack[depth], o);
  }
  while (depth > 0) {
    mock_child(stack[depth - 1], stack[depth]);
    depth--;
  }
  mock_reset();
  ebpf_config(root);
  int errors = config_errors;
  if (errors && mock_log_find(LOG_ERR, "") < 0)
    abort(); /* an error nobody was told about */
  ebpf_shutdown();
  mock_ci_free(root);
  return 0;
}
