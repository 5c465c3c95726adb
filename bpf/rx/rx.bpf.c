// SPDX-License-Identifier: GPL-2.0
/* The receive path: the one program per hook and flavour on the points a
 * received packet passes (ip_start to udp_socket_read, bpf/rx/hooks.h),
 * loaded once by plugin/rx/rx.c for every feature that has a handler
 * there. Each program reads what the handlers need (the skb, its device,
 * the socket, the receive time) and calls, inline, each feature's handler
 * of that hook: netstacklat's histograms (netstacklat/handlers.h) and
 * tcp_window's stalled receivers' marks and clamped wakeups
 * (tcp_window/rx.h). A handler is compiled in by its feature's .rodata, so
 * the verifier prunes every handler that is off, and a hook no feature
 * wants has its programs left unloaded. The part knows no feature's
 * meaning; each feature keeps its own maps, settings and user space.
 *
 * drops is not here: its hook, the skb:kfree_skb tracepoint, is not on
 * this path (a drop is not a packet passing a point of the stack) and no
 * other feature has a handler there, so joining would share no program
 * entry and would only make its object wait for this one's.
 *
 * fentry/fexit and tp_btf programs read fields with direct loads through
 * the typed pointers (CO-RE relocated); kprobe programs with probe reads
 * (probed=true, common/field.h). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rx/hooks.h"
#include "rx/packet.h"

/* The features' handlers, in the order of the features' maps in the
 * object. */
#include "netstacklat/handlers.h"
#include "tcp_window/rx.h"

/* The programs, a header per group of hooks, in hook order: the packet
 * path (ip_start, tcp_start, udp_start), a socket's enqueue and its
 * read. */
#include "rx/start.h"
#include "rx/enqueued.h"
#include "rx/read.h"

char LICENSE[] SEC("license") = "GPL";
