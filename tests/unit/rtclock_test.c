/* Unit tests for plugin/common/rtclock.c: the two ways BPF gets CLOCK_REALTIME
 * (TAI helper minus the TAI offset; MONOTONIC plus REALTIME-MONOTONIC)
 * agree with each other and with REALTIME to within a few microseconds,
 * read by user space and, where BPF programs can be loaded and the kernel
 * has both helpers, by the kernel's helpers in one program run. */
#include "testlib.h"

#include "../../plugin/common/rtclock.c"
#include "../../plugin/core/testenv.c"
#include "../../plugin/core/esc.c" /* its log lines */

#include "clockpair.skel.h"

#include <bpf/bpf.h>

#define SLACK_NS 5000 /* "a few microseconds" */

static int64_t rt(void) { return ns_of(CLOCK_REALTIME); }

/* clock c plus its offset, read between two REALTIME reads: the smallest
 * distance to that window over a few tries (a preemption between reads
 * only widens a window). */
static int64_t dist_to_realtime(enum rtclock c, int64_t off) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 20; i++) {
    int64_t a = rt();
    int64_t now = ns_of(c == RTCLOCK_TAI ? CLOCK_TAI : CLOCK_MONOTONIC) + off;
    int64_t b = rt();
    int64_t d = now < a ? a - now : now > b ? now - b : 0;
    if (d < best)
      best = d;
  }
  return best;
}

DEF_TEST(user_space_clocks_agree_with_realtime) {
  int64_t off_tai, off_mono, win;
  CHECK_EQ_INT(0, rtclock_offset(RTCLOCK_TAI, &off_tai, &win));
  CHECK_EQ_INT(0, win);
  CHECK_EQ_INT(0, off_tai % 1000000000LL); /* whole seconds */
  CHECK_EQ_INT(0, rtclock_offset(RTCLOCK_MONOTONIC, &off_mono, &win));
  printf("  TAI offset %lld s; REALTIME-MONOTONIC %lld ns, sampled in a "
         "%lld ns window\n",
         (long long)(-off_tai / 1000000000LL), (long long)off_mono,
         (long long)win);
  CHECK(win >= 0 && win < SLACK_NS);
  int64_t d_tai = dist_to_realtime(RTCLOCK_TAI, off_tai);
  int64_t d_mono = dist_to_realtime(RTCLOCK_MONOTONIC, off_mono);
  printf("  distance to REALTIME: TAI %lld ns, MONOTONIC %lld ns\n",
         (long long)d_tai, (long long)d_mono);
  CHECK(d_tai <= SLACK_NS);
  CHECK(d_mono <= SLACK_NS);
  return 0;
}

/* The offsets move only with clock steps: sampled twice, the MONOTONIC
 * offset agrees with itself within the sampling windows. */
DEF_TEST(monotonic_offset_is_stable) {
  int64_t o1, o2, w1, w2;
  CHECK_EQ_INT(0, rtclock_offset(RTCLOCK_MONOTONIC, &o1, &w1));
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  CHECK_EQ_INT(0, rtclock_offset(RTCLOCK_MONOTONIC, &o2, &w2));
  int64_t d = o1 > o2 ? o1 - o2 : o2 - o1;
  printf("  two samples 20 ms apart differ by %lld ns\n", (long long)d);
  CHECK(d <= SLACK_NS);
  return 0;
}

static int quiet(enum libbpf_print_level l, const char *f, va_list ap) {
  return 0;
}

/* The kernel's own helpers, read in one BPF program run: TAI minus the TAI
 * offset and MONOTONIC plus REALTIME-MONOTONIC are the same instant.
 * Returns 0 (pass), -1 (fail) or 1 (skipped, after a SKIP line). */
static int kernel_clocks_agree(void) {
  libbpf_set_print(quiet);
  const char *why;
  if (rtclock_choose(&why, NULL) != RTCLOCK_TAI) {
    printf("SKIP: rtclock_test.kernel_clocks_agree (%s)\n", why);
    return 1;
  }
  struct clockpair_bpf *s = clockpair_bpf__open_and_load();
  if (!s) {
    printf("SKIP: rtclock_test.kernel_clocks_agree (cannot load a BPF "
           "program: %s)\n",
           strerror(errno));
    return 1;
  }
  int64_t off_tai, off_mono;
  int64_t best = INT64_MAX, best_win = 0, best_rt = INT64_MAX;
  int rc = 0;
  for (int i = 0; i < 20; i++) {
    if (rtclock_offset(RTCLOCK_TAI, &off_tai, NULL) ||
        rtclock_offset(RTCLOCK_MONOTONIC, &off_mono, NULL)) {
      rc = -1;
      break;
    }
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    int64_t a = rt();
    if (bpf_prog_test_run_opts(bpf_program__fd(s->progs.clock_pair), &opts)) {
      printf("SKIP: rtclock_test.kernel_clocks_agree (BPF_PROG_TEST_RUN: "
             "%s)\n",
             strerror(errno));
      clockpair_bpf__destroy(s);
      return 1;
    }
    int64_t b = rt();
    int64_t win = (int64_t)(s->bss->mono_after - s->bss->mono_before);
    int64_t now_mono =
        (int64_t)s->bss->mono_before + win / 2 + off_mono;
    int64_t now_tai = (int64_t)s->bss->tai + off_tai;
    int64_t d = now_tai > now_mono ? now_tai - now_mono : now_mono - now_tai;
    d = d > win / 2 ? d - win / 2 : 0; /* TAI was read inside the window */
    if (d < best) {
      best = d;
      best_win = win;
    }
    int64_t drt = now_tai < a ? a - now_tai : now_tai > b ? now_tai - b : 0;
    if (drt < best_rt)
      best_rt = drt;
  }
  clockpair_bpf__destroy(s);
  if (rc)
    return -1;
  printf("  kernel: TAI-based and MONOTONIC-based now differ by %lld ns "
         "(helper window %lld ns); TAI-based now is %lld ns outside the "
         "REALTIME reads around the run\n",
         (long long)best, (long long)best_win, (long long)best_rt);
  CHECK(best <= SLACK_NS);
  CHECK(best_rt <= SLACK_NS);
  return 0;
}

DEF_TEST(forced_fallback) {
  const char *why;
  setenv("EBPF_TEST_CLOCK", "monotonic", 1);
  CHECK_EQ_INT(RTCLOCK_MONOTONIC, rtclock_choose(&why, NULL));
  CHECK(strstr(why, "EBPF_TEST_CLOCK") != NULL);
  unsetenv("EBPF_TEST_CLOCK");
  return 0;
}

int main(void) {
  tl_prog = "rtclock_test";
  RUN_TEST(user_space_clocks_agree_with_realtime);
  RUN_TEST(monotonic_offset_is_stable);
  RUN_TEST(forced_fallback);
  int k = kernel_clocks_agree();
  if (k <= 0)
    printf("%s: rtclock_test.kernel_clocks_agree\n", k ? "FAIL" : "PASS");
  tl_failed += k < 0;
  END_TEST;
}
