// SPDX-License-Identifier: GPL-2.0-only
/* Shared declarations of the ebpf collectd plugin: features, config helpers,
 * dispatch helpers and logging. */
#ifndef EBPF_H
#define EBPF_H

#include "collectd_api.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLUGIN_NAME "ebpf"
#define LOG_PREFIX "ebpf plugin: "

#define E_ERROR(...) ERROR(LOG_PREFIX __VA_ARGS__)
#define E_WARNING(...) WARNING(LOG_PREFIX __VA_ARGS__)
#define E_NOTICE(...) NOTICE(LOG_PREFIX __VA_ARGS__)
#define E_INFO(...) INFO(LOG_PREFIX __VA_ARGS__)

/* strerror that is thread safe and never returns NULL. */
const char *ebpf_strerror(int err, char *buf, size_t len);
#define ERRSTR(e) ebpf_strerror((e), (char[128]){0}, 128)

/* ---- attach modes (AttachMode) ---- */
enum attach_mode {
  ATTACH_AUTO = 0,
  ATTACH_FENTRY,
  ATTACH_TRACEPOINT,
  ATTACH_KPROBE,
};

/* Settings of the <Plugin ebpf> block that every feature may read. */
struct ebpf_global {
  enum attach_mode attach_mode;
  bool bpf_stats;
  char *btf_path; /* NULL: the running kernel's /sys/kernel/btf/vmlinux */
};
extern struct ebpf_global ebpf_global;

/* ---- features ---- */
struct ebpf_feature {
  const char *block; /* config block name, e.g. "Pressure" */
  const char *name;  /* metric "plugin" field, e.g. "pressure" */
  /* Parse the block. Returns 0 or -1 (after logging an ERROR). */
  int (*config)(const oconfig_item_t *ci);
  /* Start. Returns 0 when running; a negative errno when the feature cannot
   * run on this host (it has already said why with one WARNING). */
  int (*init)(void);
  int (*read)(void);
  void (*shutdown)(void);
  /* Programs of this feature's loaded BPF object, for self-monitoring; may
   * be NULL. */
  struct bpf_object *(*bpf_object)(void);
};

extern const struct ebpf_feature feature_pressure;
extern const struct ebpf_feature feature_netstacklat;
extern const struct ebpf_feature feature_tcp_window;

/* ---- config helpers: each logs an ERROR naming the key and value ---- */
int cfg_bool(const oconfig_item_t *ci, bool *out);
/* A single string value; *out is replaced (freed first). */
int cfg_string(const oconfig_item_t *ci, char **out);
/* One or more string values, appended to *list (NULL-terminated array). */
int cfg_strings_append(const oconfig_item_t *ci, char ***list, size_t *n);
/* A number that must be an integer in [min, max]. */
int cfg_int_range(const oconfig_item_t *ci, long long min, long long max,
                  long long *out);
/* A positive number of seconds (fractions allowed) in [min, max]. */
int cfg_seconds(const oconfig_item_t *ci, double min, double max,
                double *out);
/* ERROR for a key that the block does not know. Always returns -1. */
int cfg_unknown(const oconfig_item_t *ci, const char *block);
/* Refuse a key given twice in one block; `seen` is the caller's flag. */
int cfg_once(const oconfig_item_t *ci, bool *seen);
void cfg_free_list(char **list);
/* Render the values of ci as text (for messages). */
const char *cfg_values_str(const oconfig_item_t *ci, char *buf, size_t len);

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

/* The message of a notification: the fields in order as `key=value`,
 * separated by one space. Numbers are decimal (a double in the fewest
 * digits that read back as the same value); a string is written as it is
 * unless it is empty or has a space, a '"', a '\\' or a byte outside
 * printable ASCII: then it is put in double quotes, with \" \\ and \xHH
 * escapes. collectd holds NOTIF_MAX_MSG_LEN - 1 characters: fields that do
 * not fit are left out whole, from the first that does not fit on, and
 * the message ends in " ..." (the meta data has them all). Returns the
 * number of fields written. */
size_t ebpf_notify_format(char *buf, size_t len, const struct ebpf_nfield *f,
                          size_t n);
/* Dispatch one notification (severity NOTIF_FAILURE, NOTIF_WARNING or
 * NOTIF_OKAY; time now, host collectd's Hostname) with the message above
 * and every field again as meta data of its type, named by its key.
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

/* ---- names: the README's "Names of cgroups" (a naming rule of the
 * project's design notes) ---- */
/* The naming rule of every group part (cgroup path, interface) of an
 * instance, shared by all features so that one cgroup has one name:
 * - lower case; '/' and every character outside [a-z0-9_.] become '_'
 *   (so the only '-' is the one we add as a separator);
 * - a path of at most EBPF_NAME_LEN - 1 (96) characters is that, whole;
 * - a longer one becomes <head>..<hash>_<leaf>: the leaf component (at most
 *   EBPF_NAME_LEAF_MAX characters of it), the path's first characters
 *   filling the rest, and the 8 hex digits of FNV-1a-32 of the whole path.
 * It always fits a collectd name field behind the longest prefix
 * ("udp_socket_enqueued-": 20 + 96 < DATA_MAX_NAME_LEN), is stable across
 * restarts and hosts, and two long paths that differ anywhere differ.
 * Returns 0 (whole) or 1 (shortened). */
#define EBPF_NAME_LEN 97
#define EBPF_NAME_LEAF_MAX 48
int instance_from_path(const char *path, char out[EBPF_NAME_LEN]);

/* The 32-bit hash of a path that names_unshare() appends: FNV-1a of the
 * path without leading and trailing '/', the hash the long names carry. */
uint32_t path_hash(const char *path);

/* Two sources never share a name: among the n names in use together (one
 * feature's groups), every name that sources of different path hashes
 * share becomes "<name>_<8 hex digits of its hash>" (the name cut to fit
 * EBPF_NAME_LEN), each member of the collision alike, so that the result
 * depends only on the set in use: the same on every restart and host.
 * Returns how many names were changed. */
struct name_use {
  char *name; /* EBPF_NAME_LEN */
  uint32_t hash;
};
size_t names_unshare(struct name_use *v, size_t n);

#endif
