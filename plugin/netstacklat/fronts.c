// SPDX-License-Identifier: GPL-2.0-only
/* GroupBy: each CPU's ways (netstacklat_fronts, struct nsl_front in
 * bpf/netstacklat/netstacklat.h), the histograms of the first groups of a
 * hook it counts, on lines of its own. Read at every interval and added to
 * the read's (hook, group) entries (nsl_fronts_merge(), groups.h); a way
 * whose group is gone is released (netstacklat_front_release), so that
 * the CPU gives it to another group. */
#include "netstacklat/groups.h"
#include "netstacklat/internal.h"
#include "rx.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t way_at(const struct nsl_state *s, int cpu, __u32 hook, int w) {
  return ((size_t)cpu * NSL_NHOOKS + hook) * NSL_FRONT_WAYS + (size_t)w;
}

int nsl_fronts_init(struct nsl_state *s) {
  nsl_fronts_free(s);
  if (!s->fronts)
    return 0;
  size_t n = (size_t)s->ncpus * NSL_NHOOKS * NSL_FRONT_WAYS;
  s->front_rel = calloc(n, sizeof(*s->front_rel));
  s->front_keys = calloc(n, sizeof(*s->front_keys));
  s->front_buf = malloc((size_t)s->ncpus * sizeof(struct nsl_front));
  if (!s->front_rel || !s->front_keys || !s->front_buf) {
    nsl_fronts_free(s);
    return -ENOMEM;
  }
  return 0;
}

void nsl_fronts_free(struct nsl_state *s) {
  free(s->front_rel);
  free(s->front_keys);
  free(s->front_buf);
  s->front_rel = s->front_keys = NULL;
  s->front_buf = NULL;
}

/* A read's entries and the CPUs' ways added to them (fronts_read()):
 * each way to its (hook, group) among the first n0 of cur, else to one of
 * extra (a group whose entries are only in ways: its table entry gone
 * since the way was taken). */
struct front_merge {
  struct group_prev *cur;
  size_t n0;
  struct group_prev *extra;
  size_t nextra, cap;
  bool oom;
};

static void front_add(struct front_merge *m, __u32 hook, __u64 group,
                      const struct nsl_hist *h) {
  struct nsl_group_key k = {.group = group, .hook = hook};
  struct group_prev *p = bsearch(&k, m->cur, m->n0, sizeof(*m->cur), cmp_gkey);
  for (size_t i = 0; !p && i < m->nextra; i++)
    if (!cmp_gkey(&k, &m->extra[i]))
      p = &m->extra[i];
  if (!p) {
    if (h->count == 0 && /* every timed event is counted */
        !memcmp(h->skipped, (struct nsl_hist){0}.skipped, sizeof(h->skipped)))
      return; /* no event yet */
    if (m->nextra == m->cap) {
      size_t cap = m->cap ? 2 * m->cap : 8;
      struct group_prev *e = realloc(m->extra, cap * sizeof(*e));
      if (!e) {
        m->oom = true;
        return;
      }
      m->extra = e;
      m->cap = cap;
    }
    p = &m->extra[m->nextra++];
    memset(p, 0, sizeof(*p));
    p->key = k;
  }
  nsl_add_hist(&p->h, h);
}

/* Every way of every CPU of the hooks that run, added to m with its
 * group (front_add()), but a way released and not yet freed by its CPU
 * (its counts were the gone group's last, already counted). Returns 0, or
 * -1 when a hook's ways could not be read (this interval's grouped values
 * are then left out, as for the table: a group read without its ways
 * would go back). */
static int fronts_read(struct nsl_state *s, struct front_merge *m) {
  if (!s->fronts || !s->front_buf)
    return 0;
  int fd = bpf_map__fd(s->skel->maps.netstacklat_fronts);
  const struct nsl_front *f = s->front_buf;
  for (__u32 h = 0; h < NSL_NHOOKS; h++) {
    if (!s->hooks[h].wanted || s->hooks[h].flavour < 0)
      continue;
    if (bpf_map_lookup_elem(fd, &h, s->front_buf))
      return -1;
    for (int c = 0; c < s->ncpus; c++)
      for (int w = 0; w < NSL_FRONT_WAYS; w++) {
        __u64 k = f[c].key[w];
        size_t at = way_at(s, c, h, w);
        s->front_keys[at] = k;
        if (k && s->front_rel[at] != k)
          front_add(m, h, k, &f[c].h[w]);
      }
  }
  return 0;
}

/* The group is gone: every way of hook that held it at the last read is
 * released, one write per CPU that has one. */
void nsl_fronts_release(struct nsl_state *s, __u32 hook, __u64 group) {
  if (!s->fronts || !s->front_keys || hook >= NSL_NHOOKS)
    return;
  int fd = bpf_map__fd(s->skel->maps.netstacklat_front_release);
  static bool warned;
  for (int c = 0; c < s->ncpus; c++) {
    __u64 *rel = &s->front_rel[way_at(s, c, hook, 0)];
    const __u64 *keys = &s->front_keys[way_at(s, c, hook, 0)];
    struct nsl_front_release r;
    memcpy(r.key, rel, sizeof(r.key));
    bool any = false;
    for (int w = 0; w < NSL_FRONT_WAYS; w++)
      if (keys[w] == group && rel[w] != group) {
        r.key[w] = group;
        any = true;
      }
    if (!any)
      continue;
    __u32 i = (__u32)c * NSL_NHOOKS + hook;
    /* Not read again either way: its counts so far were the gone group's
     * last (read again, they would be counted in "other" twice). */
    if (bpf_map_update_elem(fd, &i, &r, BPF_ANY) && !warned) {
      E_WARNING("netstacklat: releasing CPU %d's way of a gone group "
                "failed: %s; the way stays the gone group's, and events "
                "counted there are not read. Said once.",
                c, ERRSTR(errno));
      warned = true;
    }
    memcpy(rel, r.key, sizeof(r.key));
  }
}

struct group_prev *nsl_fronts_merge(struct nsl_state *s,
                                    struct group_prev *cur, size_t *n) {
  struct front_merge m = {.cur = cur, .n0 = *n};
  int err = fronts_read(s, &m);
  if (err || m.oom) {
    static bool warned;
    if (!warned)
      E_WARNING("netstacklat: reading the CPUs' ways failed (%s); this "
                "interval's grouped values are left out. Said once.",
                err ? ERRSTR(errno) : "out of memory");
    warned = true;
    free(m.extra);
    return NULL;
  }
  if (m.nextra) {
    size_t room = *n + m.nextra;
    if (room > s->gspare_cap) {
      struct group_prev *g = realloc(s->gspare, room * sizeof(*g));
      if (!g) {
        free(m.extra);
        return NULL;
      }
      s->gspare = cur = g;
      s->gspare_cap = room;
    }
    memcpy(cur + *n, m.extra, m.nextra * sizeof(*cur));
    *n = room;
    qsort(cur, *n, sizeof(*cur), cmp_gkey);
  }
  free(m.extra);
  return cur;
}
