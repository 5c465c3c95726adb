// SPDX-License-Identifier: GPL-2.0-only
/* plugin/core/testenv.c: a switch's choices, and the docs and the tests
 * held to its table (docs/development.md, "Test switches"); no other file
 * of plugin/ reads the environment. Run from the top of the tree, as
 * tests/run does. */
#include <dirent.h>
#include <sys/stat.h>

#include "../../plugin/core/testenv.c"
#include "../../plugin/core/esc.c" /* its log lines */
#include "mock_collectd.h"
#include "testlib.h"

DEF_TEST(choices) {
  setenv("EBPF_TEST_STALLED_SCAN", "marks", 1);
  CHECK_EQ_STR("marks", test_switch(TEST_STALLED_SCAN));
  setenv("EBPF_TEST_STALLED_SCAN", "mark", 1);
  CHECK(test_switch(TEST_STALLED_SCAN) == NULL);
  setenv("EBPF_TEST_STALLED_SCAN", "marksx", 1);
  CHECK(test_switch(TEST_STALLED_SCAN) == NULL);
  setenv("EBPF_TEST_STALLED_SCAN", "", 1);
  CHECK(test_switch(TEST_STALLED_SCAN) == NULL);
  unsetenv("EBPF_TEST_STALLED_SCAN");
  CHECK(test_switch(TEST_STALLED_SCAN) == NULL);
  setenv("EBPF_TEST_CG_INDEX_SIZE", "64", 1);
  CHECK_EQ_STR("64", test_switch(TEST_CG_INDEX_SIZE));
  unsetenv("EBPF_TEST_CG_INDEX_SIZE");
  CHECK_EQ_STR("EBPF_TEST_CLOCK", test_switch_name(TEST_CLOCK));
  return 0;
}

/* Every switch has a row in docs/development.md naming the tests that set
 * it, and each of those files does set it. */
DEF_TEST(docs_rows) {
  char *doc = tl_slurp("docs/development.md");
  CHECK(doc != NULL);
  for (int s = 0; s < TEST_SWITCHES; s++) {
    char head[96];
    snprintf(head, sizeof(head), "\n| `%s` |", test_switches[s].name);
    char *row = strstr(doc, head);
    if (!row)
      FAILF("docs/development.md has no row for %s", test_switches[s].name);
    char *end = strchr(row + 1, '\n');
    CHECK(end != NULL);
    *end = 0;
    int users = 0;
    for (char *p = strchr(row, '`'); p; p = strchr(p + 1, '`')) {
      char path[256];
      if (sscanf(p + 1, "%255[^`]", path) != 1)
        continue;
      p = strchr(p + 1, '`'); /* the closing quote */
      if (!p)
        break;
      if (strncmp(path, "tests/", 6) && strncmp(path, "bench/", 6))
        continue;
      char *src = tl_slurp(path);
      if (!src || !strstr(src, test_switches[s].name))
        FAILF("%s: %s is named as its user but does not set it",
              test_switches[s].name, path);
      free(src);
      users++;
    }
    if (!users)
      FAILF("the row of %s names no test", test_switches[s].name);
    *end = '\n';
  }
  free(doc);
  return 0;
}

/* getenv() nowhere in plugin/ but here. */
static int scan_dir(const char *dir, int *bad) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      scan_dir(path, bad);
      continue;
    }
    size_t n = strlen(path);
    if (n < 2 || path[n - 2] != '.' || (path[n - 1] != 'c' && path[n - 1] != 'h'))
      continue;
    if (!strcmp(path, "plugin/core/testenv.c"))
      continue;
    char *src = tl_slurp(path);
    if (src && strstr(src, "getenv(")) {
      printf("  %s calls getenv(): test switches go through testenv.h\n", path);
      (*bad)++;
    }
    free(src);
  }
  closedir(d);
  return 0;
}

DEF_TEST(only_here) {
  int bad = 0;
  CHECK(scan_dir("plugin", &bad) == 0);
  CHECK_EQ_INT(0, bad);
  return 0;
}

int main(void) {
  tl_prog = "testenv";
  RUN_TEST(choices);
  RUN_TEST(docs_rows);
  RUN_TEST(only_here);
  END_TEST;
}
