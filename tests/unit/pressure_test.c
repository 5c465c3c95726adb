/* pressure's values and their names. The plugin_instance of each source is
 * made once (source_name) and reused every interval: every identifier and
 * value must be exactly what the plugin dispatched when it formatted the
 * names per value (tests/data/identifiers/pressure.txt is that code's
 * output for these inputs). The cgroups a scan finds are kept sorted and
 * found again, however many there are. */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/pressure/pressure.c"
#include "mock_collectd.h"
#include "testlib.h"

#include <sys/stat.h>

/* The paths below are short; gcc cannot tell through the 2D arrays. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static const char *SOMEFULL =
    "some avg10=1.50 avg60=2.00 avg300=0.25 total=123456789\n"
    "full avg10=0.50 avg60=1.00 avg300=0.05 total=23456789\n";
static const char *SOME =
    "some avg10=1.50 avg60=2.00 avg300=0.25 total=123456789\n";

static int fd_with(const char *text) {
  char p[] = "/tmp/psitestXXXXXX";
  int fd = mkstemp(p);
  if (fd < 0)
    return -1;
  unlink(p);
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    close(fd);
    return -1;
  }
  return fd;
}

static int emit(char *out, size_t len, size_t *o) {
  for (int i = 0; i < mock_nvalues; i++) {
    const value_list_t *v = &mock_values[i].vl;
    int n = snprintf(out + *o, len - *o, "%s/%s/%s/%s %.17g\n", v->plugin,
                     v->plugin_instance, v->type, v->type_instance,
                     !strcmp(v->type, "percent")
                         ? mock_values[i].v.gauge
                         : (double)mock_values[i].v.derive);
    if (n < 0 || (size_t)n >= len - *o)
      return -1;
    *o += (size_t)n;
  }
  return 0;
}

DEF_TEST(identifiers_unchanged) {
  static const char *rels[] = {"system.slice/nginx.service", "a/b/c",
                               "user.slice/user-1000.slice/session-2.scope"};
  static char got[65536], want[65536];
  size_t o = 0;
  struct psi_source h = {.fd = {-1, -1, -1, -1}};
  source_name(&h);
  for (int r = 0; r < RES_COUNT; r++) {
    h.fd[r] = fd_with(r == RES_CPU ? SOME : SOMEFULL);
    CHECK(h.fd[r] >= 0);
    mock_reset();
    CHECK_EQ_INT(0, read_source(&h, r));
    CHECK_EQ_INT(0, emit(got, sizeof(got), &o));
  }
  source_close(&h);
  for (int g = 0; g < 3; g++) {
    struct psi_source s = {.rel = strdup(rels[g])};
    cgroup_name(rels[g], s.instance);
    source_name(&s);
    for (int r = 0; r < RES_COUNT; r++) {
      s.fd[r] = fd_with(SOMEFULL);
      CHECK(s.fd[r] >= 0);
      mock_reset();
      CHECK_EQ_INT(0, read_source(&s, r));
      CHECK_EQ_INT(0, emit(got, sizeof(got), &o));
    }
    source_close(&s);
  }
  FILE *f = fopen("tests/data/identifiers/pressure.txt", "r");
  if (!f)
    FAILF("cannot open tests/data/identifiers/pressure.txt");
  size_t n = fread(want, 1, sizeof(want) - 1, f);
  fclose(f);
  want[n] = 0;
  if (strcmp(got, want)) {
    size_t i = 0;
    while (got[i] && got[i] == want[i])
      i++;
    while (i > 0 && got[i - 1] != '\n')
      i--;
    FAILF("first difference at byte %zu:\n got  %.120s\n want %.120s", i,
          got + i, want + i);
  }
  CHECK(o > 100);
  return 0;
}

/* 200 cgroups found in a scrambled order: kept sorted by path, each once,
 * found again (not opened again) on the next scan, and the gone ones
 * dropped with the others kept in order. */
DEF_TEST(scan_keeps_groups_sorted) {
  char dir[] = "/tmp/psiscanXXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  cfg.resources = 1u << RES_CPU;
  enum { N = 200 };
  char rel[N][32], path[N][96];
  for (int i = 0; i < N; i++) {
    snprintf(rel[i], sizeof(rel[i]), "cg%03d", (i * 7919) % N);
    snprintf(path[i], sizeof(path[i]), "%s/%s", dir, rel[i]);
    CHECK_EQ_INT(0, mkdir(path[i], 0700));
    char f[128];
    snprintf(f, sizeof(f), "%s/cpu.pressure", path[i]);
    FILE *fp = fopen(f, "w");
    CHECK(fp != NULL);
    fputs(SOMEFULL, fp);
    fclose(fp);
  }
  for (int round = 0; round < 3; round++) {
    struct scan s = {"", "", 0, 0};
    for (size_t i = 0; i < ngroups; i++)
      groups[i].seen = false;
    for (int i = 0; i < N; i++)
      if (round < 2 || i % 2 == 0)
        scan_one(path[i], rel[i], &s);
    size_t kept = 0;
    for (size_t i = 0; i < ngroups; i++)
      if (groups[i].seen)
        groups[kept++] = groups[i];
      else
        source_close(&groups[i]);
    ngroups = kept;
    CHECK_EQ_INT(round == 0 ? N : 0, s.nadded);
    CHECK_EQ_INT(round < 2 ? N : N / 2, ngroups);
    for (size_t i = 1; i < ngroups; i++)
      CHECK(strcmp(groups[i - 1].rel, groups[i].rel) < 0);
    for (size_t i = 0; i < ngroups; i++) {
      char want[DATA_MAX_NAME_LEN];
      snprintf(want, sizeof(want), "cpu-%s", groups[i].rel);
      CHECK(!strcmp(groups[i].inst[RES_CPU], want));
    }
  }
  for (size_t i = 0; i < ngroups; i++)
    source_close(&groups[i]);
  free(groups);
  groups = NULL;
  ngroups = 0;
  for (int i = 0; i < N; i++) {
    char f[128];
    snprintf(f, sizeof(f), "%s/cpu.pressure", path[i]);
    unlink(f);
    rmdir(path[i]);
  }
  rmdir(dir);
  return 0;
}

int main(void) {
  tl_prog = "pressure";
  RUN_TEST(identifiers_unchanged);
  RUN_TEST(scan_keeps_groups_sorted);
  END_TEST;
}
