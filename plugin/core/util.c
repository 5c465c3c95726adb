// SPDX-License-Identifier: GPL-2.0-only
/* Config helpers, dispatch helpers and small utilities shared by all
 * features of the ebpf plugin. */
#include "core/ebpf.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ebpf_global ebpf_global;

const char *ebpf_strerror(int err, char *buf, size_t len) {
  if (err < 0)
    err = -err;
  /* glibc's %m is strerror_r underneath: thread safe, whichever strerror_r
   * variant the collectd headers' feature macros select. */
  int saved = errno;
  errno = err;
  snprintf(buf, len, "%m");
  errno = saved;
  return buf;
}

/* ---------------------------------------------------------------- config */

const char *cfg_values_str(const oconfig_item_t *ci, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = 0;
  if (ci->values_num == 0) {
    snprintf(buf, len, "(no value)");
    return buf;
  }
  for (int i = 0; i < ci->values_num && off < len; i++) {
    const oconfig_value_t *v = &ci->values[i];
    int n;
    const char *sep = i ? " " : "";
    if (v->type == OCONFIG_TYPE_STRING)
      n = snprintf(buf + off, len - off, "%s\"%s\"", sep, v->value.string);
    else if (v->type == OCONFIG_TYPE_NUMBER)
      n = snprintf(buf + off, len - off, "%s%g", sep, v->value.number);
    else if (v->type == OCONFIG_TYPE_BOOLEAN)
      n = snprintf(buf + off, len - off, "%s%s", sep,
                   v->value.boolean ? "true" : "false");
    else
      n = snprintf(buf + off, len - off, "%s?", sep);
    if (n < 0)
      break;
    off += (size_t)n;
  }
  return buf;
}

#define VALSTR(ci) cfg_values_str((ci), (char[256]){0}, 256)

static const char *cfg_block;

void cfg_in_block(const char *block) { cfg_block = block; }

const char *cfg_block_of(const oconfig_item_t *ci) {
  return ci->parent ? ci->parent->key : cfg_block ? cfg_block : "Plugin ebpf";
}

static int cfg_bad(const oconfig_item_t *ci, const char *want) {
  E_ERROR("invalid value %s for option \"%s\" in block <%s>: expected %s.",
          VALSTR(ci), ci->key, cfg_block_of(ci), want);
  return -1;
}

int cfg_bool(const oconfig_item_t *ci, bool *out) {
  if (ci->values_num != 1 || ci->children_num != 0)
    return cfg_bad(ci, "exactly one boolean (true or false)");
  const oconfig_value_t *v = &ci->values[0];
  if (v->type == OCONFIG_TYPE_BOOLEAN) {
    *out = v->value.boolean != 0;
    return 0;
  }
  /* collectd's own cf_util_get_boolean also takes these strings. */
  if (v->type == OCONFIG_TYPE_STRING) {
    const char *s = v->value.string;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
        !strcasecmp(s, "on")) {
      *out = true;
      return 0;
    }
    if (!strcasecmp(s, "false") || !strcasecmp(s, "no") ||
        !strcasecmp(s, "off")) {
      *out = false;
      return 0;
    }
  }
  return cfg_bad(ci, "exactly one boolean (true or false)");
}

int cfg_string(const oconfig_item_t *ci, char **out) {
  if (ci->values_num != 1 || ci->children_num != 0 ||
      ci->values[0].type != OCONFIG_TYPE_STRING ||
      ci->values[0].value.string[0] == 0)
    return cfg_bad(ci, "exactly one non-empty string");
  char *s = strdup(ci->values[0].value.string);
  if (!s) {
    E_ERROR("out of memory");
    return -1;
  }
  free(*out);
  *out = s;
  return 0;
}

void cfg_free_list(char **list) {
  if (!list)
    return;
  for (char **p = list; *p; p++)
    free(*p);
  free(list);
}

int cfg_strings_append(const oconfig_item_t *ci, char ***list, size_t *n) {
  if (ci->values_num < 1 || ci->children_num != 0)
    return cfg_bad(ci, "one or more non-empty strings");
  for (int i = 0; i < ci->values_num; i++)
    if (ci->values[i].type != OCONFIG_TYPE_STRING ||
        ci->values[i].value.string[0] == 0)
      return cfg_bad(ci, "one or more non-empty strings");
  char **l = realloc(*list, (*n + (size_t)ci->values_num + 1) * sizeof(*l));
  if (!l) {
    E_ERROR("out of memory");
    return -1;
  }
  *list = l;
  for (int i = 0; i < ci->values_num; i++) {
    l[*n] = strdup(ci->values[i].value.string);
    if (!l[*n]) {
      l[*n] = NULL;
      E_ERROR("out of memory");
      return -1;
    }
    (*n)++;
  }
  l[*n] = NULL;
  return 0;
}

int cfg_int_range(const oconfig_item_t *ci, long long min, long long max,
                  long long *out) {
  char want[96];
  snprintf(want, sizeof(want), "one integer from %lld to %lld", min, max);
  if (ci->values_num != 1 || ci->children_num != 0 ||
      ci->values[0].type != OCONFIG_TYPE_NUMBER)
    return cfg_bad(ci, want);
  double d = ci->values[0].value.number;
  if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
    return cfg_bad(ci, want);
  *out = (long long)d;
  return 0;
}

int cfg_seconds(const oconfig_item_t *ci, double min, double max,
                double *out) {
  char want[96];
  snprintf(want, sizeof(want), "a number of seconds from %g to %g", min, max);
  if (ci->values_num != 1 || ci->children_num != 0 ||
      ci->values[0].type != OCONFIG_TYPE_NUMBER)
    return cfg_bad(ci, want);
  double d = ci->values[0].value.number;
  if (!isfinite(d) || d < min || d > max)
    return cfg_bad(ci, want);
  *out = d;
  return 0;
}

int cfg_unknown(const oconfig_item_t *ci, const char *block) {
  E_ERROR("unknown option \"%s\" in block <%s>.", ci->key, block);
  return -1;
}

int cfg_once(const oconfig_item_t *ci, bool *seen) {
  if (*seen) {
    E_ERROR("option \"%s\" given more than once in block <%s>.", ci->key,
            cfg_block_of(ci));
    return -1;
  }
  *seen = true;
  return 0;
}

/* ---------------------------------------------------------------- names */

/* One character of an instance part: lower case, [a-z0-9_.], else '_'. */
static char name_char(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return (char)(c - 'A' + 'a');
  if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
      c == '_')
    return (char)c;
  return '_';
}

/* FNV-1a, 32 bits: stable across restarts, hosts and architectures. */
static uint32_t fnv1a32(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 16777619u;
  }
  return h;
}

int instance_from_path(const char *path, char out[EBPF_NAME_LEN]) {
  while (*path == '/')
    path++;
  size_t n = strlen(path);
  while (n && path[n - 1] == '/')
    n--;
  if (n < EBPF_NAME_LEN) {
    for (size_t i = 0; i < n; i++)
      out[i] = name_char((unsigned char)path[i]);
    out[n] = 0;
    return 0;
  }
  /* Too long: <head>..<hash>_<leaf>. The leaf (container scope, service)
   * is what an operator recognises; the hash of the whole path keeps two
   * paths that differ only in the middle apart. */
  const char *leaf = path + n;
  while (leaf > path && leaf[-1] != '/')
    leaf--;
  size_t nleaf = (size_t)(path + n - leaf);
  if (nleaf > EBPF_NAME_LEAF_MAX)
    nleaf = EBPF_NAME_LEAF_MAX;
  size_t nhead = EBPF_NAME_LEN - 1 - (2 + 8 + 1) - nleaf;
  size_t o = 0;
  for (size_t i = 0; i < nhead; i++)
    out[o++] = name_char((unsigned char)path[i]);
  snprintf(out + o, EBPF_NAME_LEN - o, "..%08x_", fnv1a32(path, n));
  o += 11;
  for (size_t i = 0; i < nleaf; i++)
    out[o++] = name_char((unsigned char)leaf[i]);
  out[o] = 0;
  return 1;
}

uint32_t path_hash(const char *path) {
  while (*path == '/')
    path++;
  size_t n = strlen(path);
  while (n && path[n - 1] == '/')
    n--;
  return fnv1a32(path, n);
}

int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_name_use(const void *a, const void *b) {
  const struct name_use *x = *(const struct name_use *const *)a;
  const struct name_use *y = *(const struct name_use *const *)b;
  int c = strcmp(x->name, y->name);
  if (c)
    return c;
  return x->hash < y->hash ? -1 : x->hash > y->hash;
}

size_t names_unshare(struct name_use *v, size_t n) {
  if (n < 2)
    return 0;
  struct name_use **o = malloc(n * sizeof(*o));
  if (!o)
    return 0;
  for (size_t i = 0; i < n; i++)
    o[i] = &v[i];
  qsort(o, n, sizeof(*o), cmp_name_use);
  /* Find the runs first: renaming one changes what the next compares to. */
  size_t changed = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    bool shared = false;
    while (j < n && strcmp(o[j]->name, o[i]->name) == 0) {
      shared |= o[j]->hash != o[i]->hash;
      j++;
    }
    if (shared)
      for (size_t k = i; k < j; k++)
        changed++;
    else
      for (size_t k = i; k < j; k++)
        o[k] = NULL;
    i = j;
  }
  for (size_t i = 0; i < n; i++) {
    if (!o[i])
      continue;
    char *name = o[i]->name;
    size_t len = strnlen(name, EBPF_NAME_LEN - 1);
    if (len > EBPF_NAME_LEN - 1 - 9)
      len = EBPF_NAME_LEN - 1 - 9;
    snprintf(name + len, EBPF_NAME_LEN - len, "_%08x", o[i]->hash);
  }
  free(o);
  return changed;
}

/* -------------------------------------------------------------- dispatch */

/* A bounded copy: snprintf("%s") was 60% of a read callback's time. */
static void name_copy(char dst[DATA_MAX_NAME_LEN], const char *src) {
  size_t n = src ? strnlen(src, DATA_MAX_NAME_LEN - 1) : 0;
  if (n) /* memcpy() from NULL is undefined even for 0 bytes */
    memcpy(dst, src, n);
  dst[n] = 0;
}

void vl_prepare(value_list_t *vl, const char *plugin,
                const char *plugin_instance) {
  *vl = (value_list_t)VALUE_LIST_INIT;
  name_copy(vl->plugin, plugin);
  name_copy(vl->plugin_instance, plugin_instance);
}

/* collectd copies the list (and fills host, time and interval in its copy),
 * so the caller's prepared identity stays as it was. */
static void vl_submit(value_list_t *vl, value_t v) {
  vl->values = &v;
  vl->values_len = 1;
  plugin_dispatch_values(vl);
  vl->values = NULL;
  vl->values_len = 0;
}

void vl_gauge(value_list_t *vl, const char *type, const char *type_instance,
              double v) {
  name_copy(vl->type, type);
  name_copy(vl->type_instance, type_instance);
  vl_submit(vl, (value_t){.gauge = v});
}

void vl_derive(value_list_t *vl, const char *type, const char *type_instance,
               int64_t v) {
  name_copy(vl->type, type);
  name_copy(vl->type_instance, type_instance);
  if (series_derive(vl, v)) /* a new series starts from 0 (series.c) */
    vl_submit(vl, (value_t){.derive = v});
}

void submit_gauge(const char *plugin, const char *plugin_instance,
                  const char *type, const char *type_instance, double v) {
  value_list_t vl;
  vl_prepare(&vl, plugin, plugin_instance);
  vl_gauge(&vl, type, type_instance, v);
}

void submit_derive(const char *plugin, const char *plugin_instance,
                   const char *type, const char *type_instance, int64_t v) {
  value_list_t vl;
  vl_prepare(&vl, plugin, plugin_instance);
  vl_derive(&vl, type, type_instance, v);
}

/* ---------------------------------------------------------- notifications */

/* Does a string value need quotes in a message? Empty, a space, a quote,
 * or a byte the escaping rule (base.h) escapes. */
static bool nf_needs_quotes(const char *s) {
  if (!*s)
    return true;
  while (*s) {
    size_t k = *s == ' ' || *s == '"' ? 0 : ebpf_esc_keep(s);
    if (!k)
      return true;
    s += k;
  }
  return false;
}

/* One "key=value" into buf (NUL-terminated, cut at len - 1). Returns the
 * length it has (or would have had). */
struct nf_out {
  char *buf;
  size_t len, o; /* o counts on past len - 1: the length needed */
};

static void nf_put(struct nf_out *w, char c) {
  if (w->len && w->o < w->len - 1)
    w->buf[w->o] = c;
  w->o++;
}

static size_t nf_render(char *buf, size_t len, const struct ebpf_nfield *f) {
  struct nf_out w = {.buf = buf, .len = len};
#define NF_PUT(c) nf_put(&w, (c))
  for (const char *k = f->key; *k; k++)
    NF_PUT(*k);
  NF_PUT('=');
  char num[40];
  const char *v = num;
  switch (f->type) {
  case EBPF_NF_STRING:
    v = f->v.s ? f->v.s : "";
    if (nf_needs_quotes(v)) {
      NF_PUT('"');
      /* The escaping rule (base.h), and \" for the quote. */
      for (const char *p = v; *p;) {
        size_t k = ebpf_esc_keep(p);
        if (*p == '"') {
          NF_PUT('\\');
          NF_PUT(*p++);
        } else if (k) {
          while (k--)
            NF_PUT(*p++);
        } else {
          char e[8];
          ebpf_esc(e, sizeof(e), (char[2]){*p++, 0});
          for (const char *q = e; *q; q++)
            NF_PUT(*q);
        }
      }
      NF_PUT('"');
      v = "";
    }
    break;
  case EBPF_NF_SIGNED:
    snprintf(num, sizeof(num), "%" PRId64, f->v.i);
    break;
  case EBPF_NF_UNSIGNED:
    snprintf(num, sizeof(num), "%" PRIu64, f->v.u);
    break;
  case EBPF_NF_DOUBLE:
    /* The fewest digits that read back as the same double: 2.104, not
     * 2.1040000000000001. */
    snprintf(num, sizeof(num), "%.15g", f->v.d);
    if (strtod(num, NULL) != f->v.d && isfinite(f->v.d))
      snprintf(num, sizeof(num), "%.17g", f->v.d);
    break;
  }
  for (; *v; v++)
    NF_PUT(*v);
#undef NF_PUT
  if (len)
    buf[w.o + 1 < len ? w.o : len - 1] = 0;
  return w.o;
}

size_t ebpf_notify_format(char *buf, size_t len, const struct ebpf_nfield *f,
                          size_t n) {
  static const char more[] = " ...";
  size_t o = 0, i;
  if (!len)
    return 0;
  buf[0] = 0;
  for (i = 0; i < n; i++) {
    char one[NOTIF_MAX_MSG_LEN];
    size_t flen = nf_render(one, sizeof(one), &f[i]);
    size_t need = (o ? 1 : 0) + flen;
    /* Room for this field, and for " ..." unless it is the last one. */
    size_t room = len - 1 - o;
    if (flen >= sizeof(one) || need > room ||
        (i + 1 < n && need + sizeof(more) - 1 > room))
      break;
    if (o)
      buf[o++] = ' ';
    memcpy(buf + o, one, flen);
    o += flen;
  }
  if (i < n && o + sizeof(more) <= len) {
    memcpy(buf + o, o ? more : more + 1, sizeof(more) - (o ? 0 : 1));
  } else {
    buf[o] = 0;
  }
  return i;
}

/* A string's meta data, escaped by the rule of base.h: exec's
 * NotificationExec writes it as a "key: value" header line, and JSON
 * consumers need valid UTF-8. */
static int nf_meta_string(notification_t *nt, const char *key,
                          const char *s) {
  char small[256];
  size_t need = ebpf_esc(small, sizeof(small), s);
  char *v = need < sizeof(small) ? small : malloc(need + 1);
  if (!v)
    return -1;
  if (v != small)
    ebpf_esc(v, need + 1, s);
  int err = plugin_notification_meta_add_string(nt, key, v);
  if (v != small)
    free(v);
  return err;
}

int ebpf_notify(int severity, const char *plugin, const char *plugin_instance,
                const char *type, const char *type_instance,
                const struct ebpf_nfield *f, size_t n) {
  return ebpf_notify_at(0, severity, plugin, plugin_instance, type,
                        type_instance, f, n);
}

int ebpf_notify_at(int64_t realtime_ns, int severity, const char *plugin,
                   const char *plugin_instance, const char *type,
                   const char *type_instance, const struct ebpf_nfield *f,
                   size_t n) {
  notification_t nt = {.severity = severity, .meta = NULL};
  struct timespec ts;
  if (realtime_ns > 0) {
    ts.tv_sec = (time_t)(realtime_ns / 1000000000);
    ts.tv_nsec = (long)(realtime_ns % 1000000000);
  } else
    clock_gettime(CLOCK_REALTIME, &ts);
  nt.time = TIME_T_TO_CDTIME_T(ts.tv_sec) +
            TIME_T_TO_CDTIME_T(ts.tv_nsec) / 1000000000;
  /* collectd fills in neither host nor time of a notification. */
  name_copy(nt.host, hostname_g);
  name_copy(nt.plugin, plugin);
  name_copy(nt.plugin_instance, plugin_instance);
  name_copy(nt.type, type);
  name_copy(nt.type_instance, type_instance);
  ebpf_notify_format(nt.message, sizeof(nt.message), f, n);
  int err = 0;
  for (size_t i = 0; i < n && !err; i++) {
    switch (f[i].type) {
    case EBPF_NF_STRING:
      err = nf_meta_string(&nt, f[i].key, f[i].v.s ? f[i].v.s : "");
      break;
    case EBPF_NF_SIGNED:
      err = plugin_notification_meta_add_signed_int(&nt, f[i].key, f[i].v.i);
      break;
    case EBPF_NF_UNSIGNED:
      err = plugin_notification_meta_add_unsigned_int(&nt, f[i].key,
                                                      f[i].v.u);
      break;
    case EBPF_NF_DOUBLE:
      err = plugin_notification_meta_add_double(&nt, f[i].key, f[i].v.d);
      break;
    }
  }
  if (err) {
    /* Out of memory: the message alone rather than meta data that lacks
     * some fields. */
    E_ERROR("%s: notification meta data could not be allocated; sent "
            "without it.",
            plugin);
    if (nt.meta)
      plugin_notification_meta_free(nt.meta);
    nt.meta = NULL;
  }
  int st = plugin_dispatch_notification(&nt);
  /* collectd's free logs an ERROR for NULL. */
  if (nt.meta)
    plugin_notification_meta_free(nt.meta);
  return st;
}

void ebpf_addr_str(int family, const uint8_t *a, int port, bool has_port,
                   char out[EBPF_ADDR_LEN]) {
  char ip[INET6_ADDRSTRLEN] = "?";
  inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip));
  if (!has_port)
    snprintf(out, EBPF_ADDR_LEN, family == AF_INET6 ? "[%s]" : "%s", ip);
  else
    snprintf(out, EBPF_ADDR_LEN, family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip,
             port);
}

bool ebpf_percpu_sum(int map_fd, const void *key, uint64_t *sum) {
  int ncpu = libbpf_num_possible_cpus();
  *sum = 0;
  if (ncpu <= 0)
    return false;
  uint64_t vals[ncpu];
  if (bpf_map_lookup_elem(map_fd, key, vals) != 0)
    return false;
  for (int c = 0; c < ncpu; c++)
    *sum += vals[c];
  return true;
}
