/* The escaping rule of strings from tenants (plugin/core/esc.c, base.h):
 * each class of byte against the rule's text; every output checked by
 * glibc's own UTF-8 decoder (valid, no control character) and read back
 * to the input; truncation never splits an escape or a character; and the
 * log lines that apply it, as the collectd mock received them. */
#include "../../plugin/core/esc.c"

#include "mock_collectd.h"
#include "testlib.h"

#include <locale.h>
#include <wchar.h>

static const char *esc(const char *s) {
  static char buf[4096];
  size_t n = ebpf_esc(buf, sizeof(buf), s);
  if (n != strlen(buf))
    return "(length differs)";
  return buf;
}

DEF_TEST(control_bytes_del_and_backslash) {
  CHECK_EQ_STR("plain text: a-b_c.d/e ~!", esc("plain text: a-b_c.d/e ~!"));
  CHECK_EQ_STR("\\x0a[date] [error] x", esc("\n[date] [error] x"));
  CHECK_EQ_STR("\\x0aSeverity: OKAY\\x1b", esc("\nSeverity: OKAY\x1b"));
  CHECK_EQ_STR("\\x1b[31mred\\x0d\\x09\\x01", esc("\x1b[31mred\r\t\x01"));
  CHECK_EQ_STR("del\\x7f", esc("del\x7f"));
  CHECK_EQ_STR("a\\\\x0ab", esc("a\\x0ab")); /* not the escape of "a\nb" */
  CHECK_EQ_STR("quote \" stays", esc("quote \" stays"));
  CHECK_EQ_STR("", esc(""));
  return 0;
}

DEF_TEST(valid_utf8_stays) {
  CHECK_EQ_STR("caf\xc3\xa9", esc("caf\xc3\xa9"));
  CHECK_EQ_STR("\xe6\x97\xa5\xe6\x9c\xac", esc("\xe6\x97\xa5\xe6\x9c\xac"));
  CHECK_EQ_STR("\xc2\xa0", esc("\xc2\xa0"));                 /* U+00A0 */
  CHECK_EQ_STR("\xf0\x9f\x98\x80", esc("\xf0\x9f\x98\x80")); /* U+1F600 */
  CHECK_EQ_STR("\xf4\x8f\xbf\xbf", esc("\xf4\x8f\xbf\xbf")); /* U+10FFFF */
  CHECK_EQ_STR("\xef\xbf\xbd", esc("\xef\xbf\xbd"));         /* U+FFFD */
  return 0;
}

DEF_TEST(c1_separators_and_bidi_escaped) {
  CHECK_EQ_STR("\\xc2\\x85", esc("\xc2\x85"));         /* NEL */
  CHECK_EQ_STR("\\xc2\\x9b2J", esc("\xc2\x9b" "2J"));  /* CSI */
  CHECK_EQ_STR("\\xc2\\x80\\xc2\\x9f", esc("\xc2\x80\xc2\x9f"));
  CHECK_EQ_STR("\\xe2\\x80\\xa8", esc("\xe2\x80\xa8")); /* U+2028 */
  CHECK_EQ_STR("\\xe2\\x80\\xa9", esc("\xe2\x80\xa9")); /* U+2029 */
  CHECK_EQ_STR("a\\xe2\\x80\\xaeb", esc("a\xe2\x80\xae" "b")); /* RLO */
  CHECK_EQ_STR("\\xe2\\x81\\xa6", esc("\xe2\x81\xa6")); /* U+2066 */
  CHECK_EQ_STR("\\xe2\\x80\\x8f", esc("\xe2\x80\x8f")); /* U+200F */
  CHECK_EQ_STR("\xe2\x80\x90", esc("\xe2\x80\x90"));    /* U+2010 stays */
  return 0;
}

DEF_TEST(invalid_utf8_escaped) {
  CHECK_EQ_STR("\\x80", esc("\x80"));
  CHECK_EQ_STR("\\xff\\xfe", esc("\xff\xfe"));
  CHECK_EQ_STR("\\xc0\\xaf", esc("\xc0\xaf"));         /* overlong '/' */
  CHECK_EQ_STR("\\xc1\\xbf", esc("\xc1\xbf"));
  CHECK_EQ_STR("\\xe0\\x80\\xaf", esc("\xe0\x80\xaf")); /* overlong */
  CHECK_EQ_STR("\\xe0\\x9f\\xbf", esc("\xe0\x9f\xbf")); /* overlong */
  CHECK_EQ_STR("\\xf0\\x80\\x80\\xaf", esc("\xf0\x80\x80\xaf"));
  CHECK_EQ_STR("\\xf0\\x8f\\xbf\\xbf", esc("\xf0\x8f\xbf\xbf"));
  CHECK_EQ_STR("\\xed\\xa0\\x80", esc("\xed\xa0\x80")); /* surrogate */
  CHECK_EQ_STR("\\xed\\xbf\\xbf", esc("\xed\xbf\xbf"));
  CHECK_EQ_STR("\\xf4\\x90\\x80\\x80", esc("\xf4\x90\x80\x80")); /* >10FFFF */
  CHECK_EQ_STR("\\xf5\\x80\\x80\\x80", esc("\xf5\x80\x80\x80"));
  /* Truncated: at the end, and before another character. */
  CHECK_EQ_STR("\\xe6\\x97", esc("\xe6\x97"));
  CHECK_EQ_STR("\\xe6\\x97x", esc("\xe6\x97x"));
  CHECK_EQ_STR("\\xf0\\x9f\\x98", esc("\xf0\x9f\x98"));
  CHECK_EQ_STR("\\xc3\\x0a", esc("\xc3\n"));
  /* A lead byte before a valid character: the character stays. */
  CHECK_EQ_STR("\\xc3\xc3\xa9", esc("\xc3\xc3\xa9"));
  return 0;
}

/* Read an escaped string back: \\ and \xHH, the rest as it is. */
static size_t unesc(const char *s, char *out) {
  size_t o = 0;
  while (*s) {
    if (s[0] == '\\' && s[1] == '\\') {
      out[o++] = '\\';
      s += 2;
    } else if (s[0] == '\\' && s[1] == 'x') {
      char h[3] = {s[2], s[3], 0};
      out[o++] = (char)strtoul(h, NULL, 16);
      s += 4;
    } else {
      out[o++] = *s++;
    }
  }
  out[o] = 0;
  return o;
}

/* glibc's decoder as the witness: valid UTF-8, no control character, no
 * surrogate. */
static bool clean_utf8(const char *s) {
  mbstate_t st;
  memset(&st, 0, sizeof(st));
  size_t n = strlen(s);
  while (n) {
    wchar_t wc;
    size_t k = mbrtowc(&wc, s, n, &st);
    if (k == (size_t)-1 || k == (size_t)-2 || k == 0)
      return false;
    if (wc < 0x20 || (wc >= 0x7f && wc < 0xa0) || (wc >= 0xd800 && wc < 0xe000))
      return false;
    s += k;
    n -= k;
  }
  return true;
}

DEF_TEST(every_output_clean_and_reversible) {
  CHECK(setlocale(LC_CTYPE, "C.UTF-8") != NULL);
  char in[8], out[64], back[16];
  /* Every string of one and two bytes, then random ones of up to 6. */
  unsigned long seed = 12345;
  for (long t = 0; t < 65536 + 300000; t++) {
    size_t n;
    if (t < 65536) {
      in[0] = (char)(t >> 8 ? t >> 8 : t);
      in[1] = (char)(t >> 8 ? t & 255 : 0);
      n = t >> 8 ? 2 : 1;
    } else {
      n = 1 + (size_t)(t % 6);
      for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        unsigned b = (unsigned)(seed >> 56);
        /* Mostly the interesting bytes: leads, continuations, controls. */
        in[i] = (char)(b & 1 ? 0x80 | (b >> 1) : b >> 1 ? b : 'a');
      }
    }
    in[n] = 0;
    if (!in[0])
      continue;
    size_t len = ebpf_esc(out, sizeof(out), in);
    if (len != strlen(out) || !clean_utf8(out))
      FAILF("input %02x %02x ...: %s", (unsigned char)in[0],
            (unsigned char)in[1], out);
    unesc(out, back);
    if (strcmp(back, in))
      FAILF("input %02x %02x ...: read back differs", (unsigned char)in[0],
            (unsigned char)in[1]);
  }
  return 0;
}

/* Cut at every length: the longest prefix of whole pieces that fits, and
 * the whole length returned. */
DEF_TEST(truncation_never_splits) {
  static const char *in = "a\n\\\xc3\xa9\xf0\x9f\x98\x80\x1b" "b\xe2\x80\xa8";
  char full[128], out[128];
  size_t n = ebpf_esc(full, sizeof(full), in);
  CHECK_EQ_STR("a\\x0a\\\\\xc3\xa9\xf0\x9f\x98\x80\\x1bb\\xe2\\x80\\xa8", full);
  /* The ends of the pieces. */
  size_t ends[] = {1, 5, 7, 9, 13, 17, 18, 22, 26, 30};
  CHECK_EQ_INT(30, (int)n);
  CHECK_EQ_INT(0, (int)ebpf_esc(NULL, 0, ""));
  CHECK_EQ_INT((int)n, (int)ebpf_esc(NULL, 0, in));
  for (size_t len = 1; len <= n + 1; len++) {
    memset(out, 'Z', sizeof(out));
    CHECK_EQ_INT((int)n, (int)ebpf_esc(out, len, in));
    size_t want = 0;
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
      if (ends[i] < len)
        want = ends[i];
    if (strlen(out) != want || strncmp(out, full, want) || out[want + 1] != 'Z')
      FAILF("len %zu: \"%s\", want %zu bytes", len, out, want);
  }
  return 0;
}

DEF_TEST(log_lines_escaped) {
  mock_reset();
  E_INFO("pressure: watching %d new cgroup%s: %s", 1, "",
         "t.slice/a\n[date] [error] ebpf plugin: forged\x1b");
  E_WARNING("x %s", "caf\xc3\xa9 \xff");
  CHECK_EQ_STR("ebpf plugin: pressure: watching 1 new cgroup: t.slice/"
               "a\\x0a[date] [error] ebpf plugin: forged\\x1b",
               mock_log[0]);
  CHECK_EQ_INT(LOG_INFO, mock_log_sev[0]);
  CHECK_EQ_STR("ebpf plugin: x caf\xc3\xa9 \\xff", mock_log[1]);
  CHECK_EQ_INT(LOG_WARNING, mock_log_sev[1]);
  /* A line longer than collectd's 1024 bytes: cut, never mid-escape. */
  char big[2000];
  memset(big, '\n', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  E_ERROR("%s", big);
  CHECK(strlen(mock_log[2]) > 400);
  CHECK(clean_utf8(mock_log[2]));
  CHECK_EQ_INT(0, (int)(strlen(mock_log[2]) - strlen("ebpf plugin: ")) % 4);
  return 0;
}

int main(void) {
  tl_prog = "esc_test";
  RUN_TEST(control_bytes_del_and_backslash);
  RUN_TEST(valid_utf8_stays);
  RUN_TEST(c1_separators_and_bidi_escaped);
  RUN_TEST(invalid_utf8_escaped);
  RUN_TEST(every_output_clean_and_reversible);
  RUN_TEST(truncation_never_splits);
  RUN_TEST(log_lines_escaped);
  END_TEST;
}
