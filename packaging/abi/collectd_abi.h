/* collectd-ebpf's own declarations of the part of collectd's 5.x plugin
 * interface that the plugin uses, for building where no collectd headers
 * are packaged (Fedora, EPEL). Written from the interface's documented
 * shape, not taken from collectd's sources; abi_check.c proves, against
 * Debian's collectd-dev, that every size, offset, constant and function
 * signature below is the one collectd 5.12 has.
 *
 * collectd has no versioned plugin ABI: what holds it together is that
 * these structures and functions have not changed throughout 5.x (6.0
 * replaces value_list_t with metric families). Keep this file to what
 * plugin/ uses.
 *
 * COLLECTD_ABI_PREFIX set: every type name gets that prefix and no function
 * is declared, so abi_check.c can include this next to the real headers. */
#ifndef COLLECTD_EBPF_ABI_H
#define COLLECTD_EBPF_ABI_H

#include <stddef.h>
#include <stdint.h>

#define COLLECTD_ABI_CAT2(a, b) a##b
#define COLLECTD_ABI_CAT(a, b) COLLECTD_ABI_CAT2(a, b)
#ifdef COLLECTD_ABI_PREFIX
#define CABI_(n) COLLECTD_ABI_CAT(COLLECTD_ABI_PREFIX, n)
#else
#define CABI_(n) n
#endif

/* ---- constants ---- */
#define COLLECTD_ABI_DATA_MAX_NAME_LEN 128 /* every name field of value_list_t */
#define COLLECTD_ABI_LOG_ERR 3             /* syslog's severities */
#define COLLECTD_ABI_LOG_WARNING 4
#define COLLECTD_ABI_LOG_NOTICE 5
#define COLLECTD_ABI_LOG_INFO 6
#define COLLECTD_ABI_LOG_DEBUG 7
#define COLLECTD_ABI_OCONFIG_TYPE_STRING 0 /* oconfig_value_t.type */
#define COLLECTD_ABI_OCONFIG_TYPE_NUMBER 1
#define COLLECTD_ABI_OCONFIG_TYPE_BOOLEAN 2
#define COLLECTD_ABI_CDTIME_SHIFT 30 /* cdtime_t: 2^-30 s units */
#define COLLECTD_ABI_NOTIF_MAX_MSG_LEN 256 /* notification_t.message */
#define COLLECTD_ABI_NOTIF_FAILURE 1       /* notification_t.severity */
#define COLLECTD_ABI_NOTIF_WARNING 2
#define COLLECTD_ABI_NOTIF_OKAY 4

/* ---- time ---- */
typedef uint64_t CABI_(cdtime_t);

/* ---- values ---- */
typedef unsigned long long CABI_(counter_t);
typedef double CABI_(gauge_t);
typedef int64_t CABI_(derive_t);
typedef uint64_t CABI_(absolute_t);

typedef union CABI_(value_u) {
  CABI_(counter_t) counter;
  CABI_(gauge_t) gauge;
  CABI_(derive_t) derive;
  CABI_(absolute_t) absolute;
} CABI_(value_t);

/* Opaque to plugins; only ever a pointer (VALUE_LIST_INIT sets it NULL). */
struct CABI_(meta_data_s);
typedef struct CABI_(meta_data_s) CABI_(meta_data_t);

/* One dispatch: values_len values of `type`, identified by
 * host/plugin-plugin_instance/type-type_instance. time and interval 0 mean
 * "now" and "the plugin's interval". */
typedef struct CABI_(value_list_s) {
  CABI_(value_t) *values;
  size_t values_len;
  CABI_(cdtime_t) time;
  CABI_(cdtime_t) interval;
  char host[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char plugin[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char plugin_instance[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char type[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char type_instance[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  CABI_(meta_data_t) *meta;
} CABI_(value_list_t);

/* ---- notifications ---- */
enum CABI_(notification_meta_type_e) {
  CABI_(NM_TYPE_STRING),
  CABI_(NM_TYPE_SIGNED_INT),
  CABI_(NM_TYPE_UNSIGNED_INT),
  CABI_(NM_TYPE_DOUBLE),
  CABI_(NM_TYPE_BOOLEAN)
};

/* One typed name/value pair of a notification, in a list that the
 * plugin_notification_meta_add_* functions allocate and append to, and
 * plugin_notification_meta_free frees. nm_string is a copy the list owns. */
typedef struct CABI_(notification_meta_s) {
  char name[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  enum CABI_(notification_meta_type_e) type;
  union {
    const char *nm_string;
    int64_t nm_signed_int;
    uint64_t nm_unsigned_int;
    double nm_double;
    _Bool nm_boolean;
  } nm_value;
  struct CABI_(notification_meta_s) *next;
} CABI_(notification_meta_t);

/* What plugin_dispatch_notification hands to every notification plugin
 * (synchronously, in the caller's thread). collectd fills in nothing:
 * time and host are the plugin's to set. */
typedef struct CABI_(notification_s) {
  int severity; /* COLLECTD_ABI_NOTIF_* */
  CABI_(cdtime_t) time;
  char message[COLLECTD_ABI_NOTIF_MAX_MSG_LEN];
  char host[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char plugin[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char plugin_instance[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char type[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  char type_instance[COLLECTD_ABI_DATA_MAX_NAME_LEN];
  CABI_(notification_meta_t) *meta;
} CABI_(notification_t);

/* ---- configuration tree (liboconfig) ---- */
typedef struct CABI_(oconfig_value_s) {
  union {
    char *string;
    double number;
    int boolean;
  } value;
  int type; /* COLLECTD_ABI_OCONFIG_TYPE_* */
} CABI_(oconfig_value_t);

typedef struct CABI_(oconfig_item_s) CABI_(oconfig_item_t);
struct CABI_(oconfig_item_s) {
  char *key;
  CABI_(oconfig_value_t) *values;
  int values_num;
  CABI_(oconfig_item_t) *parent;
  CABI_(oconfig_item_t) *children;
  int children_num;
};

/* ---- functions ----
 * F(return type, name, (parameter types)), with VL, OCI, NT and NM the
 * types of value_list_t, oconfig_item_t, notification_t and
 * notification_meta_t: abi_check.c expands the same list with collectd's
 * own types and assigns each function to a pointer of this type, so a
 * difference in any parameter is a compile error. */
#define COLLECTD_ABI_FUNCTIONS(F, VL, OCI, CDT, NT, NM)                        \
  F(int, plugin_register_complex_config, (const char *, int (*)(OCI *)))      \
  F(int, plugin_register_init, (const char *, int (*)(void)))                  \
  F(int, plugin_register_read, (const char *, int (*)(void)))                  \
  F(int, plugin_register_shutdown, (const char *, int (*)(void)))              \
  F(int, plugin_dispatch_values, (VL const *))                                 \
  F(void, plugin_log, (int, const char *, ...))                                \
  F(CDT, plugin_get_interval, (void))                                          \
  F(int, plugin_dispatch_notification, (NT const *))                           \
  F(int, plugin_notification_meta_add_string, (NT *, const char *,            \
                                               const char *))                  \
  F(int, plugin_notification_meta_add_signed_int, (NT *, const char *,        \
                                                   int64_t))                   \
  F(int, plugin_notification_meta_add_unsigned_int, (NT *, const char *,      \
                                                     uint64_t))                \
  F(int, plugin_notification_meta_add_double, (NT *, const char *, double))   \
  F(int, plugin_notification_meta_free, (NM *))

#ifndef COLLECTD_ABI_PREFIX
typedef int (*plugin_init_cb)(void);
typedef int (*plugin_shutdown_cb)(void);

#define COLLECTD_ABI_DECLARE(ret, name, args) ret name args;
COLLECTD_ABI_FUNCTIONS(COLLECTD_ABI_DECLARE, value_list_t, oconfig_item_t,
                       cdtime_t, notification_t, notification_meta_t)
#undef COLLECTD_ABI_DECLARE
/* The daemon's one data symbol the plugin reads: the host name collectd
 * puts into values (notifications get it from the plugin). A pointer since
 * collectd 5.9; the package requires 5.12. */
extern char *hostname_g;
/* plugin_log checks its format like printf. */
void plugin_log(int level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#define DATA_MAX_NAME_LEN COLLECTD_ABI_DATA_MAX_NAME_LEN
#ifndef LOG_ERR /* <syslog.h> has the same numbers */
#define LOG_ERR COLLECTD_ABI_LOG_ERR
#define LOG_WARNING COLLECTD_ABI_LOG_WARNING
#define LOG_NOTICE COLLECTD_ABI_LOG_NOTICE
#define LOG_INFO COLLECTD_ABI_LOG_INFO
#define LOG_DEBUG COLLECTD_ABI_LOG_DEBUG
#endif
#define OCONFIG_TYPE_STRING COLLECTD_ABI_OCONFIG_TYPE_STRING
#define OCONFIG_TYPE_NUMBER COLLECTD_ABI_OCONFIG_TYPE_NUMBER
#define OCONFIG_TYPE_BOOLEAN COLLECTD_ABI_OCONFIG_TYPE_BOOLEAN
#define NOTIF_MAX_MSG_LEN COLLECTD_ABI_NOTIF_MAX_MSG_LEN
#define NOTIF_FAILURE COLLECTD_ABI_NOTIF_FAILURE
#define NOTIF_WARNING COLLECTD_ABI_NOTIF_WARNING
#define NOTIF_OKAY COLLECTD_ABI_NOTIF_OKAY

#define VALUE_LIST_INIT {.values = NULL, .meta = NULL}
#define TIME_T_TO_CDTIME_T(t) ((cdtime_t)(t) << COLLECTD_ABI_CDTIME_SHIFT)
#define CDTIME_T_TO_DOUBLE(t)                                                  \
  ((double)(t) / (double)((cdtime_t)1 << COLLECTD_ABI_CDTIME_SHIFT))

#define ERROR(...) plugin_log(LOG_ERR, __VA_ARGS__)
#define WARNING(...) plugin_log(LOG_WARNING, __VA_ARGS__)
#define NOTICE(...) plugin_log(LOG_NOTICE, __VA_ARGS__)
#define INFO(...) plugin_log(LOG_INFO, __VA_ARGS__)
#define DEBUG(...) plugin_log(LOG_DEBUG, __VA_ARGS__)

/* What collectd.h brings along and plugin sources may rely on. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#endif /* !COLLECTD_ABI_PREFIX */

#endif
