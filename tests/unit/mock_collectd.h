#ifndef MOCK_COLLECTD_H
#define MOCK_COLLECTD_H

#include "collectd_api.h"

#define MOCK_MAX_VALUES 4096
#define MOCK_MAX_LOG 256

struct mock_value {
  value_list_t vl;
  value_t v;
};
extern struct mock_value mock_values[MOCK_MAX_VALUES];
extern int mock_nvalues;
extern char mock_log[MOCK_MAX_LOG][512];
extern int mock_log_sev[MOCK_MAX_LOG];
extern int mock_nlog;
extern int mock_verbose;

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
