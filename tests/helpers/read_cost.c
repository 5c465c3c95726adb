/* CPU time of the plugin's read callback, outside collectd (mock dispatch).
 * Usage: read_cost ROUNDS CONFIG_FILE_OF_KEY_VALUE_LINES [wait]
 * With "wait" it prints "ready" after init and reads a line from stdin
 * before the reads (for traffic a test makes once the programs run).
 * The config is the body of <Plugin ebpf> in a tiny format, one option per
 * line: "Block/Key value..." (strings quoted, numbers and true/false bare). */
#include "../../plugin/core/ebpf.c"
#include "mock_collectd.h"

#include <time.h>

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A line of /proc/self/status, in kB (VmRSS, VmHWM). */
static long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, key, n) && line[n] == ':')
      v = atol(line + n + 1);
  if (f)
    fclose(f);
  return v;
}

static oconfig_item_t *child(oconfig_item_t *parent, const char *key) {
  for (int i = 0; i < parent->children_num; i++)
    if (!strcmp(parent->children[i].key, key))
      return &parent->children[i];
  mock_child(parent, mock_ci(key));
  return &parent->children[parent->children_num - 1];
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "wait"))) {
    fprintf(stderr, "usage: %s ROUNDS CONFIG [wait]\n", argv[0]);
    return 2;
  }
  int rounds = atoi(argv[1]);
  FILE *f = fopen(argv[2], "r");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  oconfig_item_t *root = mock_ci("Plugin");
  char line[1024];
  while (fgets(line, sizeof(line), f)) {
    char *key = strtok(line, " \t\n");
    if (!key || *key == '#')
      continue;
    oconfig_item_t *parent = root;
    char *slash = strchr(key, '/');
    if (slash) {
      *slash = 0;
      parent = child(root, key);
      key = slash + 1;
    }
    oconfig_item_t *o = mock_ci(key);
    for (char *v; (v = strtok(NULL, " \t\n"));) {
      if (*v == '"') {
        v[strlen(v) - 1] = 0;
        mock_str(o, v + 1);
      } else if (!strcmp(v, "true") || !strcmp(v, "false")) {
        mock_bool(o, !strcmp(v, "true"));
      } else {
        mock_num(o, atof(v));
      }
    }
    mock_child(parent, o);
  }
  fclose(f);
  ebpf_config(root);
  double t0 = cpu_now();
  if (ebpf_init() != 0) {
    for (int i = 0; i < mock_nlog; i++)
      fprintf(stderr, "%s\n", mock_log[i]);
    return 1;
  }
  double t_init = cpu_now() - t0;
  /* The peak RSS of the reads alone: the peak is reset after init (5 to
   * clear_refs, Linux 4.0+). */
  FILE *cr = fopen("/proc/self/clear_refs", "w");
  if (cr) {
    fputs("5", cr);
    fclose(cr);
  }
  long rss_init = status_kb("VmRSS");
  if (argc == 4) {
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
      return 1;
  }
  double total = 0, worst = 0, first = 0, warm = 0; /* warm: after the first */
  double wall_warm = 0;
  int values = 0;
  /* Each read's CPU time, in order (read_cpu_ms_each): where a maximum
   * comes from (the first read, a periodic walk, or noise). */
  char each[4096] = "";
  size_t each_len = 0;
  for (int i = 0; i < rounds; i++) {
    mock_reset();
    double a = cpu_now(), w = wall_now();
    ebpf_read();
    double d = cpu_now() - a;
    if (i > 0)
      wall_warm += wall_now() - w;
    total += d;
    if (i == 0)
      first = d;
    else if (d > warm)
      warm = d;
    if (d > worst)
      worst = d;
    values = mock_nvalues;
    if (each_len < sizeof(each) - 16)
      each_len += (size_t)snprintf(each + each_len, sizeof(each) - each_len,
                                   "%s%.1f", i ? "," : "", d * 1e3);
  }
  printf("init_cpu_ms=%.3f\nread_cpu_ms_mean=%.4f\nread_cpu_ms_max=%.4f\n"
         "read_cpu_ms_first=%.4f\nread_cpu_ms_max_warm=%.4f\n"
         "read_wall_ms_mean_warm=%.4f\nvalues_per_read=%d\n"
         "rss_init_kb=%ld\nrss_hwm_kb=%ld\nread_cpu_ms_each=%s\n",
         t_init * 1e3, total / rounds * 1e3, worst * 1e3, first * 1e3,
         warm * 1e3, rounds > 1 ? wall_warm / (rounds - 1) * 1e3 : 0, values,
         rss_init, status_kb("VmHWM"), each);
  ebpf_shutdown();
  mock_ci_free(root);
  return 0;
}
