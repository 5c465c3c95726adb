// SPDX-License-Identifier: GPL-2.0-only
/* Linux PSI file parser. See psi_parse.h for the accepted format.
 *
 * Everything is done by hand on (buf, len): strtod() and friends depend on
 * the process locale and need a NUL-terminated string, neither of which
 * holds here. */
#include "pressure/psi_parse.h"

#include <errno.h>
#include <string.h>

struct psi_cursor {
  const char *buf;
  size_t len;
  size_t pos;
};

static bool psi_is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool psi_is_digit(char c) { return c >= '0' && c <= '9'; }

static bool psi_at_end(const struct psi_cursor *cur) {
  return cur->pos >= cur->len;
}

/* Skips blanks (not newlines); returns how many were skipped. */
static size_t psi_skip_blanks(struct psi_cursor *cur) {
  size_t start = cur->pos;
  while (cur->pos < cur->len && psi_is_blank(cur->buf[cur->pos]))
    cur->pos++;
  return cur->pos - start;
}

/* Consumes the literal lit (of length n) if it is next. */
static bool psi_accept(struct psi_cursor *cur, const char *lit, size_t n) {
  if (cur->len - cur->pos < n)
    return false;
  if (memcmp(cur->buf + cur->pos, lit, n) != 0)
    return false;
  cur->pos += n;
  return true;
}

/* Parses an unsigned decimal u64. Needs at least one digit. Consumes all
 * the digits even on overflow so the caller's error is -ERANGE rather than
 * a follow-on syntax error. */
static int psi_parse_u64(struct psi_cursor *cur, uint64_t *out) {
  uint64_t v = 0;
  bool overflow = false;
  size_t start = cur->pos;

  while (cur->pos < cur->len && psi_is_digit(cur->buf[cur->pos])) {
    unsigned d = (unsigned)(cur->buf[cur->pos] - '0');
    if (!overflow) {
      if (v > (UINT64_MAX - d) / 10)
        overflow = true;
      else
        v = v * 10 + d;
    }
    cur->pos++;
  }
  if (cur->pos == start)
    return -EINVAL;
  if (overflow)
    return -ERANGE;
  *out = v;
  return 0;
}

/* Fraction digits kept exactly: with an integer part <= 100 the scaled
 * value 100 * 10^13 + (10^13 - 1) stays below 2^53, so the numerator and
 * the power of ten are both exact doubles and a single IEEE division gives
 * the correctly rounded value (the same double strtod would return).
 * Further digits are validated but only make a sub-1e-13 difference. */
#define PSI_FRAC_DIGITS_EXACT 13

/* Parses an avg value: digits [ '.' digits ], 0 <= value <= 100. */
static int psi_parse_avg(struct psi_cursor *cur, double *out) {
  uint64_t ip = 0;
  bool big = false;
  size_t start = cur->pos;

  while (cur->pos < cur->len && psi_is_digit(cur->buf[cur->pos])) {
    if (!big) {
      ip = ip * 10 + (uint64_t)(cur->buf[cur->pos] - '0');
      if (ip > 100)
        big = true; /* stop accumulating; cannot overflow */
    }
    cur->pos++;
  }
  if (cur->pos == start)
    return -EINVAL; /* also rejects a sign or a leading '.' */

  uint64_t frac = 0, scale = 1;
  bool frac_nonzero = false;
  if (cur->pos < cur->len && cur->buf[cur->pos] == '.') {
    cur->pos++;
    size_t fstart = cur->pos;
    unsigned nd = 0;
    while (cur->pos < cur->len && psi_is_digit(cur->buf[cur->pos])) {
      unsigned d = (unsigned)(cur->buf[cur->pos] - '0');
      if (d != 0)
        frac_nonzero = true;
      if (nd < PSI_FRAC_DIGITS_EXACT) {
        frac = frac * 10 + d;
        scale *= 10;
        nd++;
      }
      cur->pos++;
    }
    if (cur->pos == fstart)
      return -EINVAL; /* "3." */
  }

  if (big || (ip == 100 && frac_nonzero))
    return -EINVAL; /* a percentage above 100 */

  *out = (double)(ip * scale + frac) / (double)scale;
  return 0;
}

/* Parses "avg10=A avg60=B avg300=C total=T" up to the end of the line. */
static int psi_parse_fields(struct psi_cursor *cur, struct psi_line *line) {
  static const struct {
    const char *key;
    size_t n;
  } avgs[3] = {{"avg10=", 6}, {"avg60=", 6}, {"avg300=", 7}};
  double *dst[3] = {&line->avg10, &line->avg60, &line->avg300};

  for (size_t i = 0; i < 3; i++) {
    if (psi_skip_blanks(cur) == 0)
      return -EINVAL;
    if (!psi_accept(cur, avgs[i].key, avgs[i].n))
      return -EINVAL;
    int st = psi_parse_avg(cur, dst[i]);
    if (st != 0)
      return st;
  }

  if (psi_skip_blanks(cur) == 0)
    return -EINVAL;
  if (!psi_accept(cur, "total=", 6))
    return -EINVAL;
  int st = psi_parse_u64(cur, &line->total_us);
  if (st != 0)
    return st;

  psi_skip_blanks(cur);
  if (psi_at_end(cur))
    return 0;
  if (cur->buf[cur->pos] == '\n') {
    cur->pos++;
    return 0;
  }
  return -EINVAL; /* trailing junk or a glued token */
}

static int psi_parse_impl(const char *buf, size_t len, struct psi_stats *out) {
  struct psi_cursor cur = {.buf = buf, .len = len, .pos = 0};
  bool any = false;

  if (buf == NULL && len != 0)
    return -EINVAL;

  for (;;) {
    psi_skip_blanks(&cur);
    if (psi_at_end(&cur))
      break;
    if (cur.buf[cur.pos] == '\n') { /* blank line */
      cur.pos++;
      continue;
    }
    any = true;

    struct psi_line *line;
    if (psi_accept(&cur, "some", 4))
      line = &out->some;
    else if (psi_accept(&cur, "full", 4))
      line = &out->full;
    else
      return -EINVAL;

    if (line->present)
      return -EINVAL; /* repeated line */

    int st = psi_parse_fields(&cur, line);
    if (st != 0)
      return st;
    line->present = true;
  }

  if (!any)
    return -ENODATA;
  return 0; /* at least one line, each "some" or "full" */
}

int psi_parse(const char *buf, size_t len, struct psi_stats *out) {
  if (out == NULL)
    return -EINVAL;
  memset(out, 0, sizeof(*out));
  int st = psi_parse_impl(buf, len, out);
  if (st != 0)
    memset(out, 0, sizeof(*out));
  return st;
}
