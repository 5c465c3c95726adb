// SPDX-License-Identifier: GPL-2.0-only
/* The configuration keys' tables; see keys.h. */
#include "core/keys.h"

#include <stdio.h>
#include <strings.h>

int cfg_key_find(const struct cfg_block *b, const oconfig_item_t *ci,
                 bool *seen) {
  cfg_in_block(b->name);
  for (size_t i = 0; i < b->nkeys; i++) {
    if (strcasecmp(ci->key, b->keys[i].name) != 0)
      continue;
    if (!b->keys[i].repeat && cfg_once(ci, &seen[i]))
      return -1;
    seen[i] = true;
    return (int)i;
  }
  cfg_unknown(ci, b->name);
  return -1;
}

int cfg_block_walk(const struct cfg_block *b, const oconfig_item_t *ci,
                   bool *seen,
                   int (*one)(void *ctx, const oconfig_item_t *c, int k),
                   void *ctx) {
  int errors = 0;
  for (int i = 0; i < ci->children_num; i++) {
    const oconfig_item_t *c = &ci->children[i];
    int k = cfg_key_find(b, c, seen);
    if (k < 0 || one(ctx, c, k))
      errors++;
  }
  return errors;
}

int cfg_key_bool(const struct cfg_key *k, const oconfig_item_t *ci, bool *out) {
  (void)k;
  return cfg_bool(ci, out);
}

int cfg_key_int(const struct cfg_key *k, const oconfig_item_t *ci,
                long long *out) {
  return cfg_int_range(ci, (long long)k->min, (long long)k->max, out);
}

int cfg_key_seconds(const struct cfg_key *k, const oconfig_item_t *ci,
                    double *out) {
  return cfg_seconds(ci, k->min, k->max, out);
}

const char *cfg_key_shown(const struct cfg_key *k, char *buf, size_t len) {
  if (k->show)
    return k->show;
  if (k->kind == CK_BOOL)
    snprintf(buf, len, "%s", k->def != 0 ? "true" : "false");
  else
    snprintf(buf, len, "%g", k->def);
  return buf;
}
