// SPDX-License-Identifier: GPL-2.0-only
#include "common/newnames.h"

#include "core/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int newnames_init(struct newnames *b, unsigned per_hour) {
  newnames_free(b);
  b->per_hour = per_hour;
  b->per_read = per_hour / 4 ? per_hour / 4 : 1;
  if (!per_hour)
    return 0;
  b->seen = calloc(per_hour, sizeof(*b->seen));
  return b->seen ? 0 : -ENOMEM;
}

void newnames_tick(struct newnames *b, double now) {
  b->now = now;
  b->this_read = 0;
  b->reads++;
  size_t old = 0;
  while (old < b->n && now - b->seen[old].at >= NEWNAMES_WINDOW_S)
    old++;
  if (old) {
    memmove(b->seen, b->seen + old, (b->n - old) * sizeof(*b->seen));
    b->n -= old;
  }
}

bool newnames_admit(struct newnames *b, const char *name) {
  if (!b->per_hour)
    return true;
  uint32_t h = path_hash(name);
  for (size_t i = 0; i < b->n; i++)
    if (b->seen[i].hash == h) {
      /* Renewed: moved to the end, which keeps the array by time. */
      memmove(b->seen + i, b->seen + i + 1, (b->n - i - 1) * sizeof(*b->seen));
      b->seen[b->n - 1] = (struct newname_seen){h, b->now};
      return true;
    }
  /* What is there at the first read is the host as it is, not churn: only
   * the hour's limit applies to it. */
  unsigned per_read = b->reads <= 1 ? b->per_hour : b->per_read;
  if (b->n >= b->per_hour || b->this_read >= per_read) {
    b->refused++;
    return false;
  }
  b->seen[b->n++] = (struct newname_seen){h, b->now};
  b->this_read++;
  return true;
}

void newnames_free(struct newnames *b) {
  free(b->seen);
  *b = (struct newnames){0};
}
