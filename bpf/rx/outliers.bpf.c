// SPDX-License-Identifier: GPL-2.0
/* The receive path with netstacklat's outlier path compiled in
 * (OutlierThreshold set). The plugin loads this object instead of
 * rx.bpf.o only when a feature asks for that path (plugin/rx/rx.h,
 * RX_PATH_OUTLIERS), so that with it off the programs are the very
 * instructions they were without it: a rodata test alone still leaves its
 * load and the registers kept for the path (measured: 4 to 7 more
 * instructions per program). Same maps, programs and variables: the
 * plugin opens it through rx's skeleton. It has the sampling path
 * (SampleEvery) too, so that both options can be on at once. */
#define NSL_OUTLIERS 1
#define NSL_SAMPLING 1
#include "rx/rx.bpf.c"
