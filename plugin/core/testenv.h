// SPDX-License-Identifier: GPL-2.0-only
/* Test switches: the environment variables with which the test suite makes
 * the plugin take a path that this host would not take by itself (an older
 * kernel's map, a fallback scan, a small table). This file and testenv.c
 * are the only places that read EBPF_TEST_*; docs/development.md lists
 * every switch with the tests that set it, and tests/unit/testenv_test.c
 * holds that list to the table in testenv.c. A production collectd never
 * has them set; each one that is set says so in an INFO line where it is
 * used. Below everything, like base.h: it includes nothing of the plugin. */
#ifndef EBPF_TESTENV_H
#define EBPF_TESTENV_H

enum test_switch {
  TEST_CLOCK,         /* EBPF_TEST_CLOCK=monotonic */
  TEST_CGROUP_FILTER, /* EBPF_TEST_CGROUP_FILTER=ancestors|storage|hash */
  TEST_CG_INDEX_SIZE, /* EBPF_TEST_CG_INDEX_SIZE=<power of two> */
  TEST_CG_FILTER_SIZE, /* EBPF_TEST_CG_FILTER_SIZE=<entries> */
  TEST_NO_BATCH,      /* EBPF_TEST_NO_BATCH=1 */
  TEST_OWNERS,        /* EBPF_TEST_OWNERS=proc */
  TEST_STALLED_SCAN,  /* EBPF_TEST_STALLED_SCAN=iter|sock_diag|marks */
  TEST_STRIPES,       /* EBPF_TEST_STRIPES=<power of two up to 16> */
  TEST_NO_WAYS,       /* EBPF_TEST_NO_WAYS=1 */
  TEST_SWITCHES
};

/* The switch's value, or NULL when it is unset, empty, or (for a switch
 * with a list of choices) not one of them; the last is logged once as a
 * WARNING naming the choices. */
const char *test_switch(enum test_switch s);

/* "EBPF_TEST_CLOCK" and so on, for log lines. */
const char *test_switch_name(enum test_switch s);

/* The table, for the test that holds the docs to it. */
struct test_switch_info {
  const char *name;    /* the environment variable */
  const char *choices; /* "a|b|c", or NULL for a number or a flag */
  const char *what;    /* one line: the path it forces */
};
extern const struct test_switch_info test_switches[TEST_SWITCHES];

#endif
