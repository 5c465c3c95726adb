// SPDX-License-Identifier: GPL-2.0-only
/* Bounded reads of a BPF ring buffer (ring.h). */
#include "common/ring.h"

#include <bpf/bpf.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What bounded_cb returns to stop ring_buffer__consume(): the readers'
 * callbacks return 0 or a negative errno, never this. */
#define RING_STOP (-ECANCELED)

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t ebpf_ring_capacity(uint64_t ring_bytes, size_t rec_size) {
  uint64_t one = ((uint64_t)rec_size + 8 + 7) / 8 * 8;
  uint64_t n = ring_bytes / one;
  return n ? n : 1;
}

int64_t ebpf_ring_budget_ns(void) {
  return (int64_t)(CDTIME_T_TO_DOUBLE(plugin_get_interval()) * 1e9 / 4);
}

/* One record: the reader's callback, then the bounds. The record counts
 * as read either way (libbpf has moved past it). */
static int bounded_cb(void *ctx, void *data, size_t size) {
  struct ebpf_ring *r = ctx;
  int err = r->cb(r->ctx, data, size);
  if (err < 0)
    return err == RING_STOP ? -EIO : err;
  r->n++;
  if (r->n >= r->max || (r->deadline_ns && mono_ns() >= r->deadline_ns))
    return RING_STOP;
  return 0;
}

int ebpf_ring_open(struct ebpf_ring *r, int map_fd, size_t rec_size,
                   ring_buffer_sample_fn cb, void *ctx) {
  struct bpf_map_info info;
  uint32_t len = sizeof(info);
  memset(&info, 0, sizeof(info));
  *r = (struct ebpf_ring){.cb = cb, .ctx = ctx};
  if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
    return -errno ? -errno : -EINVAL;
  r->max = ebpf_ring_capacity(info.max_entries, rec_size);
  r->rb = ring_buffer__new(map_fd, bounded_cb, r, NULL);
  if (!r->rb)
    return -errno ? -errno : -ENOMEM;
  return 0;
}

void ebpf_ring_close(struct ebpf_ring *r) {
  ring_buffer__free(r->rb);
  r->rb = NULL;
}

int64_t ebpf_ring_read(struct ebpf_ring *r, int64_t budget_ns) {
  r->n = 0;
  r->stopped = false;
  r->deadline_ns = budget_ns > 0 ? mono_ns() + budget_ns : 0;
  int err = r->rb ? ring_buffer__consume(r->rb) : 0;
  if (err == RING_STOP) {
    r->stopped = true;
    return (int64_t)r->n;
  }
  return err < 0 ? err : (int64_t)r->n;
}

void ebpf_ring_note(struct ebpf_ring *r, const char *what, const char *then) {
  if (r->stopped && !r->warned) {
    r->warned = true;
    char why[64];
    if (r->n >= r->max)
      snprintf(why, sizeof(why), "what the ring buffer holds");
    else
      snprintf(why, sizeof(why), "its time budget of %.2f s",
               (double)ebpf_ring_budget_ns() / 1e9);
    E_WARNING("%s: a read stopped after %llu records (%s), to return "
              "within its interval; the rest wait in the ring buffer for "
              "the next read, and %s.",
              what, (unsigned long long)r->n, why, then);
  } else if (!r->stopped && r->warned) {
    r->warned = false;
    E_INFO("%s: the ring buffer was read to its end again.", what);
  }
}
