// SPDX-License-Identifier: GPL-2.0-only
/* The configuration keys' tables (core/keys.h): each block's rows sound,
 * the parsers held to them (a key given twice, out of range, unknown),
 * and the man page held to the rows: every key with its default, range
 * and repetition as the code has them, and no key the code does not know.
 * Run from the top of the tree, as tests/run does. */
#include "../../plugin/core/ebpf.c"
#include "mock_collectd.h"
#include "testlib.h"

#include <ctype.h>
#include <math.h>

static const struct cfg_block *blocks(size_t i) {
  if (i == 0)
    return &ebpf_global_keys;
  return i - 1 < NFEATURES ? features[i - 1]->keys : NULL;
}
#define NBLOCKS (NFEATURES + 1)

DEF_TEST(rows_sound) {
  for (size_t b = 0; b < NBLOCKS; b++) {
    const struct cfg_block *blk = blocks(b);
    if (!blk)
      FAILF("feature %s has no key table", features[b - 1]->block);
    if (b > 0)
      CHECK_EQ_STR(features[b - 1]->block, blk->name);
    CHECK(blk->nkeys > 0);
    for (size_t i = 0; i < blk->nkeys; i++) {
      const struct cfg_key *k = &blk->keys[i];
      if (!k->name || !k->doc || !k->doc[0])
        FAILF("<%s> row %zu has no name or doc", blk->name, i);
      for (size_t j = 0; j < i; j++)
        if (!strcasecmp(k->name, blk->keys[j].name))
          FAILF("<%s> %s twice", blk->name, k->name);
      if ((k->kind == CK_INT || k->kind == CK_SECONDS) && !k->show &&
          (k->def < k->min || k->def > k->max))
        FAILF("<%s> %s: default %g outside [%g, %g]", blk->name, k->name,
              k->def, k->min, k->max);
      if ((k->kind == CK_INT || k->kind == CK_SECONDS) && k->min > k->max)
        FAILF("<%s> %s: empty range", blk->name, k->name);
    }
  }
  return 0;
}

/* ---- the man page ---- */

/* The =head1 section of a block: "GLOBAL OPTIONS" for <Plugin ebpf>, the
 * block's name in capitals for the others; [start, end). */
static bool section(char *pod, const char *block, char **start, char **end) {
  char want[64];
  if (!strcmp(block, "Plugin ebpf"))
    snprintf(want, sizeof(want), "\n=head1 GLOBAL OPTIONS\n");
  else {
    int n = snprintf(want, sizeof(want), "\n=head1 ");
    for (const char *c = block; *c && n < (int)sizeof(want) - 2; c++)
      want[n++] = (char)toupper((unsigned char)*c);
    want[n++] = '\n';
    want[n] = 0;
  }
  *start = strstr(pod, want);
  if (!*start)
    return false;
  *end = strstr(*start + 1, "\n=head1 ");
  if (!*end)
    *end = *start + strlen(*start);
  return true;
}

/* The keys the section documents: "=item B<Key> I<type>" lines (hook and
 * value lists have no I<type>). */
static int doc_keys(char *start, char *end, char names[][64], char *body[],
                    int max) {
  int n = 0;
  for (char *p = start; (p = strstr(p, "\n=item B<")) && p < end; p++) {
    char name[64];
    if (sscanf(p, "\n=item B<%63[A-Za-z]> I<", name) != 1 ||
        !strstr(p, "> I<") || strstr(p, "> I<") > strchr(p + 1, '\n'))
      continue;
    if (n < max) {
      snprintf(names[n], 64, "%s", name);
      body[n] = p + 1;
    }
    n++;
  }
  return n;
}

/* The text of one item, up to the next =item, =back or =head. */
static void item_text(const char *item, const char *end, char *out,
                      size_t len) {
  const char *stop = end;
  for (const char *m = item + 1; (m = strstr(m, "\n=")) && m < end; m++)
    if (!strncmp(m, "\n=item", 6) || !strncmp(m, "\n=back", 6) ||
        !strncmp(m, "\n=head", 6)) {
      stop = m;
      break;
    }
  size_t n = (size_t)(stop - item) < len - 1 ? (size_t)(stop - item) : len - 1;
  memcpy(out, item, n);
  out[n] = 0;
}

static bool same_value(const char *a, const char *b) {
  char *ea, *eb;
  double x = strtod(a, &ea), y = strtod(b, &eb);
  if (ea != a && !*ea && eb != b && !*eb)
    return fabs(x - y) <= 1e-12 * fmax(1, fabs(x));
  return !strcasecmp(a, b);
}

static int check_item(const struct cfg_block *blk, const struct cfg_key *k,
                      const char *text) {
  char got[256] = "", shown[64];
  const char *d = strstr(text, "\nDefault: ");
  if (!d || sscanf(d, "\nDefault: %255[^\n]", got) != 1)
    FAILF("man page, <%s> %s: no \"Default:\" line", blk->name, k->name);
  size_t n = strlen(got);
  if (n && got[n - 1] == '.')
    got[n - 1] = 0;
  const char *want = cfg_key_shown(k, shown, sizeof(shown));
  if (!same_value(want, got))
    FAILF("man page, <%s> %s: \"Default: %s\", the code's is \"%s\"",
          blk->name, k->name, got, want);
  const char *r = strstr(text, "\nRange: ");
  if (k->kind == CK_INT || k->kind == CK_SECONDS ||
      (k->kind == CK_OTHER && k->min < k->max)) {
    double lo, hi;
    if (!r || sscanf(r, "\nRange: %lf to %lf", &lo, &hi) != 2)
      FAILF("man page, <%s> %s: no \"Range: <min> to <max>.\" line",
            blk->name, k->name);
    if (fabs(lo - k->min) > 1e-12 * fmax(1, fabs(lo)) ||
        fabs(hi - k->max) > 1e-12 * fmax(1, fabs(hi)))
      FAILF("man page, <%s> %s: range %g to %g, the code's %g to %g",
            blk->name, k->name, lo, hi, k->min, k->max);
  }
  bool rep = strstr(text, "\nMay be repeated.") != NULL;
  if (rep != k->repeat)
    FAILF("man page, <%s> %s: %s \"May be repeated.\", the code says it %s",
          blk->name, k->name, rep ? "says" : "lacks",
          k->repeat ? "may" : "may not");
  return 0;
}

DEF_TEST(man_page) {
  char *pod = tl_slurp("docs/collectd-ebpf.pod");
  CHECK(pod != NULL);
  static char names[64][64];
  static char *body[64];
  static char text[16384];
  for (size_t b = 0; b < NBLOCKS; b++) {
    const struct cfg_block *blk = blocks(b);
    if (!blk)
      continue; /* rows_sound says so */
    char *start, *end;
    if (!section(pod, blk->name, &start, &end))
      FAILF("man page: no section for <%s>", blk->name);
    int n = doc_keys(start, end, names, body, 64);
    CHECK(n <= 64);
    for (int i = 0; i < n; i++) {
      const struct cfg_key *k = NULL;
      for (size_t j = 0; j < blk->nkeys; j++)
        if (!strcmp(blk->keys[j].name, names[i]))
          k = &blk->keys[j];
      if (!k)
        FAILF("man page documents %s in <%s>, which the code does not know",
              names[i], blk->name);
    }
    for (size_t j = 0; j < blk->nkeys; j++) {
      int at = -1;
      for (int i = 0; i < n; i++)
        if (!strcmp(blk->keys[j].name, names[i]))
          at = i;
      if (at < 0)
        FAILF("man page: <%s> %s is not documented", blk->name,
              blk->keys[j].name);
      item_text(body[at], end, text, sizeof(text));
      if (check_item(blk, &blk->keys[j], text))
        return -1;
    }
  }
  free(pod);
  return 0;
}

/* ---- the snippet and the README ---- */

static const struct cfg_key *key_in(const struct cfg_block *blk,
                                    const char *name) {
  for (size_t j = 0; blk && j < blk->nkeys; j++)
    if (!strcasecmp(blk->keys[j].name, name))
      return &blk->keys[j];
  return NULL;
}

static const struct cfg_block *block_named(const char *name) {
  for (size_t b = 0; b < NBLOCKS; b++)
    if (blocks(b) && !strcasecmp(blocks(b)->name, name))
      return blocks(b);
  return NULL;
}

/* A commented key line shows the key's default, unless the key has none
 * (shown "none", "off"...: then an example) or its default is not a value
 * one writes (shown in words). */
static bool shown_is_value(const struct cfg_key *k, const char *shown) {
  if (!k->show)
    return true;
  return strcmp(shown, "none") && strcmp(shown, "off") && !strchr(shown, ',') &&
         !strstr(shown, " of ") && !strstr(shown, "all ");
}

static void unquote(const char *in, char *out, size_t len) {
  size_t n = 0;
  for (const char *c = in; *c && n + 1 < len; c++)
    if (*c != '"')
      out[n++] = *c;
  while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
    n--;
  out[n] = 0;
}

DEF_TEST(snippet) {
  char *conf = tl_slurp("collectd.conf.d/ebpf.conf");
  CHECK(conf != NULL);
  const struct cfg_block *blk = &ebpf_global_keys;
  bool named[NBLOCKS][64] = {{0}};
  int in_plugin = 0;
  for (char *line = strtok(conf, "\n"); line; line = strtok(NULL, "\n")) {
    char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    char name[64];
    if (sscanf(p, "<Plugin %63[^>]>", name) == 1) {
      in_plugin = !strcmp(name, "ebpf");
      continue;
    }
    if (!in_plugin)
      continue;
    if (sscanf(p, "</%63[^>]>", name) == 1) {
      blk = &ebpf_global_keys;
      continue;
    }
    if (sscanf(p, "<%63[^>/]>", name) == 1) {
      blk = block_named(name);
      if (!blk)
        FAILF("snippet: block <%s> the code does not know", name);
      continue;
    }
    bool commented = *p == '#';
    if (commented)
      p++;
    char key[64], value[512] = "";
    if (sscanf(p, "%63[A-Za-z] %511[^\n]", key, value) < 2 || !isupper(key[0]))
      continue; /* prose */
    const struct cfg_key *k = key_in(blk, key);
    if (!k) {
      if (commented)
        continue; /* a comment's words, e.g. "Averages 10 60 300 (+2 ...)" */
      FAILF("snippet: %s in <%s> is no key of that block", key, blk->name);
    }
    size_t b;
    for (b = 0; b < NBLOCKS && blocks(b) != blk; b++)
      ;
    named[b][k - blk->keys] = true;
    char shown[128], got[512], want[128];
    const char *sh = cfg_key_shown(k, shown, sizeof(shown));
    if (!commented || !shown_is_value(k, sh))
      continue;
    unquote(value, got, sizeof(got));
    unquote(sh, want, sizeof(want));
    if (!same_value(want, got))
      FAILF("snippet: #%s %s in <%s>, but its default is %s", key, got,
            blk->name, want);
  }
  for (size_t b = 0; b < NBLOCKS; b++)
    for (size_t j = 0; blocks(b) && j < blocks(b)->nkeys; j++)
      if (!named[b][j])
        FAILF("snippet: <%s> %s is not named", blocks(b)->name,
              blocks(b)->keys[j].name);
  free(conf);
  return 0;
}

/* Words in the README that name a key: `Key` or `Key value` in backticks,
 * a capital first and another inside (SampleEvery) or a key's own name. A
 * key-shaped word that no block has and that is not collectd's own (or
 * another plugin's) is a key the README invents or misspells. */
static const char *const not_ours[] = {
    "LoadPlugin", "Interval", "Hostname", "FQDNLookup", "WriteThreads",
    "ReadThreads", "StoreRates", "RRARows", "PrintSeverity", "TypesDB",
    "BaseDir", "PluginDir", "PIDFile", "SocketFile", "SocketGroup",
    "SocketPerms", "DataDir", "LogLevel", "NotificationExec", "Exec",
    "Timestamp", "PruneCalled", "LimitNOFILE", "AmbientCapabilities",
    "CapabilityBoundingSet", "NoNewPrivileges", "ProtectClock",
    "RestrictAddressFamilies", "SystemCallFilter", "StandardOutput",
    "UdpNoPorts", "TcpExtTCPRcvQDrop", "TCPRcvQDrop", "InErrors",
    "RcvbufErrors", "NoPorts", "CapEff", "TimeoutStopSec", "ExecStart",
    "LogTimestamp", "WriteQueueLimitHigh", "WriteQueueLimitLow", NULL};

static bool is_ours_or_known(const char *w) {
  for (size_t b = 0; b < NBLOCKS; b++)
    if (key_in(blocks(b), w))
      return true;
  for (const char *const *n = not_ours; *n; n++)
    if (!strcmp(*n, w))
      return true;
  return false;
}

DEF_TEST(readme) {
  char *md = tl_slurp("README.md");
  CHECK(md != NULL);
  int keys = 0;
  for (char *p = strchr(md, '`'); p; p = strchr(p + 1, '`')) {
    char *end = strchr(p + 1, '`');
    if (!end)
      break;
    char w[64];
    if (sscanf(p + 1, "%63[A-Za-z]", w) == 1 && isupper((unsigned char)w[0])) {
      size_t n = strlen(w);
      char after = p[1 + n];
      int caps = 0;
      for (size_t i = 1; i < n; i++)
        caps += isupper((unsigned char)w[i]) != 0;
      bool keyish = (after == '`' || after == ' ') && caps >= 1 &&
                    caps < (int)n - 1 && islower((unsigned char)w[1]);
      if (keyish) {
        keys++;
        if (!is_ours_or_known(w))
          FAILF("README names `%s`, which no block has", w);
      }
    }
    p = end;
  }
  CHECK(keys >= 10);
  free(md);
  return 0;
}

int main(void) {
  tl_prog = "keys";
  RUN_TEST(rows_sound);
  RUN_TEST(man_page);
  RUN_TEST(snippet);
  RUN_TEST(readme);
  END_TEST;
}
