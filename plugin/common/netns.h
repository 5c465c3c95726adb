// SPDX-License-Identifier: GPL-2.0-only
/* Network namespaces, with one meaning for every feature's
 * NetworkNamespace option:
 *   absent or "host"  collectd's own namespace (the default everywhere)
 *   "all"             every namespace (for BPF filters; user-space lookups
 *                     that need one namespace use collectd's own)
 *   a name            /run/netns/<name>, as `ip netns add` makes them
 *   an absolute path  a namespace file, e.g. /proc/<pid>/ns/net
 * and the one way to enter a namespace for a lookup: setns() on the calling
 * thread, back to collectd's own after. */
#ifndef EBPF_NETNS_H
#define EBPF_NETNS_H

#include "core/base.h"

enum netns_kind { NETNS_HOST = 0, NETNS_ALL, NETNS_NAMED };

struct netns {
  enum netns_kind kind;
  uint32_t inum;  /* inode number (the BPF side's ns.inum); 0 for "all" */
  char path[256]; /* namespace file for NETNS_NAMED, else "" */
};

/* Resolve an option value (NULL: the default, "host"). A name or path that
 * names no namespace is a configuration error: ERROR naming the feature and
 * the key, -EINVAL. */
int netns_resolve(const char *opt, const char *feature, struct netns *out);

/* Inode number of collectd's own network namespace (0 if unknown). */
uint32_t netns_self_inum(void);

/* Open a NETNS_NAMED namespace's file: an fd (O_CLOEXEC) of the namespace
 * resolved at start, or a negative errno; -ESTALE (after one WARNING per
 * other namespace) when the path names another one now. */
int netns_open(const struct netns *ns);
/* Enter ns (NETNS_NAMED only; the others are collectd's own) on the calling
 * thread. *back is what netns_leave() needs, -1 when nothing was entered.
 * Returns 0 or a negative errno (after an ERROR). */
int netns_enter(const struct netns *ns, const char *feature, int *back);
/* The same without a log line, for a caller that says it itself (but for
 * one WARNING when the path names another namespace than at start:
 * -ESTALE). */
int netns_try_enter(const struct netns *ns, int *back);
/* Enter the namespace of an open namespace file descriptor. */
int netns_enter_fd(int fd, int *back);
void netns_leave(int back, const char *feature);

/* Namespaces by inode number (GroupBy interface with "all"): say which
 * are in use, once per read; the table is then exactly these. Each
 * namespace found at an earlier lookup costs one stat() of where it was
 * found; those not known (or no longer there) are looked for together, in
 * one walk of /run/netns and of the processes' /proc/<pid>/ns/net. No fd
 * is kept between lookups. */
void netns_lookup(const uint32_t *inums, size_t n);
/* Open a namespace of the last lookup: an fd (O_CLOEXEC) whose inode is
 * inum (checked on the fd), or -ENOENT; *name gets the /run/netns name
 * when it has one, else "". */
int netns_open_inum(uint32_t inum, char *name, size_t len);
/* Whether the last lookup found the namespace. */
bool netns_found(uint32_t inum);
void netns_lookup_free(void);

#endif
