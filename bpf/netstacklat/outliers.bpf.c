// SPDX-License-Identifier: GPL-2.0
/* netstacklat with the outlier path compiled in (OutlierThreshold set).
 * The plugin loads this object instead of netstacklat.bpf.o only when the
 * option is on, so that with it off the programs are the very instructions
 * they were without the feature: a rodata test alone still leaves its load
 * and the registers kept for the path (measured: 4 to 7 more instructions
 * per program). Same maps, programs and variables: the plugin opens it
 * through netstacklat's skeleton. It has the sampling path (SampleEvery)
 * too, so that both options can be on at once. */
#define NSL_OUTLIERS 1
#define NSL_SAMPLING 1
#include "netstacklat/netstacklat.bpf.c"
