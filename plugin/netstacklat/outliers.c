// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's outlier records as notifications (outliers.h). */
#include "netstacklat/outliers.h"
#include "core/ebpf.h"
#include "netstacklat/netstacklat.h"

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
  char local[EBPF_ADDR_LEN], remote[EBPF_ADDR_LEN];
  struct ebpf_where where;
  char comm[sizeof(o->comm) + 1], proto[8];
  f[n++] = NF_STR("hook", c->hook_names[o->hook]);
  f[n++] = NF_DBL("latency_s", o->latency_ns / 1e9);
  if (o->proto || o->family) {
    ebpf_proto_str(o->proto, proto);
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
  n += ebpf_where_fields(f + n, &where, o->ifindex, o->netns, c->self_netns,
                         o->cgroup, c->cgroups, &c->cg_refreshed);
  ebpf_notify_at((int64_t)o->time_ns, NOTIF_WARNING, c->plugin,
                 c->hook_names[o->hook], "", "outlier", f, n);
  c->notified++;
  return 0;
}
