/* The BPF side's fine bucket function (bpf/netstacklat/netstacklat.h, compiled here as
 * plain C) must agree with plugin/common/hist.c's reference everywhere. */
#include "../../plugin/common/hist.c"
#include "netstacklat/netstacklat.h"
#include "testlib.h"

DEF_TEST(boundaries) {
  for (int b = 0; b < 64; b++)
    for (int d = -2; d <= 2; d++) {
      uint64_t v = (1ULL << b) + (uint64_t)(int64_t)d;
      CHECK_EQ_INT(hist_fine_of(v), nsl_slot_of(v));
    }
  for (unsigned i = 0; i + 1 < HIST_NFINE; i++)
    for (int d = -1; d <= 1; d++) {
      uint64_t v = hist_fine_hi(i) + (uint64_t)(int64_t)d;
      CHECK_EQ_INT(hist_fine_of(v), nsl_slot_of(v));
    }
  CHECK_EQ_INT(hist_fine_of(0), nsl_slot_of(0));
  CHECK_EQ_INT(hist_fine_of(UINT64_MAX), nsl_slot_of(UINT64_MAX));
  return 0;
}

DEF_TEST(random_values) {
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 2000000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    uint64_t v = x >> (x & 63);
    if (hist_fine_of(v) != nsl_slot_of(v))
      FAILF("value %llu: hist %u, bpf %u", (unsigned long long)v,
            hist_fine_of(v), nsl_slot_of(v));
  }
  return 0;
}

int main(void) {
  tl_prog = "nsl_slot";
  RUN_TEST(boundaries);
  RUN_TEST(random_values);
  END_TEST;
}
