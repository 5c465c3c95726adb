// SPDX-License-Identifier: GPL-2.0-only
/* Strings from the kernel or a tenant in collectd's log, notification
 * messages and meta data: the escaping rule of base.h, and the log lines
 * that apply it. */
#include "core/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Code points that are printable UTF-8 but break or reorder a line for
 * some reader: the line and paragraph separators (a line end to
 * JavaScript and to some log viewers) and the bidirectional controls
 * (text that reads otherwise than it is). */
static bool esc_format_char(uint32_t cp) {
  return cp == 0x2028 || cp == 0x2029 || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static bool cont(unsigned char c) { return (c & 0xc0) == 0x80; }

size_t ebpf_esc_keep(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  unsigned char c = s[0];
  if (c < 0x80)
    return c >= 0x20 && c < 0x7f && c != '\\';
  /* The shortest form only (no overlong encodings), no surrogates, nothing
   * above U+10FFFF: the ranges of RFC 3629's UTF8-2/3/4. */
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else
    return 0;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (!cont(s[i])) /* also the NUL of a string cut short */
      return 0;
  uint32_t cp = c & (0xff >> (n + 1));
  for (size_t i = 1; i < n; i++)
    cp = cp << 6 | (s[i] & 0x3f);
  if (cp < 0xa0 || esc_format_char(cp)) /* C1 controls */
    return 0;
  return n;
}

size_t ebpf_esc(char *out, size_t len, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0, w = 0; /* the whole escaped length; what out holds */
  bool full = !len;    /* nothing more is written once a piece did not fit */
  while (*s) {
    char piece[4];
    const char *p = piece;
    size_t n = ebpf_esc_keep(s), adv = n;
    if (n) {
      p = s;
    } else if (*s == '\\') {
      memcpy(piece, "\\\\", 2);
      n = 2, adv = 1;
    } else {
      unsigned char c = (unsigned char)*s;
      piece[0] = '\\', piece[1] = 'x', piece[2] = hex[c >> 4];
      piece[3] = hex[c & 15];
      n = 4, adv = 1;
    }
    if (!full && w + n < len) {
      memcpy(out + w, p, n);
      w += n;
    } else {
      full = true;
    }
    o += n;
    s += adv;
  }
  if (len)
    out[w] = 0;
  return o;
}

void ebpf_log(int level, const char *fmt, ...) {
  /* collectd's own limit: plugin_log() formats into 1024 bytes. */
  char raw[1024], line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof(raw), fmt, ap);
  va_end(ap);
  ebpf_esc(line, sizeof(line), raw);
  plugin_log(level, "%s", line);
}
