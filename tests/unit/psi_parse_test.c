/* Unit tests for plugin/pressure/psi_parse.c. Run from the repo root: the fixtures
 * are read from tests/data/psi/. Every buffer handed to psi_parse() is a
 * malloc'd copy of exactly len bytes (no NUL), so ASan catches over-reads. */
#include "testlib.h"

#include "../../plugin/pressure/psi_parse.c"

#include <errno.h>
#include <inttypes.h>

#define PSI_DIR "tests/data/psi/"

/* Reads a whole file into a malloc'd, non-NUL-terminated buffer.
 * Returns NULL on error; *len may be 0 (then a 1-byte buffer is returned). */
static char *load(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf != NULL) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (n < cap)
      break;
    cap *= 2;
    char *nb = realloc(buf, cap);
    if (nb == NULL)
      free(buf);
    buf = nb;
  }
  fclose(f);
  if (buf == NULL)
    return NULL;
  /* shrink to exactly n bytes so any read past the end is a heap overflow */
  char *exact = malloc(n ? n : 1);
  if (exact != NULL)
    memcpy(exact, buf, n);
  free(buf);
  *len = n;
  return exact;
}

static bool all_zero(const struct psi_stats *s) {
  static const struct psi_stats zero;
  return memcmp(s, &zero, sizeof(zero)) == 0;
}

/* Parses len bytes of s through an exact-size heap copy. */
static int parse_exact(const char *s, size_t len, struct psi_stats *out) {
  char *copy = malloc(len ? len : 1);
  if (copy == NULL)
    return -12345;
  memcpy(copy, s, len);
  memset(out, 0xa5, sizeof(*out)); /* must be overwritten either way */
  int st = psi_parse(copy, len, out);
  free(copy);
  return st;
}

static int parse_str(const char *s, struct psi_stats *out) {
  return parse_exact(s, strlen(s), out);
}

/* ---- fixtures with an expected status ---------------------------------- */

static const struct {
  const char *file;
  int want;
} fixtures[] = {
    {"good-host-cpu.txt", 0},
    {"good-host-io.txt", 0},
    {"good-host-memory.txt", 0},
    {"good-cgroup-cpu.txt", 0},
    {"good-missing-full.txt", 0},
    {"good-no-trailing-newline.txt", 0},
    {"good-reversed-max.txt", 0},
    {"good-irq-only-full.txt", 0},
    {"good-only-full-values.txt", 0},
    {"empty.txt", -ENODATA},
    {"empty-whitespace.txt", -ENODATA},
    {"bad-truncated.txt", -EINVAL},
    {"bad-total-overflow.txt", -ERANGE},
    {"bad-total-huge.txt", -ERANGE},
    {"bad-garbage.txt", -EINVAL},
    {"bad-repeated-some.txt", -EINVAL},
    {"bad-avg-over-100.txt", -EINVAL},
    {"bad-negative.txt", -EINVAL},
    {"bad-negative-total.txt", -EINVAL},
    {"bad-unknown-line.txt", -EINVAL},
    {"bad-field-order.txt", -EINVAL},
    {"bad-extra-field.txt", -EINVAL},
};

DEF_TEST(fixture_status) {
  for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
    char path[256];
    snprintf(path, sizeof(path), PSI_DIR "%s", fixtures[i].file);
    size_t len = 0;
    char *buf = load(path, &len);
    if (buf == NULL)
      FAILF("cannot read %s", path);
    struct psi_stats st;
    memset(&st, 0xa5, sizeof(st));
    int got = psi_parse(buf, len, &st);
    free(buf);
    if (got != fixtures[i].want)
      FAILF("%s: psi_parse = %d, want %d", fixtures[i].file, got,
            fixtures[i].want);
    if (got != 0 && !all_zero(&st))
      FAILF("%s: *out not zeroed on error", fixtures[i].file);
    if (got == 0 && !st.some.present && !st.full.present)
      FAILF("%s: no line present", fixtures[i].file);
  }
  return 0;
}

/* ---- real captures: compare with an independent sscanf pass ------------ */

static int check_capture(const char *file) {
  char path[256];
  snprintf(path, sizeof(path), PSI_DIR "%s", file);
  size_t len = 0;
  char *buf = load(path, &len);
  if (buf == NULL)
    FAILF("cannot read %s", path);

  struct psi_stats st;
  int rc = psi_parse(buf, len, &st);
  if (rc != 0) {
    free(buf);
    FAILF("%s: psi_parse = %d", file, rc);
  }

  /* independent extraction on a NUL-terminated copy */
  char *z = malloc(len + 1);
  memcpy(z, buf, len);
  z[len] = '\0';
  free(buf);
  bool seen_some = false, seen_full = false;
  char *save = NULL;
  for (char *ln = strtok_r(z, "\n", &save); ln != NULL;
       ln = strtok_r(NULL, "\n", &save)) {
    char kind[8];
    double a10, a60, a300;
    uint64_t total;
    int n = sscanf(ln, "%7s avg10=%lf avg60=%lf avg300=%lf total=%" SCNu64,
                   kind, &a10, &a60, &a300, &total);
    if (n != 5) {
      free(z);
      FAILF("%s: sscanf matched %d fields of '%s'", file, n, ln);
    }
    const struct psi_line *l;
    if (strcmp(kind, "some") == 0) {
      l = &st.some;
      seen_some = true;
    } else if (strcmp(kind, "full") == 0) {
      l = &st.full;
      seen_full = true;
    } else {
      free(z);
      FAILF("%s: unexpected kind '%s'", file, kind);
    }
    /* psi_parse rounds correctly, so the doubles must be identical */
    if (!l->present || l->avg10 != a10 || l->avg60 != a60 ||
        l->avg300 != a300 || l->total_us != total) {
      printf("  %s %s: got %d %.17g %.17g %.17g %" PRIu64
             ", want %.17g %.17g %.17g %" PRIu64 "\n",
             file, kind, l->present, l->avg10, l->avg60, l->avg300,
             l->total_us, a10, a60, a300, total);
      free(z);
      FAILF("%s: field mismatch", file);
    }
  }
  free(z);
  CHECK(seen_some || seen_full);
  CHECK_EQ_INT(seen_some, st.some.present);
  CHECK_EQ_INT(seen_full, st.full.present);
  return 0;
}

DEF_TEST(capture_host_cpu) { return check_capture("good-host-cpu.txt"); }
DEF_TEST(capture_host_io) { return check_capture("good-host-io.txt"); }
DEF_TEST(capture_host_memory) { return check_capture("good-host-memory.txt"); }
DEF_TEST(capture_cgroup_cpu) { return check_capture("good-cgroup-cpu.txt"); }
/* The kernel's shape of /proc/pressure/irq and cgroup irq.pressure. */
DEF_TEST(capture_irq_only_full) {
  return check_capture("good-irq-only-full.txt");
}
DEF_TEST(capture_only_full_values) {
  return check_capture("good-only-full-values.txt");
}

/* ---- crafted good fixtures: every field by hand ------------------------ */

static int load_parse(const char *file, struct psi_stats *st) {
  char path[256];
  snprintf(path, sizeof(path), PSI_DIR "%s", file);
  size_t len = 0;
  char *buf = load(path, &len);
  if (buf == NULL)
    return -12345;
  int rc = psi_parse(buf, len, st);
  free(buf);
  return rc;
}

DEF_TEST(missing_full) {
  struct psi_stats st;
  CHECK_EQ_INT(0, load_parse("good-missing-full.txt", &st));
  CHECK(st.some.present);
  CHECK(st.some.avg10 == 0.12);
  CHECK(st.some.avg60 == 3.40);
  CHECK(st.some.avg300 == 0.0);
  CHECK_EQ_U64(123456789, st.some.total_us);
  CHECK(!st.full.present);
  CHECK(st.full.avg10 == 0.0 && st.full.avg60 == 0.0 && st.full.avg300 == 0.0);
  CHECK_EQ_U64(0, st.full.total_us);
  return 0;
}

/* irq prints only "full": that line is parsed, "some" stays absent. */
DEF_TEST(only_full) {
  struct psi_stats st;
  CHECK_EQ_INT(0, load_parse("good-only-full-values.txt", &st));
  CHECK(!st.some.present);
  CHECK(st.some.avg10 == 0.0 && st.some.avg60 == 0.0 && st.some.avg300 == 0.0);
  CHECK_EQ_U64(0, st.some.total_us);
  CHECK(st.full.present);
  CHECK(st.full.avg10 == 1.25);
  CHECK(st.full.avg60 == 0.50);
  CHECK(st.full.avg300 == 0.07);
  CHECK_EQ_U64(31415926, st.full.total_us);
  return 0;
}

DEF_TEST(no_trailing_newline) {
  struct psi_stats st;
  CHECK_EQ_INT(0, load_parse("good-no-trailing-newline.txt", &st));
  CHECK(st.some.present);
  CHECK(st.some.avg10 == 0.12);
  CHECK(st.some.avg60 == 3.40);
  CHECK(st.some.avg300 == 0.0);
  CHECK_EQ_U64(123456789, st.some.total_us);
  CHECK(st.full.present);
  CHECK(st.full.avg10 == 0.0 && st.full.avg60 == 0.0 && st.full.avg300 == 0.0);
  CHECK_EQ_U64(0, st.full.total_us);
  return 0;
}

DEF_TEST(reversed_order_and_limits) {
  struct psi_stats st;
  CHECK_EQ_INT(0, load_parse("good-reversed-max.txt", &st));
  CHECK(st.full.present);
  CHECK(st.full.avg10 == 100.0);
  CHECK(st.full.avg60 == 99.99);
  CHECK(st.full.avg300 == 0.5);
  CHECK_EQ_U64(UINT64_MAX, st.full.total_us);
  CHECK(st.some.present);
  CHECK(st.some.avg10 == 100.0);
  CHECK(st.some.avg60 == 12.345678);
  CHECK(st.some.avg300 == 0.01);
  CHECK_EQ_U64(UINT64_MAX, st.some.total_us);
  return 0;
}

/* ---- inline edge cases ------------------------------------------------- */

#define L_OK "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

DEF_TEST(inline_cases) {
  static const struct {
    const char *in;
    int want;
  } cases[] = {
      {"", -ENODATA},
      {"\n", -ENODATA},
      {" \t\r\n \n", -ENODATA},
      {L_OK, 0},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=0", 0},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\r\n", 0},
      {"some\tavg10=0.00  avg60=0.00\tavg300=0.00 total=0 \n", 0},
      {"\n" L_OK "\n\n", 0},
      {"some avg10=1 avg60=2.5 avg300=100.000 total=7\n", 0},
      {"some avg10=0.12345678901234567890 avg60=0 avg300=0 total=0\n", 0},
      {"some avg10=000100.00 avg60=0 avg300=0 total=00000000000000000000042\n",
       0},
      /* one line of either kind is enough (irq prints only "full") */
      {"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0},
      {"full avg10=0.00 avg60=0.00 avg300=0.00 total=0", 0},
      {"\nfull avg10=9.99 avg60=0 avg300=0 total=12\n\n", 0},
      /* malformed */
      {L_OK L_OK, -EINVAL},
      {"full avg10=0 avg60=0 avg300=0 total=0\n"
       "full avg10=0 avg60=0 avg300=0 total=0\n",
       -EINVAL},
      {"full\n", -EINVAL},
      {"full avg10=0.00 avg60=0.00 avg300=0.00\n", -EINVAL},
      {"fullx avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {L_OK "full avg10=0 avg60=0 avg300=0 total=0\n"
            "full avg10=0 avg60=0 avg300=0 total=0\n",
       -EINVAL},
      {"some", -EINVAL},
      {"some\n", -EINVAL},
      {"some ", -EINVAL},
      {"somea avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"Some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=0.00 avg6", -EINVAL},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=", -EINVAL},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=\n", -EINVAL},
      {"some avg10=0.00 avg60=0.00 avg300=0.00\n", -EINVAL},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=0 total=0\n", -EINVAL},
      {"some avg10=0.00 avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=0.00avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10 =0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10= 0.00 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=3. avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=.5 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=+1 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=1e1 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=0,5 avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=nan avg60=0.00 avg300=0.00 total=0\n", -EINVAL},
      {"some avg10=100.0001 avg60=0 avg300=0 total=0\n", -EINVAL},
      {"some avg10=101 avg60=0 avg300=0 total=0\n", -EINVAL},
      {"some avg10=99999999999999999999999999 avg60=0 avg300=0 total=0\n",
       -EINVAL},
      {"some avg10=0 avg60=0 avg300=0 total=0x10\n", -EINVAL},
      {"some avg10=0 avg60=0 avg300=0 total=1.5\n", -EINVAL},
      {"some avg10=0 avg60=0 avg300=0 total=+1\n", -EINVAL},
      {L_OK "x", -EINVAL},
      /* overflow */
      {"some avg10=0 avg60=0 avg300=0 total=18446744073709551615\n", 0},
      {"some avg10=0 avg60=0 avg300=0 total=18446744073709551616\n", -ERANGE},
      {"some avg10=0 avg60=0 avg300=0 total=18446744073709551620\n", -ERANGE},
      {"some avg10=0 avg60=0 avg300=0 total=184467440737095516150\n", -ERANGE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct psi_stats st;
    int got = parse_str(cases[i].in, &st);
    if (got != cases[i].want)
      FAILF("case %zu \"%s\": psi_parse = %d, want %d", i, cases[i].in, got,
            cases[i].want);
    if (got != 0 && !all_zero(&st))
      FAILF("case %zu: *out not zeroed on error", i);
  }

  struct psi_stats st;
  CHECK_EQ_INT(0, parse_str("some avg10=0.12345678901234567890 avg60=1 "
                            "avg300=100.000 total=00042\n",
                            &st));
  CHECK_NEAR(0.123456789012345678, st.some.avg10, 1e-12);
  CHECK(st.some.avg60 == 1.0);
  CHECK(st.some.avg300 == 100.0);
  CHECK_EQ_U64(42, st.some.total_us);
  CHECK(!st.full.present);
  return 0;
}

DEF_TEST(embedded_nul) {
  static const char in[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\0\n";
  struct psi_stats st;
  CHECK_EQ_INT(-EINVAL, parse_exact(in, sizeof(in) - 1, &st));
  CHECK(all_zero(&st));
  /* the same bytes cut before the NUL are fine */
  CHECK_EQ_INT(0, parse_exact(in, sizeof(in) - 3, &st));
  return 0;
}

DEF_TEST(null_args) {
  struct psi_stats st;
  memset(&st, 0xa5, sizeof(st));
  CHECK_EQ_INT(-ENODATA, psi_parse(NULL, 0, &st));
  CHECK(all_zero(&st));
  CHECK_EQ_INT(-EINVAL, psi_parse(NULL, 5, &st));
  CHECK_EQ_INT(-EINVAL, psi_parse(L_OK, sizeof(L_OK) - 1, NULL));
  return 0;
}

/* Every prefix of a good two-line file: parses without over-read and
 * is either a complete parse (0), empty (-ENODATA) or -EINVAL. */
DEF_TEST(every_prefix) {
  static const char full[] =
      "some avg10=0.12 avg60=3.40 avg300=0.00 total=123456789\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
  size_t n = sizeof(full) - 1;
  size_t first_nl = (size_t)(strchr(full, '\n') - full);
  for (size_t len = 0; len <= n; len++) {
    struct psi_stats st;
    int got = parse_exact(full, len, &st);
    int want;
    if (len == 0)
      want = -ENODATA;
    else if (len == first_nl - 8 || len == first_nl - 7 ||
             len == first_nl - 6 || len == first_nl - 5 ||
             len == first_nl - 4 || len == first_nl - 3 ||
             len == first_nl - 2 || len == first_nl - 1)
      want = 0; /* "total=1", "total=12", ... : a shorter total */
    else if (len == first_nl || len == first_nl + 1)
      want = 0;
    else if (len == n || len == n - 1)
      want = 0;
    else
      want = -EINVAL;
    if (got != want)
      FAILF("prefix len %zu: psi_parse = %d, want %d", len, got, want);
    if (got != 0 && !all_zero(&st))
      FAILF("prefix len %zu: not zeroed", len);
  }
  return 0;
}

/* Cheap deterministic mutation fuzzing; the real fuzzing is libFuzzer. */
static uint64_t rng_state;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

DEF_TEST(mutations) {
  static const char seed[] =
      "some avg10=0.12 avg60=3.40 avg300=0.00 total=123456789\n"
      "full avg10=0.00 avg60=100.00 avg300=0.00 total=18446744073709551615\n";
  static const char alphabet[] = "somefullavgtotal0123456789.= \t\n\r-+\0\xff";
  size_t n = sizeof(seed) - 1;
  char buf[sizeof(seed) + 16];
  rng_state = 42;
  for (int iter = 0; iter < 200000; iter++) {
    memcpy(buf, seed, n);
    size_t len = n;
    int nmut = 1 + (int)(rng_next() % 4);
    for (int m = 0; m < nmut; m++) {
      size_t at = rng_next() % len;
      switch (rng_next() % 3) {
      case 0:
        buf[at] = alphabet[rng_next() % (sizeof(alphabet) - 1)];
        break;
      case 1:
        buf[at] = (char)(rng_next() & 0xff);
        break;
      default:
        len = at; /* truncate */
        if (len == 0)
          len = 1;
        break;
      }
    }
    struct psi_stats st;
    int got = parse_exact(buf, len, &st);
    if (got != 0 && got != -EINVAL && got != -ERANGE && got != -ENODATA)
      FAILF("iter %d: unexpected status %d", iter, got);
    if (got != 0 && !all_zero(&st))
      FAILF("iter %d: not zeroed on error", iter);
    if (got == 0) {
      const struct psi_line *ls[2] = {&st.some, &st.full};
      CHECK(st.some.present || st.full.present);
      for (int k = 0; k < 2; k++) {
        const struct psi_line *l = ls[k];
        if (!(l->avg10 >= 0 && l->avg10 <= 100 && l->avg60 >= 0 &&
              l->avg60 <= 100 && l->avg300 >= 0 && l->avg300 <= 100))
          FAILF("iter %d: avg out of range", iter);
      }
    }
  }
  return 0;
}

int main(void) {
  tl_prog = "psi_parse";
  RUN_TEST(fixture_status);
  RUN_TEST(capture_host_cpu);
  RUN_TEST(capture_host_io);
  RUN_TEST(capture_host_memory);
  RUN_TEST(capture_cgroup_cpu);
  RUN_TEST(capture_irq_only_full);
  RUN_TEST(capture_only_full_values);
  RUN_TEST(missing_full);
  RUN_TEST(only_full);
  RUN_TEST(no_trailing_newline);
  RUN_TEST(reversed_order_and_limits);
  RUN_TEST(inline_cases);
  RUN_TEST(embedded_nul);
  RUN_TEST(null_args);
  RUN_TEST(every_prefix);
  RUN_TEST(mutations);
  END_TEST;
}
