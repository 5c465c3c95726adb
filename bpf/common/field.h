// SPDX-License-Identifier: GPL-2.0
/* RD(probed, p, a, b...): p->a.b..., read with direct loads through a
 * typed pointer (fentry/fexit and tp_btf programs: CO-RE relocated, ~25 ns
 * cheaper per field than a probe read) or, where the verifier sees an
 * untyped value (kprobe programs, probed true), with BPF_CORE_READ. A
 * constant `probed` picks the branch at compile time. Included by BPF code
 * after vmlinux.h and bpf_core_read.h. */
#ifndef FIELD_H
#define FIELD_H

#define RD(probed, p, ...)                                                     \
  ((probed) ? BPF_CORE_READ(p, __VA_ARGS__) : ___arrow(p, __VA_ARGS__))

#endif
