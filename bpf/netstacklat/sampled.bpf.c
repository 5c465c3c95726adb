// SPDX-License-Identifier: GPL-2.0
/* netstacklat with the sampling path compiled in (SampleEvery above 1).
 * The plugin loads this object instead of netstacklat.bpf.o only then, so
 * that with the default SampleEvery 1 the programs carry no load of the
 * setting (a rodata test pruned by the verifier still leaves its load: 3
 * instructions per program, measured). Same maps, programs and variables:
 * the plugin opens it through netstacklat's skeleton. With OutlierThreshold
 * as well, netstacklat_outliers.bpf.o (which has both paths) is loaded. */
#define NSL_SAMPLING 1
#include "netstacklat/netstacklat.bpf.c"
