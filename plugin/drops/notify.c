// SPDX-License-Identifier: GPL-2.0-only
/* drops' notifications, one per dropped packet; see notify.h. */
#define _GNU_SOURCE 1
#include "drops/notify.h"
#include "core/ebpf.h"
#include "common/cgroup.h"
#include "common/netns.h"
#include "common/ring.h"
#include "drops/drops.h"
#include "drops/names.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#define FEATURE "drops"

static struct ebpf_ring events; /* bounded reads: common/ring.h */
static int suppressed_map = -1; /* drops_events_suppressed */
static bool by_location;
static struct cgroup_tree cgroups;
static bool cg_refreshed;
static uint64_t notified;
static int64_t mono_to_real; /* CLOCK_REALTIME - CLOCK_MONOTONIC, this read */
static uint32_t self_netns;

/* One record: one WARNING notification (fields: collectd-ebpf(5),
 * "Dropped packets"). */
static int on_event(void *ctx, void *data, size_t len) {
  (void)ctx;
  const struct drops_event *e = data;
  if (len < sizeof(*e))
    return 0;
  struct ebpf_nfield f[10];
  size_t n = 0;
  char local[EBPF_ADDR_LEN], remote[EBPF_ADDR_LEN], proto[8];
  char rname[DATA_MAX_NAME_LEN];
  const char *reason = by_location
                           ? drops_location_name(e->cause)
                           : drops_reason_of(e->cause, rname, sizeof(rname));
  f[n++] = NF_STR("reason", reason);
  if (e->proto) {
    ebpf_proto_str(e->proto, proto);
    f[n++] = NF_STR("proto", proto);
  }
  if (e->family == AF_INET || e->family == AF_INET6) {
    ebpf_addr_str(e->family, e->laddr, e->lport, e->has_ports, local);
    ebpf_addr_str(e->family, e->raddr, e->rport, e->has_ports, remote);
    f[n++] = NF_STR("local", local);
    f[n++] = NF_STR("remote", remote);
  }
  struct ebpf_where where;
  n += ebpf_where_fields(f + n, &where, e->ifindex, e->netns, self_netns,
                         e->cgroup, &cgroups, &cg_refreshed);
  ebpf_notify_at((int64_t)e->time_ns + mono_to_real, NOTIF_WARNING, FEATURE,
                 reason, "", "drop", f, n);
  notified++;
  return 0;
}

int drops_notify_start(int events_fd, int suppressed_fd, bool location) {
  by_location = location;
  suppressed_map = suppressed_fd;
  int err = ebpf_ring_open(&events, events_fd, sizeof(struct drops_event),
                           on_event, NULL);
  if (err) {
    E_ERROR(FEATURE ": cannot read the ring buffer of DropNotifications: "
            "%s",
            ERRSTR(err));
    return err;
  }
  return 0;
}

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void drops_notify_read(void) {
  if (!events.rb)
    return;
  cg_refreshed = false;
  self_netns = netns_self_inum();
  mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  int64_t err = ebpf_ring_read(&events, ebpf_ring_budget_ns());
  if (err < 0)
    E_WARNING(FEATURE ": reading the drop records failed: %s",
              ERRSTR((int)err));
  else
    ebpf_ring_note(&events, FEATURE ": DropNotifications",
                   "the drops that find it full are counted in "
                   "notifications_suppressed");
  uint64_t suppressed;
  uint32_t zero = 0;
  ebpf_percpu_sum(suppressed_map, &zero, &suppressed);
  static value_list_t vl;
  vl_prepare(&vl, PLUGIN_NAME, FEATURE "-kfree_skb");
  vl_derive(&vl, "derive", "notifications", (int64_t)notified);
  vl_derive(&vl, "derive", "notifications_suppressed", (int64_t)suppressed);
}

void drops_notify_stop(void) {
  ebpf_ring_close(&events);
  suppressed_map = -1;
  cgroup_tree_free(&cgroups);
  notified = 0;
}
