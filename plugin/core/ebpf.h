// SPDX-License-Identifier: GPL-2.0-only
/* The plugin core's declarations for its features: the feature table,
 * dispatch helpers and notifications. Logging, config helpers and names
 * are in base.h, below everything. */
#ifndef EBPF_H
#define EBPF_H

#include "core/base.h"
#include "core/collectd_api.h"
#include "core/keys.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- features ---- */
struct rx_client;

struct ebpf_feature {
  const char *block; /* config block name, e.g. "Pressure" */
  const char *name;  /* metric "plugin" field, e.g. "pressure" */
  /* Parse the block. Returns 0 or -1 (after logging an ERROR). */
  int (*config)(const oconfig_item_t *ci);
  /* Start. Returns 0 when running; a negative errno when the feature cannot
   * run on this host (it has already said why with one WARNING). A feature
   * with handlers on the receive path joins it here (rx_join()). */
  int (*init)(void);
  /* Optional: after every init, once the receive path (plugin/rx/) is
   * loaded for the features that joined it: the feature takes what it got.
   * Same returns as init (the feature has shut itself down on failure). */
  int (*start)(void);
  int (*read)(void);
  void (*shutdown)(void);
  /* Programs of this feature's loaded BPF object, for self-monitoring; may
   * be NULL. */
  struct bpf_object *(*bpf_object)(void);
  /* The block's keys (core/keys.h): what the docs are held to. */
  const struct cfg_block *keys;
  /* The feature as a client of the receive path, or NULL: the core hands
   * every feature's to rx_start(), which opens the object with the
   * clients that did not join told so (their maps at their smallest). */
  struct rx_client *rx;
};

/* <Plugin ebpf>'s own keys (AttachMode, BPFStats, BTFPath). */
extern const struct cfg_block ebpf_global_keys;

extern const struct ebpf_feature feature_pressure;
extern const struct ebpf_feature feature_netstacklat;
extern const struct ebpf_feature feature_tcp_window;
extern const struct ebpf_feature feature_drops;

/* ---- dispatch helpers ---- */
void submit_gauge(const char *plugin, const char *plugin_instance,
                  const char *type, const char *type_instance, double v);
void submit_derive(const char *plugin, const char *plugin_instance,
                   const char *type, const char *type_instance, int64_t v);
/* A source's value list, its plugin and plugin_instance filled once
 * (vl_prepare, at init or when the source is named); vl_gauge/vl_derive then
 * copy only the type and type_instance (strings prepared once by the
 * caller) and the value, and dispatch. */
void vl_prepare(value_list_t *vl, const char *plugin,
                const char *plugin_instance);
void vl_gauge(value_list_t *vl, const char *type, const char *type_instance,
              double v);
void vl_derive(value_list_t *vl, const char *type, const char *type_instance,
               int64_t v);

/* The sum over the CPUs of a per-CPU map's u64 value at key (the
 * counters the BPF programs write without a shared line): false when it
 * cannot be read. */
bool ebpf_percpu_sum(int map_fd, const void *key, uint64_t *sum);

/* New DERIVE series start from 0 (core/series.c). vl_derive() asks
 * series_derive() (vl's identity filled): true, dispatch v as usual;
 * false, it was taken care of. The core's read brackets every read with
 * series_read_begin() and series_read_end(), and its shutdown forgets all
 * (series_reset()). A feature that renames a source whose counters go on
 * under the new name calls series_renamed() with the new identity
 * (vl_prepare()'d) before its values: they get no 0. */
bool series_derive(value_list_t *vl, int64_t v);
void series_renamed(const value_list_t *vl);
void series_read_begin(void);
void series_read_end(void);
void series_reset(void);

/* ---- notifications ---- */
/* One field of a notification: a key ([a-z0-9_]) and a typed value. The
 * same list gives the message and the meta data, so they always agree. */
enum ebpf_nfield_type {
  EBPF_NF_STRING,
  EBPF_NF_SIGNED,
  EBPF_NF_UNSIGNED,
  EBPF_NF_DOUBLE,
};
struct ebpf_nfield {
  const char *key;
  enum ebpf_nfield_type type;
  union {
    const char *s;
    int64_t i;
    uint64_t u;
    double d;
  } v;
};
#define NF_STR(k, x)                                                           \
  ((struct ebpf_nfield){.key = (k), .type = EBPF_NF_STRING, .v.s = (x)})
#define NF_INT(k, x)                                                           \
  ((struct ebpf_nfield){.key = (k), .type = EBPF_NF_SIGNED, .v.i = (x)})
#define NF_UINT(k, x)                                                          \
  ((struct ebpf_nfield){.key = (k), .type = EBPF_NF_UNSIGNED, .v.u = (x)})
#define NF_DBL(k, x)                                                           \
  ((struct ebpf_nfield){.key = (k), .type = EBPF_NF_DOUBLE, .v.d = (x)})

/* The fields that say where a packet was, in this order: interface (its
 * name, when netns is collectd's own, self_netns), ifindex, netns (each
 * when known, non-zero) and cgroup (the cgroup with that id, named by the
 * naming rule; the tree t is walked again on a miss, once per read:
 * *refreshed). Appended to f (room for 4); returns how many. The strings
 * live in *w. */
struct cgroup_tree;
struct ebpf_where {
  char ifname[16];  /* IF_NAMESIZE */
  char cg[EBPF_NAME_LEN];
};
size_t ebpf_where_fields(struct ebpf_nfield *f, struct ebpf_where *w,
                         uint32_t ifindex, uint32_t netns, uint32_t self_netns,
                         uint64_t cgroup, struct cgroup_tree *t,
                         bool *refreshed);

/* The protocol of a notification: "tcp", "udp", or the IP protocol number. */
void ebpf_proto_str(unsigned proto, char out[8]);

/* The message of a notification: the fields in order as `key=value`,
 * separated by one space. Numbers are decimal (a double in the fewest
 * digits that read back as the same value); a string is written as it is
 * unless it is empty or has a space, a '"', a '\\' or a byte that the
 * escaping rule of base.h escapes: then it is put in double quotes, with
 * \" for the quote and that rule's escapes. collectd holds NOTIF_MAX_MSG_LEN - 1 characters: fields that do
 * not fit are left out whole, from the first that does not fit on, and
 * the message ends in " ..." (the meta data has them all). Returns the
 * number of fields written. */
size_t ebpf_notify_format(char *buf, size_t len, const struct ebpf_nfield *f,
                          size_t n);
/* Dispatch one notification (severity NOTIF_FAILURE, NOTIF_WARNING or
 * NOTIF_OKAY; time now, host collectd's Hostname) with the message above
 * and every field again as meta data of its type, named by its key (a
 * string escaped by the rule of base.h, without quotes).
 * Returns plugin_dispatch_notification's status (-1 also when no
 * notification plugin is loaded). */
int ebpf_notify(int severity, const char *plugin, const char *plugin_instance,
                const char *type, const char *type_instance,
                const struct ebpf_nfield *f, size_t n);
/* The same with the time of the event (CLOCK_REALTIME ns; 0: now). */
int ebpf_notify_at(int64_t realtime_ns, int severity, const char *plugin,
                   const char *plugin_instance, const char *type,
                   const char *type_instance, const struct ebpf_nfield *f,
                   size_t n);

#endif
