/* Shared between bpf/common/owners_iter.bpf.c and plugin/common/owners.c: which process
 * holds a socket, and in which cgroup, as the kernel sees it. */
#ifndef EBPF_OWNERS_REC_H
#define EBPF_OWNERS_REC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define OWNERS_WANT_MAX 4096 /* socket inodes looked for in one pass */
#define OWNERS_DEPTH_MAX 16  /* cgroup levels named, from the leaf up */
#define OWNERS_NAME_MAX 256  /* a cgroup directory name, with its NUL */

/* One record per socket user space looks for, from the first process found
 * holding it (further descriptors and processes are only counted): this
 * header, then OWNERS_DEPTH_MAX blocks of OWNERS_NAME_MAX bytes, the
 * first `depth` of them the names of the process's cgroup2 directories
 * from the leaf up to (not including) the root, each up to its NUL;
 * `truncated` when the cgroup is deeper than OWNERS_DEPTH_MAX. */
struct owners_rec {
  __u64 inode;  /* the socket's inode number */
  __u64 cgid;   /* the cgroup2 id (its kernfs id) */
  __u32 tgid;   /* the process id in the initial pid namespace */
  __u32 pid_ns; /* the inode number of the process's pid namespace */
  __u32 ns_pid; /* the process id in its own pid namespace */
  __u16 depth;
  __u16 truncated;
  char comm[16];
};

/* A whole record: the header and its name blocks (4,144 bytes). */
#define OWNERS_REC_LEN \
  (sizeof(struct owners_rec) + OWNERS_DEPTH_MAX * OWNERS_NAME_MAX)

#endif
