/* SPDX-License-Identifier: GPL-2.0 */
/* Passing what a function's entry saw to its return, for the entry/return
 * pairs (kprobe + kretprobe, fentry + fexit) of bpf/netstacklat/netstacklat.bpf.c and
 * bpf/tcp_window/tcp_window.bpf.c: a per-CPU stack of saved arguments, pushed at entry
 * and popped at return.
 *
 * Why not a hash keyed by pid_tgid (what this code did, and what
 * ebpf_exporter's examples do): the receive path runs in softirq, under
 * whatever task the CPU was running. On an idle CPU that is the idle task,
 * whose pid_tgid is 0 on every CPU, so two CPUs receiving at once share one
 * key: one call's return takes the other's arguments and the other's return
 * finds nothing. A softirq that interrupts a process on the same CPU also
 * shares that process's pid_tgid.
 *
 * A stack per CPU is exact for everything that cannot leave its CPU between
 * entry and return (softirq, and any code with BH or preemption off): calls
 * on one CPU nest strictly (a softirq call inside a process-context call
 * returns first), so the return pops the frame on top. Each frame is
 * tagged with the task that pushed it, and a return takes the topmost frame
 * of its own task, so process-context calls that sleep in between (only
 * tcp_try_rmem_schedule can, in memcg reclaim during backlog processing) do
 * not take each other's frames either; if such a call comes back on another
 * CPU, its return finds no frame there and is not counted.
 *
 * Frames whose return never comes (a kretprobe lost when more calls are in
 * flight than its maxactive instances, a task that migrated) must not be
 * matched later: a frame older than ESTACK_MAX_AGE_NS is never matched and
 * is dropped when it reaches the top; a full stack overwrites its oldest
 * frame (the stack is a ring of ESTACK_DEPTH frames). Real nesting is 2
 * deep (a softirq over a process-context call), so 8 frames leave room for
 * stale ones.
 *
 * Cost in the common case: one per-CPU array lookup, the current task and a
 * clock read on each side, one frame compared at return. No locks, no hash.
 *
 * The map is per CPU and the helpers are not atomic: they rely on the BPF
 * program not being interrupted by another run of a program that uses the
 * same map on that CPU. kprobe programs run with preemption off and are not
 * re-entered on a CPU (bpf_prog_active); fentry/fexit on functions that run
 * with BH off (all the pairs here but tcp_try_rmem_schedule, which has no
 * fentry pair) cannot be preempted either. */
#ifndef ENTRY_STACK_H
#define ENTRY_STACK_H

#ifndef ESTACK_NARGS
#define ESTACK_NARGS 3 /* saved values per call */
#endif
#define ESTACK_DEPTH 8 /* a power of two */
/* Calls in softirq take microseconds; a process-context call sleeping in
 * reclaim can take longer but is rare. A second. */
#define ESTACK_MAX_AGE_NS 1000000000ULL

struct estack_frame {
  __u64 task; /* the task that pushed it (bpf_get_current_task); 0: popped */
  __u64 t_ns; /* bpf_ktime_get_ns() at entry */
  __u64 arg[ESTACK_NARGS];
};

struct estack {
  __u32 top; /* frames pushed minus frames dropped from the top */
  __u32 n;   /* frames held, at most ESTACK_DEPTH */
  struct estack_frame f[ESTACK_DEPTH];
};

/* One stack per CPU: declare with ESTACK_MAP(map_name); */
#define ESTACK_MAP(name)                                                       \
  struct {                                                                     \
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                   \
    __uint(max_entries, 1);                                                    \
    __type(key, __u32);                                                        \
    __type(value, struct estack);                                              \
  } name SEC(".maps")

/* At entry: a new frame on top, tagged with the current task and time; the
 * caller fills arg[]. Push on every entry, even one the caller will not
 * count, so that entries and returns stay paired. NULL only if the map
 * lookup fails (it cannot for an array). */
/* aged: stamp the frame with the time, so that a frame whose return never
 * came ages out. kprobe pairs need it (a kretprobe can be missed); an
 * fentry/fexit pair cannot lose its return, and saves two clock reads. */
static __always_inline struct estack_frame *estack_push(void *map,
                                                        const bool aged) {
  __u32 zero = 0;
  struct estack *s = bpf_map_lookup_elem(map, &zero);
  if (!s)
    return NULL;
  __u32 top = s->top;
  struct estack_frame *f = &s->f[top & (ESTACK_DEPTH - 1)];
  f->task = bpf_get_current_task();
  f->t_ns = aged ? bpf_ktime_get_ns() : 0;
  s->top = top + 1;
  if (s->n < ESTACK_DEPTH)
    s->n++; /* else the oldest frame was overwritten */
  return f;
}

/* At return: copy out and free the topmost frame of the current task that
 * is younger than ESTACK_MAX_AGE_NS, then drop freed and aged frames from
 * the top. Returns false when there is none (the entry was not seen on this
 * CPU): the call must not be counted. */
static __always_inline bool estack_pop(void *map, struct estack_frame *out,
                                       const bool aged) {
  /* Written on every path: older verifiers (6.1) cannot tell that a caller
   * reads *out only when a frame was found, and refuse a read of stack
   * bytes that some path left unwritten (seen on arm64 with clang 14). */
  __builtin_memset(out, 0, sizeof(*out));
  __u32 zero = 0;
  struct estack *s = bpf_map_lookup_elem(map, &zero);
  if (!s)
    return false;
  __u64 task = bpf_get_current_task();
  __u64 now = aged ? bpf_ktime_get_ns() : 0;
  __u32 top = s->top, n = s->n;
  bool found = false;
  for (__u32 i = 0; i < ESTACK_DEPTH; i++) {
    if (i >= n)
      break;
    struct estack_frame *f = &s->f[(top - 1 - i) & (ESTACK_DEPTH - 1)];
    if (f->task == task && (!aged || now - f->t_ns < ESTACK_MAX_AGE_NS)) {
      *out = *f;
      f->task = 0;
      found = true;
      break;
    }
  }
  for (__u32 i = 0; i < ESTACK_DEPTH; i++) {
    if (!n)
      break;
    struct estack_frame *f = &s->f[(top - 1) & (ESTACK_DEPTH - 1)];
    if (f->task && (!aged || now - f->t_ns < ESTACK_MAX_AGE_NS))
      break;
    top--;
    n--;
  }
  s->top = top;
  s->n = n;
  return found;
}

#endif
