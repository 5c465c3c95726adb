#ifndef MOCK_COLLECTD_H
#define MOCK_COLLECTD_H

#include "core/collectd_api.h"

#define MOCK_MAX_VALUES 4096
#define MOCK_MAX_LOG 256

struct mock_value {
  value_list_t vl;
  value_t v;
};
extern struct mock_value mock_values[MOCK_MAX_VALUES];
extern int mock_nvalues;
extern char mock_log[MOCK_MAX_LOG][1024];
extern int mock_log_sev[MOCK_MAX_LOG];
extern int mock_nlog;
extern int mock_verbose;

/* Notifications dispatched, each with a copy of its meta data. */
#define MOCK_MAX_NOTIF 64
#define MOCK_MAX_NMETA 24
struct mock_nmeta {
  char name[DATA_MAX_NAME_LEN];
  int type; /* NM_TYPE_* */
  char s[1024];
  int64_t i;
  uint64_t u;
  double d;
};
struct mock_notif {
  notification_t n; /* n.meta is NULL in the copy */
  int nmeta;
  struct mock_nmeta meta[MOCK_MAX_NMETA];
};
extern struct mock_notif mock_notifs[MOCK_MAX_NOTIF];
extern int mock_nnotif;
/* notification_meta_t allocated and not yet freed (leak check). */
extern int mock_nmeta_live;
/* When > 0, the n-th plugin_notification_meta_add_* from now fails. */
extern int mock_nmeta_fail_at;
const struct mock_nmeta *mock_nmeta_find(const struct mock_notif *m,
                                         const char *name);

/* What plugin_get_interval() returns: 10 s, set again by mock_reset(). */
extern cdtime_t mock_interval;

void mock_reset(void);
const struct mock_value *mock_find(const char *plugin, const char *pi,
                                   const char *type, const char *ti);
/* Index of the first log line at severity <= max_sev containing needle. */
int mock_log_find(int max_sev, const char *needle);

oconfig_item_t *mock_ci(const char *key);
oconfig_item_t *mock_str(oconfig_item_t *ci, const char *s);
oconfig_item_t *mock_num(oconfig_item_t *ci, double d);
oconfig_item_t *mock_bool(oconfig_item_t *ci, int b);
oconfig_item_t *mock_child(oconfig_item_t *ci, oconfig_item_t *child);
void mock_ci_free(oconfig_item_t *ci);

#endif
