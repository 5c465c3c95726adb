/* A notification plugin as slow as a remote one (write_http, notify_email,
 * an exec script): it sleeps SleepMs (default 5) per notification, in the
 * thread that dispatched it, as collectd calls every notification plugin.
 * It appends one line per notification to File: the wall time it got it
 * and the plugin that sent it. tests/integration/test_slow_consumers loads
 * it beside the plugin: LoadPlugin slow_notify, <Plugin slow_notify>
 * SleepMs 5 File "/path" </Plugin>. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long sleep_ms = 5;
static FILE *out;

static int slow_config(const char *key, const char *value) {
  if (!strcasecmp(key, "SleepMs")) {
    sleep_ms = atol(value);
    return 0;
  }
  if (!strcasecmp(key, "File")) {
    if (out)
      fclose(out);
    out = fopen(value, "a");
    return out ? 0 : -1;
  }
  return -1;
}

static int slow_notify(const notification_t *n, user_data_t *ud) {
  (void)ud;
  struct timespec now, d = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000};
  clock_gettime(CLOCK_REALTIME, &now);
  if (out) {
    fprintf(out, "%.6f %s\n", now.tv_sec + now.tv_nsec / 1e9, n->plugin);
    fflush(out);
  }
  while (nanosleep(&d, &d) != 0)
    ;
  return 0;
}

static const char *keys[] = {"SleepMs", "File"};

void module_register(void) {
  plugin_register_config("slow_notify", slow_config, keys, 2);
  plugin_register_notification("slow_notify", slow_notify, NULL);
}
