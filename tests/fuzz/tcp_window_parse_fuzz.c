/* libFuzzer target: the tcp_window readers of outside input: the
 * /proc/net/sockstat line, the tcp_mem sysctl, and the sock_diag netlink
 * message walk. The first input byte picks the reader. */
#include "tcp_window_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t which = data[0] % 3;
  data++;
  size--;
  /* Exact-size heap copy, aligned as a netlink receive buffer would be. */
  void *buf = aligned_alloc(8, (size + 7) & ~(size_t)7 ? (size + 7) & ~(size_t)7 : 8);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  if (which == 0) {
    uint64_t pages;
    sockstat_tcp_mem(buf, size, &pages);
  } else if (which == 1) {
    uint64_t v[3];
    tcp_mem_parse(buf, size, v);
  } else {
    /* Expect the first message's sequence number, so that the corpus's
     * messages are walked, not skipped as foreign. */
    uint32_t seq = 0;
    if (size >= 12)
      memcpy(&seq, (const uint8_t *)buf + 8, sizeof(seq));
    struct stall_acc acc = {0};
    sockdiag_walk(buf, size, seq, 1000, &acc);
    if (acc.stalled > acc.sockets)
      abort();
  }
  free(buf);
  return 0;
}
