// SPDX-License-Identifier: GPL-2.0-only
/* A BPF ring buffer read a bounded amount at a time. ring_buffer__consume()
 * reads while records arrive: with a producer as fast as the reader (a
 * sustained flood, each record a notification that collectd hands to
 * every notification plugin in this thread, synchronously), it never
 * returns, and with it neither the read callback nor collectd's shutdown.
 * A read here stops after what the ring holds (its size over the record's
 * size: records that came during the read wait for the next one) or at
 * its time budget, whichever comes first. What is left stays in the ring
 * for the next read, in order, none lost; while the ring is full the BPF
 * side finds no room and counts what it could not send as suppressed.
 * libbpf 1.1 (Debian 12) has no ring_buffer__consume_n() (1.4): the bound
 * is a callback that returns a negative value, after which every libbpf
 * from 0.3 on stores the consumer position past that record and returns
 * the value from ring_buffer__consume(). */
#ifndef EBPF_RING_H
#define EBPF_RING_H

#include "core/base.h"

#include <bpf/libbpf.h>

struct ebpf_ring {
  struct ring_buffer *rb;
  ring_buffer_sample_fn cb; /* the reader's callback, one record each */
  void *ctx;
  uint64_t max;        /* records per read: what the ring holds */
  uint64_t n;          /* records of this read so far */
  int64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
  bool stopped;        /* the last read stopped at a bound */
  bool warned;         /* since the ring was last emptied */
};

/* Open map_fd (a BPF_MAP_TYPE_RINGBUF) for records of rec_size bytes.
 * 0 or a negative errno. */
int ebpf_ring_open(struct ebpf_ring *r, int map_fd, size_t rec_size,
                   ring_buffer_sample_fn cb, void *ctx);
void ebpf_ring_close(struct ebpf_ring *r);

/* One bounded read: the records consumed (r->stopped says whether records
 * may be left), or a negative errno of the ring. budget_ns 0: only the
 * count bound. */
int64_t ebpf_ring_read(struct ebpf_ring *r, int64_t budget_ns);

/* After ebpf_ring_read: one WARNING when reads start to stop at a bound
 * (what: the feature and option; then: where what did not fit is
 * counted), one INFO when a read reaches the ring's end again. */
void ebpf_ring_note(struct ebpf_ring *r, const char *what, const char *then);

/* The time budget of one ring's read in the read callback: a quarter of
 * the read interval, so that two rings and everything else of the read
 * fit in it. */
int64_t ebpf_ring_budget_ns(void);

/* Records of rec_size bytes that a ring of ring_bytes holds (each has an
 * 8-byte header and is rounded up to 8 bytes). */
uint64_t ebpf_ring_capacity(uint64_t ring_bytes, size_t rec_size);

#endif
