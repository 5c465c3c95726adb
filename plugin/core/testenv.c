// SPDX-License-Identifier: GPL-2.0-only
/* Test switches; see testenv.h. */
#include "core/testenv.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"

const struct test_switch_info test_switches[TEST_SWITCHES] = {
    [TEST_CLOCK] = {"EBPF_TEST_CLOCK", "monotonic",
                    "netstacklat reads \"now\" from CLOCK_MONOTONIC plus its "
                    "offset, as on kernels without bpf_ktime_get_tai_ns"},
    [TEST_CGROUP_FILTER] = {"EBPF_TEST_CGROUP_FILTER", "ancestors|storage|hash",
                            "netstacklat's Cgroup filter and GroupBy cgroup "
                            "skip the ways before the one named"},
    [TEST_CG_INDEX_SIZE] = {"EBPF_TEST_CG_INDEX_SIZE", NULL,
                            "GroupBy cgroup's group index gets this many "
                            "entries (a power of two up to 2^24)"},
    [TEST_CG_FILTER_SIZE] = {"EBPF_TEST_CG_FILTER_SIZE", NULL,
                             "the Cgroup filter's hash map gets this many "
                             "entries"},
    [TEST_NO_BATCH] = {"EBPF_TEST_NO_BATCH", NULL,
                       "netstacklat reads its group table one key at a time, "
                       "as where batched lookups fail"},
    [TEST_OWNERS] = {"EBPF_TEST_OWNERS", "proc",
                     "stalled receivers' owners come from the /proc scan, "
                     "not the task_file iterator"},
    [TEST_STALLED_SCAN] = {"EBPF_TEST_STALLED_SCAN", "iter|sock_diag|marks",
                           "tcp_window's stalled receivers: whole walks by the "
                           "iterator or by sock_diag only, or marked scans "
                           "only"},
    [TEST_STRIPES] = {"EBPF_TEST_STRIPES", NULL,
                      "netstacklat's GroupBy values get this many stripes "
                      "(1, 2, 4, 8 or 16): fewer than the CPUs makes them "
                      "share stripes and add atomically (the groups "
                      "beyond a CPU's ways), as on a host with more than "
                      "16 CPUs"},
    [TEST_NO_WAYS] = {"EBPF_TEST_NO_WAYS", NULL,
                      "netstacklat's GroupBy counts every group in the "
                      "stripes: no CPU has ways of its own"},
};

static bool is_choice(const char *choices, const char *v) {
  size_t n = strlen(v);
  for (const char *c = choices; *c;) {
    const char *bar = strchr(c, '|');
    size_t len = bar ? (size_t)(bar - c) : strlen(c);
    if (len == n && strncmp(c, v, n) == 0)
      return true;
    c += len + (bar != NULL);
  }
  return false;
}

const char *test_switch(enum test_switch s) {
  static bool warned[TEST_SWITCHES];
  if ((unsigned)s >= TEST_SWITCHES)
    return NULL;
  const struct test_switch_info *t = &test_switches[s];
  const char *v = getenv(t->name);
  if (!v || !*v)
    return NULL;
  if (t->choices && !is_choice(t->choices, v)) {
    if (!warned[s])
      E_WARNING("%s=\"%s\" is not one of %s: ignored.", t->name, v,
                t->choices);
    warned[s] = true;
    return NULL;
  }
  return v;
}

const char *test_switch_name(enum test_switch s) {
  return (unsigned)s < TEST_SWITCHES ? test_switches[s].name : "EBPF_TEST_?";
}
