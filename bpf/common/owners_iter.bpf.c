// SPDX-License-Identifier: GPL-2.0
/* Who holds a socket: one pass of a BPF task_file iterator (5.8+) over the
 * open files of every process the iterator's creator can see (its pid
 * namespace and those below), reporting each socket file whose inode user
 * space asked for (owners_want) with the process as the kernel knows it:
 * its pid in the initial pid namespace, its pid inside its own namespace,
 * and the full path of its cgroup2 directory from the hierarchy's root,
 * whatever the cgroup namespace of the process or of collectd. No cap on
 * the files looked at, no /proc walk: the kernel skips the threads that
 * share their process's file table. One record per wanted socket, for the
 * first process found holding it (in pid order: the walk's): a tenant who
 * dup()s a socket to its descriptor limit in many processes adds to the
 * walk's time, not to what is written (each record is 4 KiB); what is left
 * out is counted for user space to say. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "common/owners_rec.h"

#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* Set by user space: skip every file while nothing is looked for. */
__u32 owners_nwant = 0;
/* What a pass left out, zeroed by user space before it: the descriptors
 * that refer to a socket already reported (the first process's others
 * too), and the processes other than the first that hold one. */
__u64 owners_more_fds = 0;
__u64 owners_more_procs = 0;

/* The socket inodes looked for: 0 until one is reported, then the tgid of
 * the last process seen holding it (a process's files come together). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, OWNERS_WANT_MAX);
  __type(key, __u64);
  __type(value, __u32);
} owners_want SEC(".maps");

/* A name's block: off the stack (512 bytes is all a program has). */
struct owners_name {
  char s[OWNERS_NAME_MAX];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct owners_name);
} owners_scratch SEC(".maps");

/* kernfs_node's parent was "parent" before 6.15 ("__parent" since, under
 * RCU): CO-RE picks the one the running kernel has. Both spelt here, so
 * that either vmlinux.h we build with will do. */
struct kernfs_node___old {
  struct kernfs_node *parent;
} __attribute__((preserve_access_index));

struct kernfs_node___new {
  struct kernfs_node *__parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn) {
  struct kernfs_node___new *n = (void *)kn;
  if (bpf_core_field_exists(n->__parent))
    return BPF_CORE_READ(n, __parent);
  return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
}

SEC("iter/task_file")
int owners_scan(struct bpf_iter__task_file *ctx) {
  struct task_struct *task = ctx->task;
  struct file *file = ctx->file;
  if (!task || !file || !owners_nwant)
    return 0;
  struct inode *ino = file->f_inode;
  if (!ino || (ino->i_mode & S_IFMT) != S_IFSOCK)
    return 0;
  __u64 inum = ino->i_ino;
  __u32 *seen = bpf_map_lookup_elem(&owners_want, &inum);
  if (!seen)
    return 0;
  __u32 tgid = task->tgid;
  if (*seen) {
    owners_more_fds++;
    if (*seen != tgid) {
      owners_more_procs++;
      *seen = tgid;
    }
    return 0;
  }

  __u32 zero = 0;
  struct owners_name *nm = bpf_map_lookup_elem(&owners_scratch, &zero);
  if (!nm) /* never: a one-entry array; checked before anything is written */
    return 0;
  struct owners_rec r = {};
  r.inode = inum;
  r.tgid = tgid;
  /* The pid namespace the process lives in, and its number there. */
  struct pid *pid = BPF_CORE_READ(task, thread_pid);
  unsigned int level = BPF_CORE_READ(pid, level);
  if (level < 32) {
    r.pid_ns = BPF_CORE_READ(pid, numbers[level].ns, ns.inum);
    r.ns_pid = BPF_CORE_READ(pid, numbers[level].nr);
  }
  bpf_probe_read_kernel_str(r.comm, sizeof(r.comm), task->comm);
  struct kernfs_node *kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
  r.cgid = BPF_CORE_READ(kn, id);
  /* The levels below the root first (the header goes first), with their
   * nodes. Unrolled: verifiers before 6.x refuse a back-edge here ("back-
   * edge from insn"), seen on 5.10 and 6.1. */
  struct kernfs_node *lv[OWNERS_DEPTH_MAX] = {};
  struct kernfs_node *k = kn;
  __u16 depth = 0;
#pragma clang loop unroll(full)
  for (int i = 0; i < OWNERS_DEPTH_MAX + 1; i++) {
    if (!k)
      break;
    struct kernfs_node *p = kn_parent(k);
    if (!p)
      break;
    if (i == OWNERS_DEPTH_MAX) {
      r.truncated = 1;
      break;
    }
    lv[i] = k;
    depth++;
    k = p;
  }
  r.depth = depth;
  long bad = bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
  /* OWNERS_DEPTH_MAX blocks, the first depth of them the names (a fixed
   * count unrolls; a name is read up to its NUL, and what follows it in
   * the block is left from a longer one). */
#pragma clang loop unroll(full)
  for (int i = 0; i < OWNERS_DEPTH_MAX; i++) {
    nm->s[0] = 0;
    if (i < depth)
      bpf_probe_read_kernel_str(nm->s, sizeof(nm->s), BPF_CORE_READ(lv[i], name));
    bad |= bpf_seq_write(ctx->meta->seq, nm->s, sizeof(nm->s));
  }
  /* A record that did not fit in the seq_file's buffer is dropped, and the
   * same file is shown again at the next read(): reported once written. */
  if (!bad)
    *seen = tgid ? tgid : 1;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
