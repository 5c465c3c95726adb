// SPDX-License-Identifier: GPL-2.0
/* The receive path with netstacklat's sampling path compiled in
 * (SampleEvery above 1, RX_PATH_SAMPLING). The plugin loads this object
 * instead of rx.bpf.o only then, so that with the default SampleEvery 1
 * the programs carry no load of the setting (a rodata test pruned by the
 * verifier still leaves its load: 3 instructions per program, measured).
 * Same maps, programs and variables: the plugin opens it through rx's
 * skeleton. With OutlierThreshold as well, rx_outliers.bpf.o (which has
 * both paths) is loaded. */
#define NSL_SAMPLING 1
#include "rx/rx.bpf.c"
