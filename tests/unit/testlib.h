/* Minimal unit-test helpers. Each DEF_TEST is one test case; the runner
 * (tests/run) counts the "PASS:"/"FAIL:"/"SKIP:" lines every test binary
 * prints, so a failure names its case. Modelled on collectd's testing.h. */
#ifndef EBPF_TESTLIB_H
#define EBPF_TESTLIB_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tl_failed;
static const char *tl_prog = "unit";

#define DEF_TEST(name) static int test_##name(void)

#define RUN_TEST(name)                                                         \
  do {                                                                         \
    int st_ = test_##name();                                                   \
    printf("%s: %s.%s\n", st_ == 0 ? "PASS" : "FAIL", tl_prog, #name);         \
    if (st_ != 0)                                                              \
      tl_failed++;                                                             \
  } while (0)

#define END_TEST return tl_failed == 0 ? 0 : 1

#define FAILF(...)                                                             \
  do {                                                                         \
    printf("  %s:%d: ", __FILE__, __LINE__);                                   \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    return -1;                                                                 \
  } while (0)

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      FAILF("check failed: %s", #cond);                                        \
  } while (0)

#define CHECK_EQ_INT(want, got)                                                \
  do {                                                                         \
    long long w_ = (long long)(want), g_ = (long long)(got);                   \
    if (w_ != g_)                                                              \
      FAILF("%s = %lld, want %lld", #got, g_, w_);                             \
  } while (0)

#define CHECK_EQ_U64(want, got)                                                \
  do {                                                                         \
    unsigned long long w_ = (want), g_ = (got);                                \
    if (w_ != g_)                                                              \
      FAILF("%s = %llu, want %llu", #got, g_, w_);                             \
  } while (0)

#define CHECK_EQ_STR(want, got)                                                \
  do {                                                                         \
    const char *w_ = (want), *g_ = (got);                                      \
    if (g_ == NULL || strcmp(w_, g_) != 0)                                     \
      FAILF("%s = \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", w_);         \
  } while (0)

#define CHECK_NEAR(want, got, tol)                                             \
  do {                                                                         \
    double w_ = (want), g_ = (got);                                            \
    if (!(fabs(w_ - g_) <= (tol)))                                             \
      FAILF("%s = %.9g, want %.9g (+-%g)", #got, g_, w_, (double)(tol));       \
  } while (0)

/* A whole text file (the docs and sources some tests hold to the code),
 * NUL-terminated and malloc'd; NULL when it cannot be read. Paths are from
 * the top of the tree, where tests/run runs the tests. */
static inline char *tl_slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (len + 4096 + 1 > cap) {
      char *b = realloc(buf, cap = 2 * cap + 4096 + 1);
      if (!b) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = b;
    }
    n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
  } while (n > 0);
  fclose(f);
  buf[len] = 0;
  return buf;
}

#endif
