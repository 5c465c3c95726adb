// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's interfaces, user space's side: the Interface filter (the
 * index each configured name has now, kept in the BPF filter map) and the
 * names of the groups of GroupBy interface. Names belong to a network
 * namespace: the configured one, or with NetworkNamespace "all" collectd's
 * own for the filter and each group's own for its name. */
#ifndef EBPF_NSL_IFACES_H
#define EBPF_NSL_IFACES_H

#include "core/base.h"
#include "common/netns.h"

/* The Interface option. A name that names no interface is a condition of
 * the host, not of the configuration (a fleet snippet naming eth0 on a
 * host whose NIC is ens3, a container's veth not made yet): a WARNING at
 * start, and its packets are counted from the refresh at which it exists.
 * An interface made again (a new index, as a restarted container's veth)
 * is followed the same way. */
struct nsl_iffilter {
  char *const *names; /* the Interface values */
  size_t n;
  const struct netns *ns;
  unsigned *cur; /* [n]: the index in the map for each name; 0: none */
  int map_fd;    /* {u64 key -> u8} */
  bool warned_enter;
};
int nsl_iff_init(struct nsl_iffilter *f, char *const *names, size_t n,
                 const struct netns *ns);
/* The map's key of an index: with "all" the namespace (collectd's own,
 * where the names are looked up) is in the upper half. */
uint64_t nsl_iff_key(const struct nsl_iffilter *f, unsigned idx);
/* Look the names up again and bring the map in step; at_start says what
 * is missing as a WARNING, later refreshes say what changed. */
void nsl_iff_refresh(struct nsl_iffilter *f, bool at_start);
void nsl_iff_free(struct nsl_iffilter *f);

/* GroupBy interface: a group is (namespace inode << 32 | ifindex). Its
 * name, looked up at every refresh (an interface may have been renamed or
 * deleted since; in another namespace than collectd's own with "all", at
 * every NSL_IF_RENAME_READS-th), each in its namespace: collectd's own (or the configured
 * one) keeps plain names, another one's interfaces are
 * <namespace>_<interface> by the naming rule. */
struct nsl_if_group {
  uint64_t group;
  char name[EBPF_NAME_LEN];
  uint32_t hash; /* path_hash() of "<namespace>/<interface>" */
  bool gone;     /* no such interface or namespace any more */
};
struct nsl_ifnames {
  const struct netns *ns;
  struct nsl_if_group *v; /* sorted by group */
  size_t n;
  uint32_t refreshes;
};
/* Another namespace's interfaces are named again at least this often
 * (refreshes; see names_kept()). */
#define NSL_IF_RENAME_READS 10
/* Name these groups (in any order, repeats allowed). */
void nsl_ifnames_refresh(struct nsl_ifnames *t, const uint64_t *groups,
                         size_t n);
/* The group's entry of the last refresh, or NULL. */
const struct nsl_if_group *nsl_ifnames_find(const struct nsl_ifnames *t,
                                            uint64_t group);
void nsl_ifnames_free(struct nsl_ifnames *t);

#endif
