// SPDX-License-Identifier: GPL-2.0-only
/* Who holds a socket, as the kernel sees it (bpf/common/owners_iter.bpf.c): one
 * pass of a BPF task_file iterator finds the processes holding the socket
 * inodes asked for, with their pid in the initial pid namespace, their pid
 * in their own, their comm and the full path of their cgroup2 directory
 * from the hierarchy's root, whatever pid or cgroup namespace they (or
 * collectd) live in. The iterator sees the processes of the pid namespace
 * collectd runs in and those below it: on a host, all of them. Needs
 * iter/task_file (5.8), CAP_BPF and CAP_PERFMON; without it the caller
 * falls back to /proc. */
#ifndef EBPF_OWNERS_H_PLUGIN
#define EBPF_OWNERS_H_PLUGIN

#include <stddef.h>
#include <stdint.h>

struct owner {
  uint64_t inode;
  int32_t pid;       /* in the initial pid namespace */
  int32_t ns_pid;    /* in the process's own pid namespace */
  uint32_t pid_ns;   /* that namespace's inode number */
  char comm[17];
  const char *cgroup; /* "/kubepods.slice/..."; "/" for the root */
};

/* Load the iterator. 0, or a negative errno with why set. */
int owners_init(char *why, size_t len);
int owners_ready(void);
void owners_free(void);

/* The iterator's output is read through a buffer of this size. */
#define OWNERS_BUF_LEN 65536

/* What a pass left out: one owner is named per socket, the first process
 * found holding it. */
struct owners_left {
  uint64_t fds;   /* further descriptors that refer to the sockets named
                   * (the named process's other ones too) */
  uint64_t procs; /* further processes holding them */
};

/* Call cb once for each inode of inodes[0..n) that a process holds, with
 * the first such process (in pid order); the owner's strings live until
 * cb returns. What was left out goes into *left (may be NULL). Returns the
 * number of inodes found, or a negative errno. Memory: a fixed buffer of
 * OWNERS_BUF_LEN and 9 bytes per inode, whatever the processes hold. */
int owners_find(const uint64_t *inodes, size_t n,
                void (*cb)(const struct owner *o, void *arg), void *arg,
                struct owners_left *left);

/* Read the iterator's records (bpf/common/owners_rec.h) from fd to its
 * end through a buffer of OWNERS_BUF_LEN (exposed for the unit test):
 * cb once for each inode of want[0..n) (sorted, unique), at its first
 * record; a record of an inode already reported or not asked for only
 * counts in left->fds. Returns the number reported, -EINVAL for a
 * malformed record or one cut short, or read(2)'s negative errno. */
int owners_drain(int fd, const uint64_t *want, size_t n,
                 void (*cb)(const struct owner *o, void *arg), void *arg,
                 struct owners_left *left);

#endif
