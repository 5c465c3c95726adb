// SPDX-License-Identifier: GPL-2.0-only
/* netstacklat's interfaces, user space's side (see ifaces.h). */
#include "netstacklat/ifaces.h"

#include <bpf/bpf.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FEATURE "netstacklat"

int nsl_iff_init(struct nsl_iffilter *f, char *const *names, size_t n,
                 const struct netns *ns) {
  *f = (struct nsl_iffilter){.names = names, .n = n, .ns = ns, .map_fd = -1};
  if (!n)
    return 0;
  f->cur = calloc(n, sizeof(*f->cur));
  return f->cur ? 0 : -ENOMEM;
}

uint64_t nsl_iff_key(const struct nsl_iffilter *f, unsigned idx) {
  return f->ns->kind == NETNS_ALL ? ((uint64_t)netns_self_inum() << 32) | idx
                                  : idx;
}

void nsl_iff_refresh(struct nsl_iffilter *f, bool at_start) {
  if (!f->n || !f->cur || f->map_fd < 0)
    return;
  /* At start netstacklat_init() entered it once already (and stops when it
   * cannot); a namespace that cannot be entered later (deleted) is said
   * once, not at every refresh. */
  int back, err = netns_try_enter(f->ns, &back);
  if (err) {
    if (!f->warned_enter)
      E_WARNING("netstacklat: cannot enter network namespace %s to look "
                "the Interface names up: %s; the filter stays as it is.",
                f->ns->path, ERRSTR(err));
    f->warned_enter = true;
    return;
  }
  f->warned_enter = false;
  unsigned now[f->n];
  for (size_t i = 0; i < f->n; i++)
    now[i] = if_nametoindex(f->names[i]);
  netns_leave(back, FEATURE);
  uint8_t one = 1;
  for (size_t i = 0; i < f->n; i++) {
    if (at_start && !now[i])
      E_WARNING("netstacklat: option \"Interface\" \"%s\": no such interface%s%s "
                "yet; its packets are counted once it exists (looked up at "
                "every read).",
                f->names[i], f->ns->path[0] ? " in " : "", f->ns->path);
    if (now[i] == f->cur[i])
      continue;
    bool kept = false; /* the old index is another configured name's now */
    for (size_t j = 0; j < f->n && f->cur[i]; j++)
      kept = kept || (j != i && now[j] == f->cur[i]);
    uint64_t old_key = nsl_iff_key(f, f->cur[i]),
             new_key = nsl_iff_key(f, now[i]);
    if (f->cur[i] && !kept)
      bpf_map_delete_elem(f->map_fd, &old_key);
    if (now[i] && bpf_map_update_elem(f->map_fd, &new_key, &one, BPF_ANY)) {
      E_WARNING("netstacklat: interface \"%s\": cannot add index %u to the "
                "filter: %s",
                f->names[i], now[i], ERRSTR(errno));
      now[i] = 0;
    }
    if (!at_start && now[i] && !f->cur[i])
      E_INFO("netstacklat: interface \"%s\" exists now (index %u): its "
             "packets are counted.",
             f->names[i], now[i]);
    else if (!at_start && now[i])
      E_INFO("netstacklat: interface \"%s\" was made again (index %u, was "
             "%u): followed.",
             f->names[i], now[i], f->cur[i]);
    else if (!at_start)
      E_WARNING("netstacklat: interface \"%s\" is gone; its packets are "
                "counted again once it is back.",
                f->names[i]);
    f->cur[i] = now[i];
  }
}

void nsl_iff_free(struct nsl_iffilter *f) {
  free(f->cur);
  *f = (struct nsl_iffilter){.map_fd = -1};
}

/* Name the groups [from, to) of one namespace, from inside it. */
static void names_in(const struct nsl_ifnames *t, struct nsl_if_group *v,
                     size_t from, size_t to, uint32_t ns) {
  char nsname[64] = "";
  int back = -1, err = 0;
  bool own = t->ns->kind != NETNS_ALL || ns == netns_self_inum();
  if (t->ns->kind == NETNS_NAMED) {
    err = netns_enter(t->ns, FEATURE, &back);
  } else if (!own) {
    int fd = netns_open_inum(ns, nsname, sizeof(nsname));
    if (fd == -ENOENT) { /* the namespace is gone, and its interfaces */
      for (size_t i = from; i < to; i++)
        v[i].gone = true;
      return;
    }
    err = fd < 0 ? fd : netns_enter_fd(fd, &back);
    if (fd >= 0)
      close(fd);
    if (!nsname[0])
      snprintf(nsname, sizeof(nsname), "ns%u", ns);
  }
  for (size_t i = from; i < to; i++) {
    unsigned idx = (unsigned)(v[i].group & 0xffffffffu);
    char ifn[IF_NAMESIZE + 16];
    if (err || idx == 0 || !if_indextoname(idx, ifn)) {
      /* ENXIO/ENODEV: deleted; ifindex 0: made locally, no device. */
      if (!err && idx && (errno == ENXIO || errno == ENODEV)) {
        v[i].gone = true;
        continue;
      }
      snprintf(ifn, sizeof(ifn), "if%u", idx);
    }
    char path[sizeof(nsname) + sizeof(ifn) + 1];
    snprintf(path, sizeof(path), "%s%s%s", own ? "" : nsname, own ? "" : "/",
             ifn);
    instance_from_path(path, v[i].name);
    v[i].hash = path_hash(path);
  }
  netns_leave(back, FEATURE);
}

/* With "all": the namespaces of the groups, other than collectd's own,
 * found with one lookup for all of them (v sorted by group). */
static void lookup_foreign(const struct nsl_if_group *v, size_t n,
                           uint32_t self) {
  uint32_t *inums = malloc((n ? n : 1) * sizeof(*inums));
  if (!inums)
    return;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t ns = (uint32_t)(v[i].group >> 32);
    if (ns != self && (!k || inums[k - 1] != ns))
      inums[k++] = ns;
  }
  netns_lookup(inums, k);
  free(inums);
}

/* Entering a namespace to name its interfaces costs ~10 system calls; with
 * hundreds of namespaces that is most of a read. So another namespace's
 * groups keep the names of the last refresh while it is still there (its
 * lookup found it) and each of them has one, and each namespace is named
 * again every NSL_IF_RENAME_READS refreshes (spread over the refreshes by
 * its inode): an interface renamed there gets its new name within that. A
 * new interface is a new group, named at once. */
static bool names_kept(const struct nsl_ifnames *t, struct nsl_if_group *v,
                       size_t from, size_t to, uint32_t ns, uint32_t self) {
  if (t->ns->kind != NETNS_ALL || ns == self || !netns_found(ns) ||
      (ns + t->refreshes) % NSL_IF_RENAME_READS == 0)
    return false;
  for (size_t i = from; i < to; i++) {
    const struct nsl_if_group *old = nsl_ifnames_find(t, v[i].group);
    if (!old || old->gone)
      return false;
  }
  for (size_t i = from; i < to; i++)
    v[i] = *nsl_ifnames_find(t, v[i].group);
  return true;
}

void nsl_ifnames_refresh(struct nsl_ifnames *t, const uint64_t *groups,
                         size_t n) {
  struct nsl_if_group *v = malloc((n ? n : 1) * sizeof(*v));
  if (!v)
    return;
  for (size_t i = 0; i < n; i++)
    v[i] = (struct nsl_if_group){.group = groups[i]};
  qsort(v, n, sizeof(*v), cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || v[u - 1].group != v[i].group)
      v[u++] = v[i];
  uint32_t self = netns_self_inum();
  if (t->ns->kind == NETNS_ALL)
    lookup_foreign(v, u, self);
  t->refreshes++;
  /* Sorted by group, so by namespace: each entered once. */
  for (size_t i = 0; i < u;) {
    uint32_t ns = (uint32_t)(v[i].group >> 32);
    size_t j = i;
    while (j < u && (uint32_t)(v[j].group >> 32) == ns)
      j++;
    if (!names_kept(t, v, i, j, ns, self))
      names_in(t, v, i, j, ns);
    i = j;
  }
  free(t->v);
  t->v = v;
  t->n = u;
}

const struct nsl_if_group *nsl_ifnames_find(const struct nsl_ifnames *t,
                                            uint64_t group) {
  return t->n ? bsearch(&group, t->v, t->n, sizeof(*t->v), cmp_u64) : NULL;
}

void nsl_ifnames_free(struct nsl_ifnames *t) {
  netns_lookup_free();
  free(t->v);
  *t = (struct nsl_ifnames){.ns = t->ns};
}
