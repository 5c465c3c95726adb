/* Stand-ins for the collectd daemon functions the plugin calls, so unit
 * tests run without collectd: log lines and dispatched values are kept for
 * the test to inspect. */
#include "mock_collectd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mock_value mock_values[MOCK_MAX_VALUES];
int mock_nvalues;
char mock_log[MOCK_MAX_LOG][1024];
int mock_log_sev[MOCK_MAX_LOG];
int mock_nlog;
int mock_verbose;

struct mock_notif mock_notifs[MOCK_MAX_NOTIF];
int mock_nnotif;
int mock_nmeta_live;
int mock_nmeta_fail_at;
char *hostname_g = "mockhost";

cdtime_t mock_interval = TIME_T_TO_CDTIME_T(10);

void mock_reset(void) {
  mock_interval = TIME_T_TO_CDTIME_T(10);
  mock_nvalues = 0;
  mock_nlog = 0;
  mock_nnotif = 0;
  mock_nmeta_fail_at = 0;
}

int plugin_dispatch_notification(const notification_t *n) {
  if (getenv("MOCK_VERBOSE"))
    fprintf(stderr, "[notification %d] %s\n", n->severity, n->message);
  if (mock_nnotif >= MOCK_MAX_NOTIF)
    return -1;
  struct mock_notif *m = &mock_notifs[mock_nnotif++];
  memset(m, 0, sizeof(*m));
  m->n = *n;
  m->n.meta = NULL;
  for (const notification_meta_t *p = n->meta;
       p && m->nmeta < MOCK_MAX_NMETA; p = p->next) {
    struct mock_nmeta *c = &m->meta[m->nmeta++];
    snprintf(c->name, sizeof(c->name), "%s", p->name);
    c->type = p->type;
    if (p->type == NM_TYPE_STRING)
      snprintf(c->s, sizeof(c->s), "%s", p->nm_value.nm_string);
    else if (p->type == NM_TYPE_SIGNED_INT)
      c->i = p->nm_value.nm_signed_int;
    else if (p->type == NM_TYPE_UNSIGNED_INT)
      c->u = p->nm_value.nm_unsigned_int;
    else if (p->type == NM_TYPE_DOUBLE)
      c->d = p->nm_value.nm_double;
  }
  return 0;
}

const struct mock_nmeta *mock_nmeta_find(const struct mock_notif *m,
                                         const char *name) {
  for (int i = 0; i < m->nmeta; i++)
    if (!strcmp(m->meta[i].name, name))
      return &m->meta[i];
  return NULL;
}

/* Appends like collectd's: a calloc'ed node at the tail, strings copied. */
static notification_meta_t *meta_append(notification_t *n, const char *name,
                                        int type) {
  if (mock_nmeta_fail_at > 0 && --mock_nmeta_fail_at == 0)
    return NULL;
  notification_meta_t *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  snprintf(m->name, sizeof(m->name), "%s", name);
  m->type = type;
  notification_meta_t **tail = &n->meta;
  while (*tail)
    tail = &(*tail)->next;
  *tail = m;
  mock_nmeta_live++;
  return m;
}

int plugin_notification_meta_add_string(notification_t *n, const char *name,
                                        const char *value) {
  notification_meta_t *m = meta_append(n, name, NM_TYPE_STRING);
  if (!m)
    return -1;
  m->nm_value.nm_string = strdup(value);
  return 0;
}

int plugin_notification_meta_add_signed_int(notification_t *n,
                                            const char *name, int64_t value) {
  notification_meta_t *m = meta_append(n, name, NM_TYPE_SIGNED_INT);
  if (!m)
    return -1;
  m->nm_value.nm_signed_int = value;
  return 0;
}

int plugin_notification_meta_add_unsigned_int(notification_t *n,
                                              const char *name,
                                              uint64_t value) {
  notification_meta_t *m = meta_append(n, name, NM_TYPE_UNSIGNED_INT);
  if (!m)
    return -1;
  m->nm_value.nm_unsigned_int = value;
  return 0;
}

int plugin_notification_meta_add_double(notification_t *n, const char *name,
                                        double value) {
  notification_meta_t *m = meta_append(n, name, NM_TYPE_DOUBLE);
  if (!m)
    return -1;
  m->nm_value.nm_double = value;
  return 0;
}

int plugin_notification_meta_free(notification_meta_t *n) {
  if (!n) {
    plugin_log(LOG_ERR, "plugin_notification_meta_free: n == NULL!");
    return -1;
  }
  while (n) {
    notification_meta_t *next = n->next;
    if (n->type == NM_TYPE_STRING)
      free((char *)n->nm_value.nm_string);
    free(n);
    mock_nmeta_live--;
    n = next;
  }
  return 0;
}

void plugin_log(int level, const char *format, ...) {
  char buf[1024]; /* collectd's plugin_log() formats into as much */
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  if (mock_verbose || getenv("MOCK_VERBOSE"))
    fprintf(stderr, "[log %d] %s\n", level, buf);
  if (mock_nlog < MOCK_MAX_LOG) {
    snprintf(mock_log[mock_nlog], sizeof(mock_log[0]), "%s", buf);
    mock_log_sev[mock_nlog++] = level;
  }
}

int plugin_dispatch_values(value_list_t const *vl) {
  if (mock_nvalues >= MOCK_MAX_VALUES)
    return -1;
  struct mock_value *m = &mock_values[mock_nvalues];
  m->vl = *vl;
  m->v = vl->values[0];
  m->vl.values = &m->v;
  /* Seen whole by a test that waits for a value another thread sends. */
  __atomic_store_n(&mock_nvalues, mock_nvalues + 1, __ATOMIC_RELEASE);
  return 0;
}

cdtime_t plugin_get_interval(void) { return mock_interval; }

int plugin_register_complex_config(const char *type,
                                   int (*callback)(oconfig_item_t *)) {
  return 0;
}
int plugin_register_init(const char *name, plugin_init_cb callback) {
  return 0;
}
int plugin_register_read(const char *name, int (*callback)(void)) { return 0; }
int plugin_register_shutdown(const char *name, plugin_shutdown_cb callback) {
  return 0;
}

const struct mock_value *mock_find(const char *plugin, const char *pi,
                                   const char *type, const char *ti) {
  for (int i = mock_nvalues - 1; i >= 0; i--) {
    const value_list_t *vl = &mock_values[i].vl;
    if (!strcmp(vl->plugin, plugin) && !strcmp(vl->plugin_instance, pi) &&
        !strcmp(vl->type, type) && !strcmp(vl->type_instance, ti))
      return &mock_values[i];
  }
  return NULL;
}

int mock_log_find(int max_sev, const char *needle) {
  for (int i = 0; i < mock_nlog; i++)
    if (mock_log_sev[i] <= max_sev && strstr(mock_log[i], needle))
      return i;
  return -1;
}

/* --- building oconfig trees by hand ------------------------------------ */

oconfig_item_t *mock_ci(const char *key) {
  oconfig_item_t *ci = calloc(1, sizeof(*ci));
  ci->key = strdup(key);
  return ci;
}

static oconfig_value_t *add_value(oconfig_item_t *ci) {
  ci->values = realloc(ci->values, (size_t)(ci->values_num + 1) *
                                       sizeof(*ci->values));
  return &ci->values[ci->values_num++];
}

oconfig_item_t *mock_str(oconfig_item_t *ci, const char *s) {
  oconfig_value_t *v = add_value(ci);
  v->type = OCONFIG_TYPE_STRING;
  v->value.string = strdup(s);
  return ci;
}

oconfig_item_t *mock_num(oconfig_item_t *ci, double d) {
  oconfig_value_t *v = add_value(ci);
  v->type = OCONFIG_TYPE_NUMBER;
  v->value.number = d;
  return ci;
}

oconfig_item_t *mock_bool(oconfig_item_t *ci, int b) {
  oconfig_value_t *v = add_value(ci);
  v->type = OCONFIG_TYPE_BOOLEAN;
  v->value.boolean = b;
  return ci;
}

/* Appends a copy of child (shallow: child's arrays move) and frees child. */
oconfig_item_t *mock_child(oconfig_item_t *ci, oconfig_item_t *child) {
  ci->children = realloc(ci->children, (size_t)(ci->children_num + 1) *
                                           sizeof(*ci->children));
  ci->children[ci->children_num] = *child;
  free(child);
  ci->children_num++;
  for (int i = 0; i < ci->children_num; i++) {
    ci->children[i].parent = ci;
    for (int j = 0; j < ci->children[i].children_num; j++)
      ci->children[i].children[j].parent = &ci->children[i];
  }
  return ci;
}

static void free_items(oconfig_item_t *ci) {
  free(ci->key);
  for (int i = 0; i < ci->values_num; i++)
    if (ci->values[i].type == OCONFIG_TYPE_STRING)
      free(ci->values[i].value.string);
  free(ci->values);
  for (int i = 0; i < ci->children_num; i++)
    free_items(&ci->children[i]);
  free(ci->children);
}

void mock_ci_free(oconfig_item_t *ci) {
  if (!ci)
    return;
  free_items(ci);
  free(ci);
}
