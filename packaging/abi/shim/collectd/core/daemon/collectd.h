/* Stand-in for collectd-dev's header when built with COLLECTD_ABI=own: see
 * packaging/abi/collectd_abi.h. */
#include "collectd_abi.h"
