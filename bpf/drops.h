/* Shared between bpf/drops.bpf.c and plugin/drops.c. */
#ifndef DROPS_H
#define DROPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Kernels without drop reasons (before 5.17): counted per drop location
 * (the caller of kfree_skb), in a hash of at most this many distinct
 * addresses; drops at an address that finds the map full are counted in
 * drops_location_overflow (dispatched under at_other). */
#define DROPS_LOCATIONS_MAX 1024

#endif
