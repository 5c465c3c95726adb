// SPDX-License-Identifier: GPL-2.0-only
/* libbpf's output into collectd's log (loader_log_install() in loader.h),
 * and what the loader learns from it: the program libbpf last failed to
 * load and the verifier's last words about it, which go into the reason a
 * flavour was refused. While the loader probes, libbpf's messages are
 * quieted to DEBUG. Used by the loader's files only. */
#ifndef EBPF_LIBBPF_LOG_H
#define EBPF_LIBBPF_LOG_H

#include "core/base.h"

/* Quiet libbpf's messages (true) or stop quieting them (false); calls
 * nest. */
void loader_log_quiet(bool on);

/* The last program libbpf failed to load ("" if none) and the verifier's
 * last words for it ("" if none), since loader_log_forget(). */
const char *loader_log_blame(void);
const char *loader_log_verdict(void);
void loader_log_forget(void);

#endif
