// SPDX-License-Identifier: GPL-2.0-only
/* drops' names and counters, per reason or per location; see names.h. */
#include "drops/names.h"
#include "core/ebpf.h"
#include "drops/drops.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FEATURE "drops"
/* Sanity bound on the enum's size (6.18 has 128 values). */
#define MAX_REASONS 4096

/* Reasons: slot i < nreasons is the enum's value i (its name in
 * reason_names[i], NULL for a gap); slot nreasons counts the rest. */
static uint32_t nreasons;
static char **reason_names;
static bool *reason_on;     /* dispatched: seen once, and not ignored */
static bool *reason_ignored;
static value_list_t *reason_vls;
static int64_t consumed = -1; /* SKB_CONSUMED, -1 when the enum has none */

/* Locations: each address seen, and the function it is in. */
struct location {
  uint64_t addr;
  int fn; /* index into fns, -1: at_other */
};
struct function {
  char name[DATA_MAX_NAME_LEN]; /* plugin_instance "at_<function>" */
  value_list_t vl;
  int64_t sum; /* this read */
};
static struct location *locs;
static size_t nlocs;
static struct function *fns;
static size_t nfns;
static long long max_fns;     /* MaxLocations */
static value_list_t other_vl; /* drops-at_other */
static bool other_seen, other_ready;
static bool kallsyms_warned;
/* Where the kernel's symbols are (a unit test gives its own file). */
static const char *kallsyms_path = "/proc/kallsyms";

/* -------------------------------------------------------------- reasons */

bool drops_reason_name_ok(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) &&
        *s != '_')
      return false;
  return true;
}

/* The metric's name of an enumerator: SKB_DROP_REASON_NO_SOCKET ->
 * no_socket. */
static char *reason_name(const char *e) {
  if (!strncmp(e, "SKB_DROP_REASON_", 16))
    e += 16;
  else if (!strncmp(e, "SKB_", 4))
    e += 4;
  char *s = strdup(e);
  for (char *p = s; p && *p; p++)
    *p = (char)tolower((unsigned char)*p);
  return s;
}

int drops_reasons_read(const struct btf *btf) {
  int id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
  if (id < 0)
    return 0;
  const struct btf_type *t = btf__type_by_id(btf, id);
  const struct btf_enum *e = btf_enum(t);
  int n = btf_vlen(t);
  int64_t maxv = -1, explicit_max = -1;
  for (int i = 0; i < n; i++) {
    const char *name = btf__name_by_offset(btf, e[i].name_off);
    if (!strcmp(name, "SKB_DROP_REASON_MAX"))
      explicit_max = e[i].val;
    else if (e[i].val >= 0 && e[i].val < MAX_REASONS && e[i].val > maxv)
      maxv = e[i].val;
  }
  nreasons = (uint32_t)(explicit_max > 0 && explicit_max <= MAX_REASONS
                            ? explicit_max
                            : maxv + 1);
  reason_names = calloc(nreasons + 1, sizeof(*reason_names));
  reason_on = calloc(nreasons + 1, sizeof(*reason_on));
  reason_ignored = calloc(nreasons + 1, sizeof(*reason_ignored));
  reason_vls = calloc(nreasons + 1, sizeof(*reason_vls));
  if (!reason_names || !reason_on || !reason_ignored || !reason_vls)
    return -ENOMEM;
  for (int i = 0; i < n; i++) {
    const char *name = btf__name_by_offset(btf, e[i].name_off);
    if (!strcmp(name, "SKB_CONSUMED"))
      consumed = e[i].val;
    if (e[i].val < 0 || (uint32_t)e[i].val >= nreasons ||
        reason_names[e[i].val])
      continue;
    reason_names[e[i].val] = reason_name(name);
  }
  reason_names[nreasons] = strdup("other");
  return 1;
}

uint32_t drops_nreasons(void) { return nreasons; }

int64_t drops_consumed(void) { return consumed; }

/* IgnoreReason against this kernel's names: a name it does not have is a
 * condition of the host (the reason came with another kernel), not an
 * error of the configuration. */
void drops_reasons_ignore(char **ignore, size_t nignore) {
  for (size_t k = 0; k < nignore; k++) {
    bool found = false;
    for (uint32_t i = 0; i <= nreasons; i++)
      if (reason_names[i] && !strcmp(reason_names[i], ignore[k])) {
        reason_ignored[i] = found = true;
      }
    if (!found)
      E_WARNING(FEATURE ": IgnoreReason \"%s\": this kernel has no such drop "
                "reason (its names are read from its BTF, enum "
                "skb_drop_reason); nothing is left out for it.",
                ignore[k]);
  }
}

/* IgnoreReason: no record for those either. */
void drops_reasons_quiet(int quiet_fd) {
  uint8_t one = 1;
  for (uint32_t i = 0; i < nreasons + 1; i++)
    if (reason_ignored[i])
      bpf_map_update_elem(quiet_fd, &i, &one, 0);
}

/* The counters are per CPU (a drop storm at one reason or site writes no
 * line another CPU writes): ebpf_ebpf_percpu_sum() adds them up. */
void drops_reasons_dispatch(int fd) {
  for (uint32_t i = 0; i <= nreasons; i++) {
    uint64_t sum;
    if (reason_ignored[i] || !ebpf_percpu_sum(fd, &i, &sum))
      continue;
    if (!reason_on[i]) {
      if (!sum)
        continue; /* dispatched from its first drop on */
      char inst[DATA_MAX_NAME_LEN];
      if (reason_names[i])
        snprintf(inst, sizeof(inst), "%s", reason_names[i]);
      else
        snprintf(inst, sizeof(inst), "reason_%u", i);
      vl_prepare(&reason_vls[i], FEATURE, inst);
      reason_on[i] = true;
    }
    vl_derive(&reason_vls[i], "operations", "", (int64_t)sum);
  }
}

const char *drops_reason_of(uint64_t cause, char *buf, size_t len) {
  if (cause < nreasons && reason_names[cause])
    return reason_names[cause];
  if (cause < nreasons) { /* a gap in the enum */
    snprintf(buf, len, "reason_%u", (unsigned)cause);
    return buf;
  }
  return "other";
}

/* ------------------------------------------------------------ locations */

int drops_locations_alloc(long long max_locations) {
  max_fns = max_locations;
  locs = calloc(DROPS_LOCATIONS_MAX, sizeof(*locs));
  fns = calloc((size_t)max_locations, sizeof(*fns));
  return locs && fns ? 0 : -ENOMEM;
}

/* The function an address is in, as a metric name: the text symbol of
 * /proc/kallsyms with the highest address not above it, cut at its first
 * '.' (a compiler's .isra.0, .cold...). */
static int name_fn(const char *sym) {
  char name[DATA_MAX_NAME_LEN];
  size_t n = strcspn(sym, ".");
  snprintf(name, sizeof(name), "at_%.*s", (int)n, sym);
  for (size_t i = 0; i < nfns; i++)
    if (!strcmp(fns[i].name, name))
      return (int)i;
  if (nfns >= (size_t)max_fns)
    return -1;
  struct function *f = &fns[nfns];
  snprintf(f->name, sizeof(f->name), "%s", name);
  vl_prepare(&f->vl, FEATURE, f->name);
  return (int)nfns++;
}

/* Name the locations from `from` on, in one pass over /proc/kallsyms. */
static void name_locations(size_t from) {
  size_t n = nlocs - from;
  uint64_t best[n];
  char(*sym)[256] = calloc(n, sizeof(*sym));
  if (!sym)
    return;
  memset(best, 0, sizeof(best));
  FILE *f = fopen(kallsyms_path, "re");
  bool addrs = false;
  if (f) {
    char line[512];
    while (fgets(line, sizeof(line), f)) {
      unsigned long long a;
      char type, name[256];
      if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
        continue;
      if (a)
        addrs = true;
      if (type != 't' && type != 'T')
        continue;
      for (size_t i = 0; i < n; i++)
        if (a <= locs[from + i].addr && a > best[i]) {
          best[i] = a;
          snprintf(sym[i], sizeof(sym[i]), "%s", name);
        }
    }
    fclose(f);
  }
  if ((!f || !addrs) && !kallsyms_warned) {
    E_WARNING(FEATURE ": %s %s: drop locations cannot be named "
              "and are counted as at_other (collectd needs CAP_SYSLOG, or "
              "kernel.kptr_restrict 0 or 1 with root, to see kernel "
              "addresses).",
              kallsyms_path, f ? "shows no addresses" : "cannot be read");
    kallsyms_warned = true;
  }
  for (size_t i = 0; i < n; i++)
    locs[from + i].fn = best[i] ? name_fn(sym[i]) : -1;
  free(sym);
}

/* The index of a location in locs, added (not yet named: fn -2) when it
 * is new; nlocs when locs is full. */
static size_t loc_index(uint64_t addr) {
  size_t i;
  for (i = 0; i < nlocs && locs[i].addr != addr; i++)
    ;
  if (i == nlocs && nlocs < DROPS_LOCATIONS_MAX) {
    locs[nlocs].addr = addr;
    locs[nlocs].fn = -2;
    nlocs++;
  }
  return i;
}

void drops_locations_dispatch(int fd, int overflow_fd) {
  size_t from = nlocs, nseen = 0;
  static struct {
    size_t loc;
    uint64_t drops;
  } seen[DROPS_LOCATIONS_MAX];
  uint64_t key, next, *cur = NULL;
  while (nseen < DROPS_LOCATIONS_MAX &&
         bpf_map_get_next_key(fd, cur, &next) == 0) {
    key = next;
    cur = &key;
    if (ebpf_percpu_sum(fd, &key, &seen[nseen].drops))
      seen[nseen++].loc = loc_index(key);
  }
  if (nlocs > from) /* new ones: named now, from /proc/kallsyms */
    name_locations(from);
  for (size_t i = 0; i < nfns; i++)
    fns[i].sum = 0;
  int64_t other = 0;
  for (size_t i = 0; i < nseen; i++) {
    size_t l = seen[i].loc;
    if (l < nlocs && locs[l].fn >= 0)
      fns[locs[l].fn].sum += (int64_t)seen[i].drops;
    else
      other += (int64_t)seen[i].drops;
  }
  uint32_t zero = 0;
  uint64_t over;
  if (ebpf_percpu_sum(overflow_fd, &zero, &over))
    other += (int64_t)over;
  for (size_t i = 0; i < nfns; i++)
    vl_derive(&fns[i].vl, "operations", "", fns[i].sum);
  if (other)
    other_seen = true;
  if (other_seen) {
    if (!other_ready) {
      vl_prepare(&other_vl, FEATURE, "at_other");
      other_ready = true;
    }
    vl_derive(&other_vl, "operations", "", other);
  }
}

const char *drops_location_name(uint64_t addr) {
  size_t from = nlocs, i = loc_index(addr);
  if (nlocs > from)
    name_locations(from);
  return i < nlocs && locs[i].fn >= 0 ? fns[locs[i].fn].name : "at_other";
}

/* ------------------------------------------------------------------ end */

void drops_names_free(void) {
  for (uint32_t i = 0; reason_names && i <= nreasons; i++)
    free(reason_names[i]);
  free(reason_names);
  free(reason_on);
  free(reason_ignored);
  free(reason_vls);
  reason_names = NULL;
  reason_on = reason_ignored = NULL;
  reason_vls = NULL;
  nreasons = 0;
  consumed = -1;
  free(locs);
  free(fns);
  locs = NULL;
  fns = NULL;
  nlocs = nfns = 0;
  max_fns = 0;
  other_seen = other_ready = kallsyms_warned = false;
}
