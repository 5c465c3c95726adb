// SPDX-License-Identifier: GPL-2.0-only
/* The fields of a notification that say where a packet was (ebpf.h). */
#include "core/ebpf.h"
#include "common/cgroup.h"

#include <net/if.h>
#include <stdio.h>

size_t ebpf_where_fields(struct ebpf_nfield *f, struct ebpf_where *w,
                         uint32_t ifindex, uint32_t netns, uint32_t self_netns,
                         uint64_t cgroup, struct cgroup_tree *t,
                         bool *refreshed) {
  size_t n = 0;
  /* Interface names are those of collectd's own namespace. */
  if (ifindex && netns == self_netns && if_indextoname(ifindex, w->ifname))
    f[n++] = NF_STR("interface", w->ifname);
  if (ifindex)
    f[n++] = NF_UINT("ifindex", ifindex);
  if (netns)
    f[n++] = NF_UINT("netns", netns);
  if (cgroup_tree_name(t, cgroup, refreshed, w->cg))
    f[n++] = NF_STR("cgroup", w->cg);
  return n;
}

void ebpf_proto_str(unsigned proto, char out[8]) {
  if (proto == 6 || proto == 17)
    snprintf(out, 8, "%s", proto == 6 ? "tcp" : "udp");
  else
    snprintf(out, 8, "%u", proto);
}
