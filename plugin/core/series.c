// SPDX-License-Identifier: GPL-2.0-only
/* A DERIVE series that appears while collectd runs starts from zero.
 *
 * Without this, a new series' first value is its whole count (300
 * datagrams to a closed port: drops-no_socket/operations = 300, 300, ...),
 * and everything that works from rates (RRD's DERIVE, StoreRates,
 * Prometheus' rate()) takes that first value as its base: the events that
 * made the series appear, often the very burst an operator looks for, are
 * never seen. So the first time an identifier is dispatched after the
 * plugin's first read, the core dispatches 0 in its place, stamped one
 * Interval earlier (at the previous read: the series was not there, so
 * its count was 0), and holds the count back for one interval: it goes
 * out at the start of the next read, stamped at the time it was read,
 * ahead of that read's own value.
 *
 * Why hold it rather than send 0 and the count in one read: a backend that
 * keeps only the latest value (write_prometheus, scraped later) would
 * never see a 0 that a count replaces microseconds after; held, the 0 is
 * the value for one interval. And one value per identifier in a read
 * keeps the two apart in collectd's write queue, whose threads may take
 * two values of one read in either order (utils_cache and the rrdtool
 * plugin ignore a value older than the last they had). The times: 0 at
 * now - Interval, the count at now (when it was read, the time collectd
 * would have given it): one Interval apart, so the rrdtool plugin, which
 * writes whole seconds, has two distinct seconds from Interval 1 s on,
 * within its heartbeat (2 Intervals) even after a late read. When the
 * previous read was on time the series had no count then; after a late
 * one, the events between it and now - Interval are put in the last
 * Interval (the sum stays).
 *
 * Its next value, read N+1's own count, is held too, by half an Interval:
 * a thread of this file's (the "late" queue) sends it then, or the next
 * read's start if that comes first. Sent in the same read as the held
 * count, the two were milliseconds apart, and write_graphite and csv's
 * StoreRates take the rate from collectd's cache when their turn comes
 * (uc_get_rate()), not the value's own: on a busy host a write thread
 * that had updated the cache with the count was overtaken by another
 * with read N+1's count, and Graphite got a rate of 0 for both (the burst
 * lost: test_backends, 298 drops, Graphite 0). Half an Interval apart,
 * each value's rate is its own.
 *
 * A held series that is not dispatched again at the next read (a cgroup
 * that lived one interval) has its count sent all the same.
 * Series present at the first read are not touched: their counts are
 * from before collectd started (PSI totals since boot) or from the moment
 * between loading and the first read, which collectd makes right after
 * init. A series renamed by its feature (series_renamed()) keeps counting
 * under the new name, and gets no 0 either.
 *
 * Bookkeeping: an open-addressing table of 64-bit FNV-1a hashes of the
 * identifiers (a hash and four numbers per entry), at most SERIES_MAX of
 * them; one lookup per DERIVE value. When it is full, identifiers not
 * dispatched for SERIES_AGE reads are forgotten (once a read); if none
 * can be, a new series is dispatched as it is (NOTICE once). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include "core/ebpf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SERIES_MAX 16384u  /* identifiers remembered */
#define SERIES_HELD 1024u  /* counts held in one read */
#define SERIES_AGE 3u      /* reads unseen before an entry may go */
#define SERIES_SOURCE 1ull /* low bit set: a renamed source's entry */

struct series_slot {
  uint64_t h;    /* 0: empty */
  uint32_t seen; /* the read it was last dispatched in */
  int32_t held;  /* index in held[], or -1 */
  uint32_t sent; /* the read whose start sent its held count, or 0 */
  uint32_t deferred; /* the read that deferred its second value, or 0 */
};

struct series_held {
  uint64_t h;
  int64_t v;
  cdtime_t t;
  uint32_t read;
  char id[4][DATA_MAX_NAME_LEN];
};

static struct {
  struct series_slot *slot;
  size_t cap, n; /* cap: a power of two, or 0 */
  struct series_held *held;
  size_t nheld, held_cap;
  uint32_t read; /* reads begun; 0: none yet */
  uint32_t swept;
  cdtime_t t_now; /* the read's start */
  bool warned;
} st;

/* The second values, sent half an Interval after their read by a thread
 * (late_main()) or at the next read's start, whichever comes first. Its
 * own lock: the thread never touches st. */
struct series_late {
  struct series_held v; /* .read: unused */
  cdtime_t due;
  cdtime_t interval; /* the read's: the thread has no plugin context */
};

_Static_assert(sizeof(struct series_slot) == 24 &&
                   sizeof(struct series_held) == 544 &&
                   sizeof(struct series_late) == 560,
               "series' entries changed size: update docs/reliability.md "
               "and docs/reading-the-numbers.md");

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  bool running, stop;
  struct series_late *q; /* q[head..n): in the order they were read, and
                            so of their due times */
  size_t head, n, cap;   /* cap <= SERIES_HELD */
} late = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static cdtime_t now_cdtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return TIME_T_TO_CDTIME_T(ts.tv_sec) +
         TIME_T_TO_CDTIME_T(ts.tv_nsec) / 1000000000;
}

static struct timespec cdtime_timespec(cdtime_t t) {
  cdtime_t frac = t & (((cdtime_t)1 << 30) - 1);
  return (struct timespec){.tv_sec = (time_t)(t >> 30),
                           .tv_nsec = (long)((frac * 1000000000ull) >> 30)};
}

static uint64_t fnv1a64(uint64_t h, const char *s) {
  for (; s && *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  h ^= 0xff; /* a separator no name has */
  return h * 1099511628211ull;
}

static uint64_t source_hash(const value_list_t *vl) {
  uint64_t h = fnv1a64(fnv1a64(14695981039346656037ull, vl->plugin),
                       vl->plugin_instance);
  return h | SERIES_SOURCE;
}

static uint64_t ident_hash(const value_list_t *vl) {
  uint64_t h = fnv1a64(fnv1a64(14695981039346656037ull, vl->plugin),
                       vl->plugin_instance);
  h = fnv1a64(fnv1a64(h, vl->type), vl->type_instance) & ~SERIES_SOURCE;
  return h ? h : 2;
}

static struct series_slot *find(uint64_t h) {
  if (!st.cap)
    return NULL;
  for (size_t i = h & (st.cap - 1);; i = (i + 1) & (st.cap - 1)) {
    if (st.slot[i].h == h)
      return &st.slot[i];
    if (!st.slot[i].h)
      return NULL;
  }
}

static void place(struct series_slot *tab, size_t cap, struct series_slot s) {
  size_t i = s.h & (cap - 1);
  while (tab[i].h)
    i = (i + 1) & (cap - 1);
  tab[i] = s;
}

/* The table again at cap slots, without the entries keep() refuses. */
static bool rebuild(size_t cap, bool (*keep)(const struct series_slot *)) {
  struct series_slot *tab = calloc(cap, sizeof(*tab));
  if (!tab)
    return false;
  size_t n = 0;
  for (size_t i = 0; i < st.cap; i++)
    if (st.slot[i].h && keep(&st.slot[i])) {
      place(tab, cap, st.slot[i]);
      n++;
    }
  free(st.slot);
  st.slot = tab;
  st.cap = cap;
  st.n = n;
  return true;
}

static bool keep_all(const struct series_slot *s) { return true; }

static bool keep_recent(const struct series_slot *s) {
  return s->held >= 0 || s->seen + SERIES_AGE > st.read;
}

/* Room for one more entry: grown to twice its entries (load <= 1/2), or
 * at the bound, swept of what was not seen lately (once a read). */
static bool room(void) {
  if (st.n < SERIES_MAX && (st.n + 1) * 2 <= st.cap)
    return true;
  if (st.n < SERIES_MAX)
    return rebuild(st.cap ? st.cap * 2 : 1024, keep_all);
  if (st.swept != st.read) {
    st.swept = st.read;
    rebuild(st.cap, keep_recent);
  }
  return st.n < SERIES_MAX;
}

static bool insert(uint64_t h, int32_t held) {
  if (!room())
    return false;
  place(st.slot, st.cap, (struct series_slot){h, st.read, held});
  st.n++;
  return true;
}

static void dispatch_at(value_list_t *vl, int64_t v, cdtime_t t) {
  value_t val = {.derive = v};
  vl->values = &val;
  vl->values_len = 1;
  vl->time = t;
  plugin_dispatch_values(vl);
  vl->values = NULL;
  vl->values_len = 0;
  vl->time = 0;
}

/* A series' identity kept (hold(), defer()), and made into a value list
 * again to send its value. */
static void ids_keep(char id[4][DATA_MAX_NAME_LEN], const value_list_t *vl) {
  memcpy(id[0], vl->plugin, DATA_MAX_NAME_LEN);
  memcpy(id[1], vl->plugin_instance, DATA_MAX_NAME_LEN);
  memcpy(id[2], vl->type, DATA_MAX_NAME_LEN);
  memcpy(id[3], vl->type_instance, DATA_MAX_NAME_LEN);
}

static void ids_to_vl(value_list_t *vl, char id[4][DATA_MAX_NAME_LEN]) {
  memcpy(vl->plugin, id[0], DATA_MAX_NAME_LEN);
  memcpy(vl->plugin_instance, id[1], DATA_MAX_NAME_LEN);
  memcpy(vl->type, id[2], DATA_MAX_NAME_LEN);
  memcpy(vl->type_instance, id[3], DATA_MAX_NAME_LEN);
}

static bool held_room(void) {
  if (st.nheld < st.held_cap)
    return true;
  size_t cap = st.held_cap ? st.held_cap * 2 : 16;
  void *p = cap <= SERIES_HELD ? realloc(st.held, cap * sizeof(*st.held))
                               : NULL;
  if (!p)
    return false;
  st.held = p;
  st.held_cap = cap;
  return true;
}

/* A new identifier: 0 one Interval before, and v held for the next
 * read. false: dispatch v now (no room to hold it: after the 0, which only
 * a backend that keeps every value sees; no room to remember it: as it
 * is, NOTICE once). */
static bool hold(value_list_t *vl, uint64_t h, int64_t v) {
  cdtime_t now = now_cdtime(); /* the time collectd would have given v */
  cdtime_t iv = plugin_get_interval();
  /* One Interval before: within RRD's heartbeat (2 Intervals) and in
   * another second from 1 s on, however late the previous read was. */
  cdtime_t t0 = now > iv ? now - iv : now / 2;
  bool can_hold = held_room();
  if (!insert(h, can_hold ? (int32_t)st.nheld : -1)) {
    if (!st.warned)
      E_NOTICE("%u series are remembered, the most there is room for: a "
               "new series is dispatched from its first count, not from 0.",
               SERIES_MAX);
    st.warned = true;
    return false;
  }
  dispatch_at(vl, 0, t0);
  if (!can_hold)
    return false;
  struct series_held *hd = &st.held[st.nheld++];
  *hd = (struct series_held){.h = h, .v = v, .t = now, .read = st.read};
  ids_keep(hd->id, vl);
  return true;
}

/* Sends every late value due by `until` (all of them: UINT64_MAX), in
 * order, a few at a time taken out under the lock and sent outside it. */
static void late_send(cdtime_t until) {
  struct series_late batch[16];
  for (;;) {
    size_t k = 0;
    pthread_mutex_lock(&late.lock);
    while (k < 16 && late.head < late.n && late.q[late.head].due <= until)
      batch[k++] = late.q[late.head++];
    if (late.head == late.n)
      late.head = late.n = 0;
    pthread_mutex_unlock(&late.lock);
    for (size_t i = 0; i < k; i++) {
      struct series_late *one = &batch[i];
      value_list_t vl = VALUE_LIST_INIT;
      ids_to_vl(&vl, one->v.id);
      /* Without it, collectd asks for the thread's plugin context, which
       * this thread has none of: an ERROR ("plugin_get_interval: Unable
       * to determine Interval from context") for every value. */
      vl.interval = one->interval;
      dispatch_at(&vl, one->v.v, one->v.t);
    }
    if (k < 16)
      return;
  }
}

static void *late_main(void *arg) {
  (void)arg;
  /* Its own name in top -H and /proc/<pid>/task/<tid>/comm, not that of
   * the read thread that made it. */
  pthread_setname_np(pthread_self(), "ebpf_series");
  pthread_mutex_lock(&late.lock);
  while (!late.stop) {
    if (late.head == late.n) {
      pthread_cond_wait(&late.cond, &late.lock);
      continue;
    }
    cdtime_t due = late.q[late.head].due;
    if (now_cdtime() < due) {
      struct timespec ts = cdtime_timespec(due);
      pthread_cond_timedwait(&late.cond, &late.lock, &ts);
      continue;
    }
    pthread_mutex_unlock(&late.lock);
    late_send(now_cdtime());
    pthread_mutex_lock(&late.lock);
  }
  pthread_mutex_unlock(&late.lock);
  return NULL;
}

/* A held series' second value (read N+1's own count): sent half an
 * Interval later, stamped now. false: send it now (no room, no thread). */
static bool defer(const value_list_t *vl, struct series_slot *s, int64_t v) {
  cdtime_t now = now_cdtime();
  bool ok = false;
  pthread_mutex_lock(&late.lock);
  if (s->deferred == st.read) { /* twice in one read: the later count */
    for (size_t i = late.head; i < late.n; i++)
      if (late.q[i].v.h == s->h) {
        late.q[i].v.v = v;
        pthread_mutex_unlock(&late.lock);
        return true;
      }
    /* (already sent: the thread was that quick; this one goes now) */
    pthread_mutex_unlock(&late.lock);
    return false;
  }
  if (!late.running) {
    late.stop = false;
    late.running = pthread_create(&late.thread, NULL, late_main, NULL) == 0;
  }
  if (late.running && late.n == late.cap && late.head > 0) {
    memmove(late.q, late.q + late.head, (late.n - late.head) * sizeof(*late.q));
    late.n -= late.head;
    late.head = 0;
  }
  if (late.running && late.n == late.cap && late.cap < SERIES_HELD) {
    size_t cap = late.cap ? late.cap * 2 : 16;
    void *p = realloc(late.q, cap * sizeof(*late.q));
    if (p) {
      late.q = p;
      late.cap = cap;
    }
  }
  if (late.running && late.n < late.cap) {
    bool was_empty = late.head == late.n;
    struct series_late *l = &late.q[late.n++];
    cdtime_t iv = plugin_get_interval();
    *l = (struct series_late){.v = {.h = s->h, .v = v, .t = now},
                              .due = now + iv / 2,
                              .interval = iv};
    ids_keep(l->v.id, vl);
    /* The thread waits for the first entry's due time, which a later one
     * does not move: woken only when the queue was empty. */
    if (was_empty)
      pthread_cond_signal(&late.cond);
    s->deferred = st.read;
    ok = true;
  }
  pthread_mutex_unlock(&late.lock);
  return ok;
}

bool series_derive(value_list_t *vl, int64_t v) {
  if (st.read == 0)
    return true; /* no read has begun: a unit test, or init */
  uint64_t h = ident_hash(vl);
  struct series_slot *s = find(h);
  if (s) {
    if (s->held >= 0 && st.held[s->held].read == st.read) {
      st.held[s->held].v = v; /* twice in one read: the later count */
      return false;
    }
    s->seen = st.read; /* (a count held at the last read went out at the
                          read's start, flush_held()) */
    if (s->sent == st.read)
      return !defer(vl, s, v); /* its second value: half an Interval on */
    return true;
  }
  if (st.read == 1) {
    insert(h, -1); /* from before collectd started: as it is */
    return true;
  }
  struct series_slot *src = find(source_hash(vl));
  if (src && src->seen == st.read) {
    insert(h, -1); /* a renamed series counts on */
    return true;
  }
  return !hold(vl, h, v);
}

void series_renamed(const value_list_t *vl) {
  if (st.read < 2)
    return;
  uint64_t h = source_hash(vl);
  struct series_slot *s = find(h);
  if (s)
    s->seen = st.read;
  else
    insert(h, -1);
}

/* The counts held at the last read go out first, at the read's start, and
 * the read's own values at their turn: the two values of one identifier
 * are the read's whole length apart in collectd's write queue, whose
 * threads take neighbours in either order (uc_update() and the rrdtool
 * plugin then drop the older: "Value too old"). */
static void flush_held(void);

void series_read_begin(void) {
  late_send(UINT64_MAX); /* second values the thread has not sent yet */
  st.read++;
  st.t_now = now_cdtime();
  flush_held();
}

/* Counts held in an earlier read go out now; those of this read wait for
 * the next. */
static void flush_held(void) {
  size_t kept = 0;
  for (size_t i = 0; i < st.nheld; i++) {
    struct series_held hd = st.held[i];
    if (!hd.h)
      continue;
    struct series_slot *s = find(hd.h);
    if (hd.read != st.read) {
      value_list_t vl = VALUE_LIST_INIT;
      ids_to_vl(&vl, hd.id);
      dispatch_at(&vl, hd.v, hd.t);
      if (s) {
        s->held = -1;
        s->sent = st.read; /* its next value waits (defer()) */
      }
      continue;
    }
    if (s)
      s->held = (int32_t)kept;
    st.held[kept++] = hd;
  }
  st.nheld = kept;
}

/* The read's counts wait for the next read's start (flush_held()). */
void series_read_end(void) {}

void series_reset(void) {
  pthread_mutex_lock(&late.lock);
  bool join = late.running;
  late.stop = true;
  pthread_cond_signal(&late.cond);
  pthread_mutex_unlock(&late.lock);
  if (join)
    pthread_join(late.thread, NULL);
  free(late.q); /* like the held counts, not sent at shutdown */
  late.q = NULL;
  late.head = late.n = late.cap = 0;
  late.running = late.stop = false;
  free(st.slot);
  free(st.held);
  memset(&st, 0, sizeof(st));
}
