// SPDX-License-Identifier: GPL-2.0-only
/* What every part of the plugin needs, below all of them: logging, error
 * text, the global settings, config helpers and the naming rule. The
 * shared modules (loader, cgroup, netns) include this, not ebpf.h, so
 * that the arrows run one way: core and features -> modules -> base. */
#ifndef EBPF_BASE_H
#define EBPF_BASE_H

#include "core/collectd_api.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLUGIN_NAME "ebpf"
#define LOG_PREFIX "ebpf plugin: "

/* ---- strings from tenants: collectd-ebpf(5), "Strings from tenants" ----
 * A cgroup's name, a task's comm, an interface name, a path: whoever made
 * it chose its bytes. In a log line, a notification's message and its meta
 * data each such string is escaped by one rule, so that none can end a
 * line, forge one (a log line, a "Key: value" header of exec's
 * NotificationExec), steer a terminal or be invalid UTF-8 for a JSON
 * consumer:
 * - printable ASCII (0x20-0x7e) other than the backslash stays as it is;
 * - a valid UTF-8 character from U+00A0 on stays as it is, except the line
 *   and paragraph separators U+2028, U+2029 and the bidirectional controls
 *   U+200E, U+200F, U+202A-U+202E, U+2066-U+2069;
 * - the backslash becomes two, and every other byte (control characters,
 *   DEL, the bytes of C1 controls, of the characters above and of invalid,
 *   overlong or truncated UTF-8) \xHH, two lower-case hex digits.
 * Identifiers do not use it: their naming rule keeps only [a-z0-9_.]. */
/* The length of the character at s that stays as it is, 0 when the byte
 * s[0] is escaped (s[0] != 0). */
size_t ebpf_esc_keep(const char *s);
/* s escaped into out (NUL-terminated when len > 0), cut before the first
 * escape or character that does not fit whole. Returns the length of the
 * whole escaped string, like snprintf: >= len when it was cut. */
size_t ebpf_esc(char *out, size_t len, const char *s);
/* plugin_log() of the formatted line escaped as a whole: every log line of
 * the plugin goes through it (E_ERROR...), whatever it quotes. */
void ebpf_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define E_ERROR(...) ebpf_log(LOG_ERR, LOG_PREFIX __VA_ARGS__)
#define E_WARNING(...) ebpf_log(LOG_WARNING, LOG_PREFIX __VA_ARGS__)
#define E_NOTICE(...) ebpf_log(LOG_NOTICE, LOG_PREFIX __VA_ARGS__)
#define E_INFO(...) ebpf_log(LOG_INFO, LOG_PREFIX __VA_ARGS__)

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
/* The block a key is in, for messages: collectd hands the plugin copies
 * of its config items without their parent, so the block being parsed is
 * kept here (cfg_key_find() sets it) and named when ci has no parent. */
void cfg_in_block(const char *block);
const char *cfg_block_of(const oconfig_item_t *ci);
/* Render the values of ci as text (for messages). */
const char *cfg_values_str(const oconfig_item_t *ci, char *buf, size_t len);

/* ---- names: collectd-ebpf(5), "Names of cgroups" (a naming rule of the
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

/* An address of a notification: "v4:port" or "[v6]:port"; without
 * ":port" when the port is unknown. family AF_INET or AF_INET6, a in
 * network order (IPv4 in its first 4 bytes). */
#define EBPF_ADDR_LEN 56
void ebpf_addr_str(int family, const uint8_t *a, int port, bool has_port,
                   char out[EBPF_ADDR_LEN]);

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

/* qsort()/bsearch() order of uint64_t values (or of structs that start
 * with one). */
int cmp_u64(const void *a, const void *b);

#endif
