// SPDX-License-Identifier: GPL-2.0-only
/* DropNotifications: each record of the BPF ring buffer as one WARNING
 * notification (fields: collectd-ebpf(5), "Dropped packets"), and the counts of
 * those sent and of those the DropLimit suppressed. */
#ifndef EBPF_DROPS_NOTIFY_H
#define EBPF_DROPS_NOTIFY_H

#include "core/base.h"

/* Read the records of ring buffer events_fd from now on; by_location: the
 * cause of a record is a location, not a reason. 0, or a negative errno
 * (ERROR logged). */
int drops_notify_start(int events_fd, int suppressed_fd, bool by_location);
/* Send the records that came since, and dispatch the counts; nothing when
 * not started. */
void drops_notify_read(void);
void drops_notify_stop(void);

#endif
