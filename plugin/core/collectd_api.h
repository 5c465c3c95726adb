// SPDX-License-Identifier: GPL-2.0-only
/* The only place that includes collectd's headers. The plugin uses a small
 * part of the 5.x plugin ABI: plugin_register_{complex_config,init,read,
 * shutdown}, plugin_dispatch_values, plugin_log, plugin_get_interval,
 * plugin_dispatch_notification, plugin_notification_meta_add_{string,
 * signed_int,unsigned_int,double}, plugin_notification_meta_free, the
 * hostname_g variable, and the oconfig_item_t / value_list_t /
 * notification_t / notification_meta_t structures. Keep it that way: it is
 * what a package built without collectd's headers has to reproduce
 * (packaging/abi/collectd_abi.h, proven by packaging/abi/abi_check.c). */
#ifndef EBPF_COLLECTD_API_H
#define EBPF_COLLECTD_API_H

#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#endif
