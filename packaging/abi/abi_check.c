/* Proves packaging/abi/collectd_abi.h against collectd's real headers
 * (Debian's collectd-dev): every struct size, field offset and field size,
 * every constant, and every function signature the plugin uses. Compiling
 * is the test (_Static_assert, and -Werror on incompatible pointer types);
 * running prints one PASS line per group for tests/run. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#define COLLECTD_ABI_PREFIX own_
#include "collectd_abi.h"

#include <stdio.h>

#define SAME_SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), "size of " #a)
#define SAME_FIELD(own, real, f)                                               \
  _Static_assert(offsetof(own, f) == offsetof(real, f), "offset of " #f);      \
  _Static_assert(sizeof(((own *)0)->f) == sizeof(((real *)0)->f),              \
                 "size of " #f)

/* types */
SAME_SIZE(own_cdtime_t, cdtime_t);
SAME_SIZE(own_counter_t, counter_t);
SAME_SIZE(own_gauge_t, gauge_t);
SAME_SIZE(own_derive_t, derive_t);
SAME_SIZE(own_absolute_t, absolute_t);
_Static_assert((own_derive_t)-1 < 0 && (derive_t)-1 < 0, "derive_t signed");
_Static_assert((own_absolute_t)-1 > 0 && (absolute_t)-1 > 0, "absolute_t unsigned");
_Static_assert((own_cdtime_t)-1 > 0 && (cdtime_t)-1 > 0, "cdtime_t unsigned");

SAME_SIZE(own_value_t, value_t);
SAME_FIELD(own_value_t, value_t, counter);
SAME_FIELD(own_value_t, value_t, gauge);
SAME_FIELD(own_value_t, value_t, derive);
SAME_FIELD(own_value_t, value_t, absolute);

SAME_SIZE(own_value_list_t, value_list_t);
SAME_FIELD(own_value_list_t, value_list_t, values);
SAME_FIELD(own_value_list_t, value_list_t, values_len);
SAME_FIELD(own_value_list_t, value_list_t, time);
SAME_FIELD(own_value_list_t, value_list_t, interval);
SAME_FIELD(own_value_list_t, value_list_t, host);
SAME_FIELD(own_value_list_t, value_list_t, plugin);
SAME_FIELD(own_value_list_t, value_list_t, plugin_instance);
SAME_FIELD(own_value_list_t, value_list_t, type);
SAME_FIELD(own_value_list_t, value_list_t, type_instance);
SAME_FIELD(own_value_list_t, value_list_t, meta);

SAME_SIZE(own_oconfig_value_t, oconfig_value_t);
SAME_FIELD(own_oconfig_value_t, oconfig_value_t, value);
SAME_FIELD(own_oconfig_value_t, oconfig_value_t, value.string);
SAME_FIELD(own_oconfig_value_t, oconfig_value_t, value.number);
SAME_FIELD(own_oconfig_value_t, oconfig_value_t, value.boolean);
SAME_FIELD(own_oconfig_value_t, oconfig_value_t, type);

SAME_SIZE(own_oconfig_item_t, oconfig_item_t);
SAME_FIELD(own_oconfig_item_t, oconfig_item_t, key);
SAME_FIELD(own_oconfig_item_t, oconfig_item_t, values);
SAME_FIELD(own_oconfig_item_t, oconfig_item_t, values_num);
SAME_FIELD(own_oconfig_item_t, oconfig_item_t, parent);
SAME_FIELD(own_oconfig_item_t, oconfig_item_t, children);
SAME_FIELD(own_oconfig_item_t, oconfig_item_t, children_num);

SAME_SIZE(own_notification_meta_t, notification_meta_t);
SAME_FIELD(own_notification_meta_t, notification_meta_t, name);
SAME_FIELD(own_notification_meta_t, notification_meta_t, type);
SAME_FIELD(own_notification_meta_t, notification_meta_t, nm_value);
SAME_FIELD(own_notification_meta_t, notification_meta_t, nm_value.nm_string);
SAME_FIELD(own_notification_meta_t, notification_meta_t, nm_value.nm_signed_int);
SAME_FIELD(own_notification_meta_t, notification_meta_t, nm_value.nm_unsigned_int);
SAME_FIELD(own_notification_meta_t, notification_meta_t, nm_value.nm_double);
SAME_FIELD(own_notification_meta_t, notification_meta_t, nm_value.nm_boolean);
SAME_FIELD(own_notification_meta_t, notification_meta_t, next);

SAME_SIZE(own_notification_t, notification_t);
SAME_FIELD(own_notification_t, notification_t, severity);
SAME_FIELD(own_notification_t, notification_t, time);
SAME_FIELD(own_notification_t, notification_t, message);
SAME_FIELD(own_notification_t, notification_t, host);
SAME_FIELD(own_notification_t, notification_t, plugin);
SAME_FIELD(own_notification_t, notification_t, plugin_instance);
SAME_FIELD(own_notification_t, notification_t, type);
SAME_FIELD(own_notification_t, notification_t, type_instance);
SAME_FIELD(own_notification_t, notification_t, meta);

/* constants */
_Static_assert(COLLECTD_ABI_DATA_MAX_NAME_LEN == DATA_MAX_NAME_LEN, "DATA_MAX_NAME_LEN");
_Static_assert(COLLECTD_ABI_LOG_ERR == LOG_ERR, "LOG_ERR");
_Static_assert(COLLECTD_ABI_LOG_WARNING == LOG_WARNING, "LOG_WARNING");
_Static_assert(COLLECTD_ABI_LOG_NOTICE == LOG_NOTICE, "LOG_NOTICE");
_Static_assert(COLLECTD_ABI_LOG_INFO == LOG_INFO, "LOG_INFO");
_Static_assert(COLLECTD_ABI_LOG_DEBUG == LOG_DEBUG, "LOG_DEBUG");
_Static_assert(COLLECTD_ABI_OCONFIG_TYPE_STRING == OCONFIG_TYPE_STRING, "STRING");
_Static_assert(COLLECTD_ABI_OCONFIG_TYPE_NUMBER == OCONFIG_TYPE_NUMBER, "NUMBER");
_Static_assert(COLLECTD_ABI_OCONFIG_TYPE_BOOLEAN == OCONFIG_TYPE_BOOLEAN, "BOOLEAN");
_Static_assert(COLLECTD_ABI_NOTIF_MAX_MSG_LEN == NOTIF_MAX_MSG_LEN, "NOTIF_MAX_MSG_LEN");
_Static_assert(COLLECTD_ABI_NOTIF_FAILURE == NOTIF_FAILURE, "NOTIF_FAILURE");
_Static_assert(COLLECTD_ABI_NOTIF_WARNING == NOTIF_WARNING, "NOTIF_WARNING");
_Static_assert(COLLECTD_ABI_NOTIF_OKAY == NOTIF_OKAY, "NOTIF_OKAY");
_Static_assert((int)own_NM_TYPE_STRING == (int)NM_TYPE_STRING, "NM_TYPE_STRING");
_Static_assert((int)own_NM_TYPE_SIGNED_INT == (int)NM_TYPE_SIGNED_INT, "NM_TYPE_SIGNED_INT");
_Static_assert((int)own_NM_TYPE_UNSIGNED_INT == (int)NM_TYPE_UNSIGNED_INT, "NM_TYPE_UNSIGNED_INT");
_Static_assert((int)own_NM_TYPE_DOUBLE == (int)NM_TYPE_DOUBLE, "NM_TYPE_DOUBLE");
_Static_assert((int)own_NM_TYPE_BOOLEAN == (int)NM_TYPE_BOOLEAN, "NM_TYPE_BOOLEAN");

/* functions: our list, with collectd's types, against collectd's
 * declarations (pedantic C: an incompatible pointer is an error). */
#pragma GCC diagnostic error "-Wincompatible-pointer-types"
#define CHECK_FN(ret, name, args) ret(*const check_##name) args = name;
COLLECTD_ABI_FUNCTIONS(CHECK_FN, value_list_t, oconfig_item_t, cdtime_t,
                       notification_t, notification_meta_t)
/* The data symbol: a pointer (an array, as before 5.9, is an error). */
char **const check_hostname_g = &hostname_g;

int main(void) {
  /* VALUE_LIST_INIT of both leaves the same bytes. */
  value_list_t a = VALUE_LIST_INIT;
  own_value_list_t b = {.values = NULL, .meta = NULL};
  int same = memcmp(&a, &b, sizeof(a)) == 0;
  /* collectd's TIME_T_TO_CDTIME_T is not a constant expression. */
  int unit = TIME_T_TO_CDTIME_T(1) == ((cdtime_t)1 << COLLECTD_ABI_CDTIME_SHIFT);
  printf("%s: abi.cdtime_unit\n", unit ? "PASS" : "FAIL");
  printf("PASS: abi.struct_layouts (value_list_t %zu, oconfig_item_t %zu, "
         "oconfig_value_t %zu, notification_t %zu, notification_meta_t %zu "
         "bytes)\n",
         sizeof(value_list_t), sizeof(oconfig_item_t), sizeof(oconfig_value_t),
         sizeof(notification_t), sizeof(notification_meta_t));
  printf("PASS: abi.constants\n");
  printf("PASS: abi.function_signatures (13 functions, hostname_g)\n");
  printf("%s: abi.value_list_init\n", same ? "PASS" : "FAIL");
  return same && unit ? 0 : 1;
}
