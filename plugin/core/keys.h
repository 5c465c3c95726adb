// SPDX-License-Identifier: GPL-2.0-only
/* The configuration keys: one table per block (<Plugin ebpf>'s globals in
 * core/ebpf.c, each feature's in its config file), each row a key's name,
 * kind, range, default, whether it may repeat and one line of doc. The
 * parsers take the key, its repetition and its range from the row, the
 * features their defaults (cfg_key_default()), and tests/unit/keys_test.c
 * holds the man page and the README to the rows: so a key's facts are
 * written once. Below everything, like base.h. */
#ifndef EBPF_KEYS_H
#define EBPF_KEYS_H

#include "core/base.h"

enum cfg_kind {
  CK_BOOL,    /* true or false */
  CK_INT,     /* an integer in [min, max] */
  CK_SECONDS, /* a number of seconds in [min, max] */
  CK_STRING,  /* one string */
  CK_STRINGS, /* one or more strings */
  CK_OTHER,   /* the feature parses the values itself (a list of numbers,
               * a word or a number...); min and max may still bound them */
};

struct cfg_key {
  const char *name;
  enum cfg_kind kind;
  double min, max;  /* CK_INT, CK_SECONDS (and CK_OTHER where it says) */
  double def;       /* the default of a CK_BOOL, CK_INT or CK_SECONDS */
  const char *show; /* the default as the docs write it; NULL: def's value */
  bool repeat;      /* may be given more than once */
  const char *doc;  /* one line */
};

struct cfg_block {
  const char *name; /* "Netstacklat"; "Plugin ebpf" for the globals */
  const struct cfg_key *keys;
  size_t nkeys;
};

/* The row of ci's key in b (case as collectd's own keys: insensitive),
 * after refusing a key b does not know and a key given twice (seen[]: one
 * flag per row, the caller's, false at the block's start). Returns the
 * row's index, or -1 after an ERROR that names the key and the block. */
int cfg_key_find(const struct cfg_block *b, const oconfig_item_t *ci,
                 bool *seen);

/* Every key of the block ci: each found (cfg_key_find()) and handed to
 * one(ctx, key's item, row index). Returns how many failed (an ERROR each
 * logged). */
int cfg_block_walk(const struct cfg_block *b, const oconfig_item_t *ci,
                   bool *seen,
                   int (*one)(void *ctx, const oconfig_item_t *c, int k),
                   void *ctx);

/* The value of a CK_BOOL, CK_INT, CK_SECONDS or CK_STRING(S) row, checked
 * against the row (ERROR naming key, block and what was expected). */
int cfg_key_bool(const struct cfg_key *k, const oconfig_item_t *ci, bool *out);
int cfg_key_int(const struct cfg_key *k, const oconfig_item_t *ci,
                long long *out);
int cfg_key_seconds(const struct cfg_key *k, const oconfig_item_t *ci,
                    double *out);

/* The row's default, for the feature's defaults. */
static inline double cfg_key_default(const struct cfg_block *b, size_t i) {
  return b->keys[i].def;
}

/* The default as the docs write it (show, or def formatted). */
const char *cfg_key_shown(const struct cfg_key *k, char *buf, size_t len);

#endif
