// SPDX-License-Identifier: GPL-2.0
/* netstacklat's filters (NetworkNamespace, Interface, MinQueueLength,
 * Cgroup) and the group of an event (GroupBy cgroup or interface), with
 * their maps; and the handlers that apply them before record(): packet_hook()
 * for the packet hooks, socket_ok() and socket_skb_hook() for the socket
 * hooks. Each filter is a rodata switch: the verifier prunes those off.
 *
 * Included by netstacklat.bpf.c, after what it uses from there: the
 * settings targ_netns, targ_filter_ifindex, targ_filter_cgroup,
 * targ_groupby, targ_min_qlen, targ_cg_storage, targ_cg_index_mask,
 * targ_anc_n, targ_anc_level, anc_id and cg_filter_gen, and RD(); and after
 * record.h (record(), tstamp_not_rx()). */
#ifndef NSL_FILTERS_H
#define NSL_FILTERS_H

/* The Interface option's interfaces: key ifindex, or with NetworkNamespace
 * "all" (netns inode << 32 | ifindex), since every namespace numbers its
 * interfaces from 1. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u64);
  __type(value, __u8);
} netstacklat_ifindex_filter SEC(".maps");

/* cgroup ids of the configured Cgroup paths and of every cgroup below them;
 * max_entries is set before load. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, __u8);
} netstacklat_cgroup_filter SEC(".maps");

/* The Cgroup filter's cgroup storage: see targ_cg_storage. */
struct {
  __uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct nsl_cg_state);
} netstacklat_cgroup_state SEC(".maps");

/* GroupBy cgroup: the group index, a direct-mapped table from cgroup id to
 * slot (struct nsl_cg_index), written by user space when it gives a slot
 * and cleared when it frees it. A cgroup is at nsl_cg_index_pos() or the
 * position after; one without an entry goes to the group table. A plain
 * array: the verifier inlines its lookups, so finding a group costs no
 * helper call, on every kernel and flavour. max_entries (a power of two) is
 * set before load (1 when unused). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nsl_cg_index);
} netstacklat_cgroup_index SEC(".maps");

/* ---- filters, cheapest first; each compiled out when off ---- */

static __always_inline bool netns_ok_sk(const struct sock *sk,
                                        const bool probed) {
  if (!targ_netns)
    return true;
  return RD(probed, sk, __sk_common.skc_net.net, ns.inum) == targ_netns;
}

static __always_inline bool netns_ok_dev(const struct sk_buff *skb,
                                         const bool probed) {
  if (!targ_netns)
    return true;
  return RD(probed, skb, dev, nd_net.net, ns.inum) == targ_netns;
}

static __always_inline bool ifindex_in(__u32 ifindex, __u32 netns_inum) {
  __u64 key = targ_netns ? ifindex : ((__u64)netns_inum << 32) | ifindex;
  return bpf_map_lookup_elem(&netstacklat_ifindex_filter, &key) != NULL;
}

/* The Interface filter, on the device's (or the socket's) namespace: only
 * with NetworkNamespace "all" is the namespace read (one namespace is
 * checked by netns_ok_*, and the verifier prunes the read). */
static __always_inline bool ifindex_ok_dev(const struct sk_buff *skb,
                                           __u32 ifindex, const bool probed) {
  if (!targ_filter_ifindex)
    return true;
  return ifindex_in(ifindex, targ_netns ? 0
                                        : RD(probed, skb, dev, nd_net.net,
                                             ns.inum));
}

static __always_inline bool ifindex_ok_sk(const struct sock *sk,
                                          __u32 ifindex, const bool probed) {
  if (!targ_filter_ifindex)
    return true;
  return ifindex_in(ifindex,
                    targ_netns ? 0
                               : RD(probed, sk, __sk_common.skc_net.net,
                                    ns.inum));
}

static __always_inline __u64 sk_cgroup_id(const struct sock *sk,
                                          const bool probed) {
  return RD(probed, sk, sk_cgrp_data.cgroup, kn, id);
}

/* Cgroup filter with cgroup storage: is the cgroup at or below a
 * configured one? st: its storage (NULL: none yet). A configured cgroup is
 * marked by user space; any other keeps the decision derived here, valid
 * while cg_filter_gen has not moved. Without one, walk up the ancestors to
 * the first that is marked or has a valid decision, and keep the result:
 * a cgroup made after start is decided on its first event, and later
 * events cost the one lookup. Deeper than NSL_CG_MAXWALK levels below any
 * decided cgroup, the event is left out and nothing is kept. (kprobe
 * programs cannot use cgroup storage: they keep the hash.) */
static __always_inline bool cg_storage_in(struct cgroup *cgrp,
                                          struct nsl_cg_state *st) {
  __u32 gen = cg_filter_gen;
  if (st && st->mark)
    return true;
  if (st && st->gen == gen)
    return st->in;
  struct cgroup *a = cgrp;
  __u32 in = 0, found = 0;
  for (int i = 0; i < NSL_CG_MAXWALK; i++) {
    struct cgroup_subsys_state *p = a->self.parent;
    if (!p) { /* the root, never configured: out */
      found = 1;
      break;
    }
    a = p->cgroup;
    struct nsl_cg_state *t =
        bpf_cgrp_storage_get(&netstacklat_cgroup_state, a, 0, 0);
    if (t && t->mark) {
      in = found = 1;
      break;
    }
    if (t && t->gen == gen) {
      in = t->in;
      found = 1;
      break;
    }
  }
  if (!found)
    return false;
  if (!st)
    st = bpf_cgrp_storage_get(&netstacklat_cgroup_state, cgrp, 0,
                              BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (st) {
    st->in = in;
    st->gen = gen;
  }
  return in;
}

/* Cgroup filter by ancestors: see targ_anc_n. The configured levels come
 * deepest first; walk up from the socket's cgroup through self.parent to
 * each level in turn and compare the id there: a load per level walked, 3
 * per configured cgroup compared, no helper. (struct cgroup's ancestors[]
 * would give the ancestor at a level in one load, but the verifier walks
 * a trailing array of a kernel struct only for int or struct elements, and
 * ancestors[] holds pointers: "struct cgroup doesn't have field at offset
 * 2232" on 6.18.) More than NSL_CG_MAXWALK levels below a configured
 * cgroup, the event is left out, as with cgroup storage. The verifier
 * removes the iterations at and past targ_anc_n. */
static __always_inline bool cg_anc_in(struct cgroup *cgrp) {
  __u64 cur = (__u32)cgrp->level;
  struct cgroup_subsys_state *css = &cgrp->self;
#pragma unroll
  for (int k = 0; k < NSL_CG_ANC_MAX; k++) {
    if (k >= targ_anc_n)
      break;
    __u64 l = targ_anc_level[k];
    if (cur < l)
      continue; /* the socket's cgroup is above it */
    __u64 d = cur - l; /* levels up to the configured one's */
    if (d > NSL_CG_MAXWALK)
      return false; /* and further still from the next ones */
#pragma nounroll
    for (__u64 i = 0; i < d && i < NSL_CG_MAXWALK; i++)
      css = css->parent;
    cur = l;
    if (css->cgroup->kn->id == anc_id[k])
      return true;
  }
  return false;
}

/* GroupBy cgroup: the group handed to hist_for(): the cgroup id, with 1 +
 * its slot in the bits above NSL_SLOT_SHIFT when the group index has it
 * (two inlined array lookups, no helper call). (A kernfs id is the inode
 * number in its low 32 bits and a generation, bumped when the 31-bit inode
 * numbers wrap, above: it would need 2^47 cgroups made to reach bit 48.)
 * An entry is written by user space while the program may read it: a torn
 * read pairs an id with another cgroup's slot at worst, and hist_for()'s
 * owner check sends that event to the group table. */
static __always_inline __u64 nsl_cg_group(__u64 id) {
  __u32 pos = nsl_cg_index_pos(id, targ_cg_index_mask);
  struct nsl_cg_index *e = bpf_map_lookup_elem(&netstacklat_cgroup_index, &pos);
  if (e && e->id == id && e->slot)
    return (__u64)e->slot << NSL_SLOT_SHIFT | (id & NSL_SLOT_ID_MASK);
  pos = (pos + 1) & targ_cg_index_mask;
  e = bpf_map_lookup_elem(&netstacklat_cgroup_index, &pos);
  if (e && e->id == id && e->slot)
    return (__u64)e->slot << NSL_SLOT_SHIFT | (id & NSL_SLOT_ID_MASK);
  return id;
}

/* GroupBy interface with NetworkNamespace "all": ifindexes repeat across
 * namespaces (every one has its lo at 1), so the namespace's inode number
 * goes into the group's upper half. With one namespace it is the ifindex
 * alone, and the verifier prunes the read. */
static __always_inline __u64 if_group(__u32 ifindex, __u32 netns_inum) {
  return targ_netns ? ifindex : ((__u64)netns_inum << 32) | ifindex;
}

/* A packet seen before socket lookup (ip_start, tcp_start, udp_start). */
static __always_inline void packet_hook(__u32 hook, const struct sk_buff *skb,
                                        __u32 ifindex, const bool probed) {
  if (!netns_ok_dev(skb, probed) || !ifindex_ok_dev(skb, ifindex, probed))
    return;
  __u64 group = 0;
  if (targ_groupby == NSL_GROUP_INTERFACE)
    group = if_group(ifindex, targ_netns ? 0
                                         : RD(probed, skb, dev, nd_net.net,
                                              ns.inum));
  __u64 t = RD(probed, skb, tstamp);
  record(hook, t, t ? tstamp_not_rx(skb, probed) : 0, group, NULL, skb, 0);
}

/* Socket-level filters; returns false to drop the event. */
static __always_inline bool socket_ok(__u32 hook, const struct sock *sk,
                                      __u32 ifindex, __u64 *group,
                                      const bool probed) {
  if (!netns_ok_sk(sk, probed) || !ifindex_ok_sk(sk, ifindex, probed))
    return false;
  if (targ_min_qlen &&
      RD(probed, sk, sk_receive_queue.qlen) < targ_min_qlen)
    return false;
  __u64 cg = 0;
  if (!targ_filter_cgroup && targ_groupby != NSL_GROUP_CGROUP) {
    /* no cgroup option: nothing to read */
  } else if (targ_anc_n && !probed && targ_groupby != NSL_GROUP_CGROUP) {
    if (!cg_anc_in(sk->sk_cgrp_data.cgroup))
      return false;
  } else if (targ_cg_storage && !probed && targ_filter_cgroup) {
    struct cgroup *cgrp = sk->sk_cgrp_data.cgroup;
    struct nsl_cg_state *st =
        bpf_cgrp_storage_get(&netstacklat_cgroup_state, cgrp, 0, 0);
    if (!cg_storage_in(cgrp, st))
      return false;
    if (targ_groupby == NSL_GROUP_CGROUP)
      cg = cgrp->kn->id;
  } else {
    cg = sk_cgroup_id(sk, probed);
    if (targ_filter_cgroup &&
        !bpf_map_lookup_elem(&netstacklat_cgroup_filter, &cg))
      return false;
  }
  *group = 0;
  if (targ_groupby == NSL_GROUP_CGROUP)
    *group = nsl_cg_group(cg);
  else if (targ_groupby == NSL_GROUP_INTERFACE)
    *group = if_group(ifindex, targ_netns ? 0
                                          : RD(probed, sk,
                                               __sk_common.skc_net.net,
                                               ns.inum));
  return true;
}

static __always_inline void socket_skb_hook(__u32 hook, const struct sock *sk,
                                            const struct sk_buff *skb,
                                            const bool probed) {
  __u64 group;
  if (!socket_ok(hook, sk, RD(probed, skb, skb_iif), &group, probed))
    return;
  __u64 t = RD(probed, skb, tstamp);
  record(hook, t, t ? tstamp_not_rx(skb, probed) : 0, group, sk, skb, 0);
}

#endif /* NSL_FILTERS_H */
