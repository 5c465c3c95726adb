/* libFuzzer target: the tcp_window readers of outside input: the
 * /proc/net/sockstat line, the tcp_mem sysctl, and the sock_diag netlink
 * message walks (a dump's, a batch of exact requests'). The first input
 * byte picks the reader. */
#include "tcp_window/parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The per-socket callback sees each counted socket once: its stalled
 * ones add up to the count. */
struct seen {
  uint64_t sockets, stalled, bytes;
};
static void each(const struct diag_sock *s, void *arg) {
  struct seen *n = arg;
  n->sockets++;
  if (s->stalled) {
    n->stalled++;
    n->bytes += s->rqueue;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  /* 0xE3 picks the batch walk; the other values keep their meaning, so
   * the corpus made before it stays what it was. */
  uint8_t which = data[0] == 0xE3 ? 3 : data[0] % 3;
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
  } else if (which == 3) {
    /* A batch of 8 exact requests from the first message's sequence
     * number: no more answers than requests. */
    uint32_t seq = 0;
    if (size >= 12)
      memcpy(&seq, (const uint8_t *)buf + 8, sizeof(seq));
    struct seen n = {0};
    struct stall_acc acc = {.each = each, .arg = &n};
    int got = sockdiag_exact_walk(buf, size, seq, 8, 1000, &acc);
    if (acc.stalled > acc.sockets || n.sockets > acc.sockets ||
        n.stalled != acc.stalled || n.bytes != acc.stalled_bytes ||
        (got >= 0 && (uint64_t)got < acc.sockets))
      abort();
  } else {
    /* Expect the first message's sequence number, so that the corpus's
     * messages are walked, not skipped as foreign. */
    uint32_t seq = 0;
    if (size >= 12)
      memcpy(&seq, (const uint8_t *)buf + 8, sizeof(seq));
    struct seen n = {0};
    struct stall_acc acc = {.each = each, .arg = &n};
    sockdiag_walk(buf, size, seq, 1000, &acc);
    if (acc.stalled > acc.sockets || n.sockets > acc.sockets ||
        n.stalled != acc.stalled || n.bytes != acc.stalled_bytes)
      abort();
  }
  free(buf);
  return 0;
}
