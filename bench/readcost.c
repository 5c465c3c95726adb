/* bench/readcost CONF N PERIOD_MS: the plugin's own cost, measured on the
 * shipped build/ebpf.so. dlopens it with stand-ins for the six collectd
 * functions it calls, feeds it CONF (the body of <Plugin ebpf>, collectd
 * syntax), times init (load + verify + attach) and N read callbacks, one
 * every PERIOD_MS, and prints one line of key=value:
 *   init_ms init_cpu_ms read_cpu_us_med read_cpu_us_p90 read_cpu_us_max
 *   read_wall_us_med values_per_read rss_kib_added map_memlock_kib nmaps
 *   rss_anon_kib_added rss_file_kib_added rss_anon_kib_added_after_trim
 * Read CPU is CLOCK_THREAD_CPUTIME_ID around the callback; RSS is VmRSS after
 * init minus before dlopen; map memory is the memlock of every BPF map fd
 * this process holds (/proc/self/fdinfo). */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

static int (*cb_config)(oconfig_item_t *);
static int (*cb_init)(void);
static int (*cb_read)(void);
static int (*cb_shutdown)(void);
static long ndispatched;

EXPORT void plugin_log(int level, const char *format, ...) {
  if (level > LOG_ERR && !getenv("BENCH_VERBOSE"))
    return;
  va_list ap;
  va_start(ap, format);
  fprintf(stderr, "readcost: [%d] ", level);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
}
EXPORT int plugin_dispatch_values(value_list_t const *vl) {
  ndispatched += vl->values_len;
  return 0;
}
EXPORT int plugin_register_complex_config(const char *t,
                                          int (*cb)(oconfig_item_t *)) {
  cb_config = cb;
  return 0;
}
EXPORT int plugin_register_init(const char *n, plugin_init_cb cb) {
  cb_init = cb;
  return 0;
}
EXPORT int plugin_register_read(const char *n, int (*cb)(void)) {
  cb_read = cb;
  return 0;
}
EXPORT int plugin_register_shutdown(const char *n, plugin_shutdown_cb cb) {
  cb_shutdown = cb;
  return 0;
}

/* Notifications (stalled receivers, outliers): counted, not kept. */
EXPORT char *hostname_g = "readcost";
static long nnotified;
EXPORT int plugin_dispatch_notification(const notification_t *n) {
  nnotified++;
  return 0;
}
EXPORT int plugin_notification_meta_add_string(notification_t *n,
                                               const char *name,
                                               const char *value) {
  return 0;
}
EXPORT int plugin_notification_meta_add_signed_int(notification_t *n,
                                                   const char *name,
                                                   int64_t value) {
  return 0;
}
EXPORT int plugin_notification_meta_add_unsigned_int(notification_t *n,
                                                     const char *name,
                                                     uint64_t value) {
  return 0;
}
EXPORT int plugin_notification_meta_add_double(notification_t *n,
                                               const char *name,
                                               double value) {
  return 0;
}
EXPORT int plugin_notification_meta_add_boolean(notification_t *n,
                                                const char *name, _Bool value) {
  return 0;
}
EXPORT int plugin_notification_meta_free(notification_meta_t *n) { return 0; }

/* ---- just enough of collectd's config syntax: <Block>, </Block>,
 * Key value..., values "quoted", true/false, numbers, bare words. */
static oconfig_item_t *new_child(oconfig_item_t *parent, const char *key) {
  parent->children = realloc(parent->children, (size_t)(parent->children_num + 1) *
                                                   sizeof(oconfig_item_t));
  oconfig_item_t *c = &parent->children[parent->children_num++];
  memset(c, 0, sizeof(*c));
  c->key = strdup(key);
  c->parent = parent;
  return c;
}

static void add_value(oconfig_item_t *ci, const char *tok, int quoted) {
  ci->values = realloc(ci->values, (size_t)(ci->values_num + 1) *
                                       sizeof(oconfig_value_t));
  oconfig_value_t *v = &ci->values[ci->values_num++];
  char *end;
  double d = strtod(tok, &end);
  if (quoted) {
    v->type = OCONFIG_TYPE_STRING;
    v->value.string = strdup(tok);
  } else if (!strcasecmp(tok, "true") || !strcasecmp(tok, "false")) {
    v->type = OCONFIG_TYPE_BOOLEAN;
    v->value.boolean = !strcasecmp(tok, "true");
  } else if (*tok && !*end) {
    v->type = OCONFIG_TYPE_NUMBER;
    v->value.number = d;
  } else {
    v->type = OCONFIG_TYPE_STRING;
    v->value.string = strdup(tok);
  }
}

/* Children are stored in arrays that move on realloc: a stack of indices. */
static oconfig_item_t *parse(FILE *f) {
  oconfig_item_t *root = calloc(1, sizeof(*root));
  root->key = strdup("Plugin");
  int path[16], depth = 0;
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    oconfig_item_t *cur = root;
    for (int i = 0; i < depth; i++)
      cur = &cur->children[path[i]];
    char *s = line;
    while (isspace((unsigned char)*s))
      s++;
    if (!*s || *s == '#')
      continue;
    if (s[0] == '<' && s[1] == '/') {
      depth--;
      continue;
    }
    int block = s[0] == '<';
    if (block)
      s++;
    char *k = s;
    while (*s && !isspace((unsigned char)*s) && *s != '>')
      s++;
    char save = *s;
    *s = 0;
    oconfig_item_t *c = new_child(cur, k);
    int idx = cur->children_num - 1;
    *s = save;
    for (;;) {
      while (isspace((unsigned char)*s) || *s == '>')
        s++;
      if (!*s || *s == '#')
        break;
      if (*s == '"') {
        char *e = strchr(s + 1, '"');
        if (!e)
          break;
        *e = 0;
        add_value(c, s + 1, 1);
        s = e + 1;
      } else {
        char *b = s;
        while (*s && !isspace((unsigned char)*s) && *s != '>')
          s++;
        save = *s;
        *s = 0;
        add_value(c, b, 0);
        *s = save;
      }
    }
    if (block)
      path[depth++] = idx;
  }
  return root;
}

/* A line of /proc/self/status, in KiB: "VmRSS:", "RssAnon:", "RssFile:". */
static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char l[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(l, sizeof(l), f))
    if (!strncmp(l, key, n))
      v = atol(l + n);
  if (f)
    fclose(f);
  return v;
}
#define rss_kib() status_kib("VmRSS:")

static void maps_memlock(long *kib, int *n) {
  *kib = 0;
  *n = 0;
  DIR *d = opendir("/proc/self/fdinfo");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char p[300], l[256];
    snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", e->d_name);
    FILE *f = fopen(p, "r");
    long ml = -1;
    int is_map = 0;
    while (f && fgets(l, sizeof(l), f)) {
      if (!strncmp(l, "map_type:", 9))
        is_map = 1;
      if (!strncmp(l, "memlock:", 8))
        ml = atol(l + 8);
    }
    if (f)
      fclose(f);
    if (is_map && ml >= 0) {
      *kib += ml / 1024;
      (*n)++;
    }
  }
  if (d)
    closedir(d);
}

/* Sum of the kernel's run statistics (kernel.bpf_stats_enabled=1) of the
 * BPF programs this process holds: a count of program runs that does not
 * depend on the machine's load (an iterator runs once per object). */
static void progs_runstats(unsigned long long *cnt, unsigned long long *ns) {
  *cnt = *ns = 0;
  DIR *d = opendir("/proc/self/fdinfo");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char p[300], l[256];
    snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", e->d_name);
    FILE *f = fopen(p, "r");
    unsigned long long c = 0, t = 0;
    int is_prog = 0;
    while (f && fgets(l, sizeof(l), f)) {
      if (!strncmp(l, "prog_type:", 10))
        is_prog = 1;
      if (!strncmp(l, "run_time_ns:", 12))
        t = strtoull(l + 12, NULL, 10);
      if (!strncmp(l, "run_cnt:", 8))
        c = strtoull(l + 8, NULL, 10);
    }
    if (f)
      fclose(f);
    if (is_prog) {
      *cnt += c;
      *ns += t;
    }
  }
  if (d)
    closedir(d);
}

static double ms_between(struct timespec a, struct timespec b) {
  return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#ifndef READCOST_NO_MAIN /* bench/slices.c reuses the stand-ins above */
/* dlopen the plugin, register it and give it conf: 0, or 1 with the
 * reason on stderr. */
static int load_plugin(const char *so, oconfig_item_t *conf) {
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "readcost: %s\n", dlerror());
    return 1;
  }
  void (*reg)(void) = (void (*)(void))dlsym(h, "module_register");
  if (!reg) {
    fprintf(stderr, "readcost: no module_register\n");
    return 1;
  }
  reg();
  if (!cb_config || !cb_init || !cb_read || cb_config(conf) != 0) {
    fprintf(stderr, "readcost: config failed\n");
    return 1;
  }
  return 0;
}

/* n read callbacks, one every period_ms: each one's thread CPU and wall
 * time in us, the values dispatched before the first (disp0), and the run
 * statistics of the programs around them. */
struct reads {
  double *cpu, *wall;
  long disp0;
  unsigned long long runs0, runns0, runs1, runns1;
};

static void timed_reads(int n, long period_ms, struct reads *r) {
  r->cpu = calloc((size_t)n, sizeof(double));
  r->wall = calloc((size_t)n, sizeof(double));
  r->disp0 = 0;
  /* The first read only takes the baseline of the cumulative counters. */
  cb_read();
  progs_runstats(&r->runs0, &r->runns0);
  for (int i = 0; i < n; i++) {
    struct timespec sl = {period_ms / 1000, (period_ms % 1000) * 1000000L};
    nanosleep(&sl, NULL);
    if (i == 0)
      r->disp0 = ndispatched;
    struct timespec w0, w1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    cb_read();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    r->cpu[i] = ms_between(c0, c1) * 1e3;
    r->wall[i] = ms_between(w0, w1) * 1e3;
  }
  progs_runstats(&r->runs1, &r->runns1);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s EBPF_SO CONF N PERIOD_MS\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[2], "r");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  oconfig_item_t *conf = parse(f);
  fclose(f);
  int n = atoi(argv[3]);
  long period_ms = atol(argv[4]);

  long rss0 = rss_kib(), anon0 = status_kib("RssAnon:"),
       file0 = status_kib("RssFile:");
  if (load_plugin(argv[1], conf) != 0)
    return 1;
  struct timespec w0, w1, c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  if (cb_init() != 0) {
    fprintf(stderr, "readcost: init failed\n");
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  double init_ms = ms_between(w0, w1), init_cpu = ms_between(c0, c1);

  struct reads r;
  timed_reads(n, period_ms, &r);
  double *cpu = r.cpu, *wall = r.wall;
  long rss1 = rss_kib(), ml;
  long anon1 = status_kib("RssAnon:"), file1 = status_kib("RssFile:");
  /* What init freed but the allocator kept: malloc_trim gives it back. */
  malloc_trim(0);
  long anon_trim = status_kib("RssAnon:");
  int nmaps;
  maps_memlock(&ml, &nmaps);
  double per_read = n ? (double)(ndispatched - r.disp0) / n : 0;
  qsort(cpu, (size_t)n, sizeof(double), cmp_d);
  qsort(wall, (size_t)n, sizeof(double), cmp_d);
  printf("init_ms=%.2f init_cpu_ms=%.2f read_cpu_us_med=%.1f "
         "read_cpu_us_p90=%.1f read_cpu_us_max=%.1f read_wall_us_med=%.1f "
         "values_per_read=%.0f rss_kib_added=%ld map_memlock_kib=%ld nmaps=%d "
         "rss_anon_kib_added=%ld rss_file_kib_added=%ld "
         "rss_anon_kib_added_after_trim=%ld\n",
         init_ms, init_cpu, cpu[n / 2], cpu[(n * 9) / 10], cpu[n - 1],
         wall[n / 2], per_read, rss1 - rss0, ml, nmaps, anon1 - anon0,
         file1 - file0, anon_trim - anon0);
  /* Extra keys on request (bench/socketscan), so that the line above
   * stays as bench/run parses it. */
  if (getenv("BENCH_PROG_STATS"))
    printf("prog_runs_per_read=%.1f prog_run_ns_per_read=%.0f "
           "notifications=%ld\n",
           n ? (double)(r.runs1 - r.runs0) / n : 0,
           n ? (double)(r.runns1 - r.runns0) / n : 0, nnotified);
  if (cb_shutdown)
    cb_shutdown();
  return 0;
}
#endif
