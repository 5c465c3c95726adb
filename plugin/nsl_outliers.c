// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's outlier records as notifications (nsl_outliers.h). */
#include "nsl_outliers.h"
#include "ebpf.h"
#include "netstacklat.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* One record of the ring buffer: one notification (fields: README,
 * "Notifications"). */
int nsl_outlier_notify(struct nsl_outlier_ctx *c, const void *data,
                       size_t len) {
  const struct nsl_outlier *o = data;
  if (len < sizeof(*o) || o->hook >= NSL_NHOOKS)
    return 0;
  struct ebpf_nfield f[12];
  size_t n = 0;
  char local[EBPF_ADDR_LEN], remote[EBPF_ADDR_LEN], ifname[IF_NAMESIZE], cg[EBPF_NAME_LEN];
  char comm[sizeof(o->comm) + 1], proto[8];
  f[n++] = NF_STR("hook", c->hook_names[o->hook]);
  f[n++] = NF_DBL("latency_s", o->latency_ns / 1e9);
  if (o->proto || o->family) {
    if (o->proto == 6 || o->proto == 17)
      snprintf(proto, sizeof(proto), "%s", o->proto == 6 ? "tcp" : "udp");
    else
      snprintf(proto, sizeof(proto), "%u", o->proto);
    f[n++] = NF_STR("proto", proto);
  }
  if (o->family == AF_INET || o->family == AF_INET6) {
    ebpf_addr_str(o->family, o->laddr, o->lport, o->has_ports, local);
    ebpf_addr_str(o->family, o->raddr, o->rport, o->has_ports, remote);
    f[n++] = NF_STR("local", local);
    /* An unconnected UDP socket has none (udp_socket_enqueued). */
    static const __u8 none[16];
    if (o->rport || memcmp(o->raddr, none, sizeof(none)))
      f[n++] = NF_STR("remote", remote);
  }
  if (o->pid) {
    memcpy(comm, o->comm, sizeof(o->comm));
    comm[sizeof(o->comm)] = 0;
    f[n++] = NF_INT("pid", o->pid);
    f[n++] = NF_STR("comm", comm);
  }
  if (o->hook >= NSL_TCP_SOCKET_ENQUEUED) /* the hooks with a socket */
    f[n++] = NF_UINT("queue_len", o->qlen);
  /* Interface names are those of collectd's own namespace. */
  if (o->ifindex && o->netns == c->self_netns &&
      if_indextoname(o->ifindex, ifname))
    f[n++] = NF_STR("interface", ifname);
  if (o->ifindex)
    f[n++] = NF_UINT("ifindex", o->ifindex);
  if (o->netns)
    f[n++] = NF_UINT("netns", o->netns);
  if (cgroup_tree_name(c->cgroups, o->cgroup, &c->cg_refreshed, cg))
    f[n++] = NF_STR("cgroup", cg);
  ebpf_notify_at((int64_t)o->time_ns, NOTIF_WARNING, c->plugin,
                 c->hook_names[o->hook], "", "outlier", f, n);
  c->notified++;
  return 0;
}
