// SPDX-License-Identifier: GPL-2.0-only
/* plugin/common/newnames.c: the names given in the last hour, a quarter of
 * the limit in one read, a name given again for free, the window sliding. */
#include "testlib.h"

#include "../../plugin/common/newnames.c"
#include "../../plugin/core/util.c"
#include "../../plugin/core/esc.c" /* util.c's log lines */

DEF_TEST(per_read_and_per_hour) {
  struct newnames b = {0};
  CHECK(newnames_init(&b, 8) == 0);
  CHECK(b.per_read == 2);
  char name[32];
  int given = 0;
  newnames_tick(&b, 0); /* the first read: the hour's limit only */
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof(name), "start_c%d", i);
    given += newnames_admit(&b, name);
  }
  CHECK(given == 3);
  for (int read = 1; read < 6; read++) {
    newnames_tick(&b, 10.0 * read);
    for (int i = 0; i < 5; i++) {
      snprintf(name, sizeof(name), "r%d_c%d", read, i);
      given += newnames_admit(&b, name);
    }
    CHECK(b.this_read <= 2);
  }
  CHECK(given == 8); /* 3 at start, 2 a read, then the hour's 8 */
  CHECK(b.refused == 25 - 5);
  newnames_free(&b);
  return 0;
}

DEF_TEST(known_name_free_and_window) {
  struct newnames b = {0};
  CHECK(newnames_init(&b, 2) == 0);
  CHECK(b.per_read == 1); /* a quarter of 2, at least 1 */
  newnames_tick(&b, -10); /* a first read without groups */
  newnames_tick(&b, 0);
  CHECK(newnames_admit(&b, "job.scope"));
  CHECK(!newnames_admit(&b, "other.scope")); /* the read's one is used */
  CHECK(newnames_admit(&b, "job.scope"));    /* given again: free */
  newnames_tick(&b, 100);
  CHECK(newnames_admit(&b, "b"));
  newnames_tick(&b, 200);
  CHECK(!newnames_admit(&b, "c")); /* 2 in the hour */
  CHECK(newnames_admit(&b, "b"));
  newnames_tick(&b, 3600.5); /* job.scope (given at 0) out of the window */
  CHECK(b.n == 1);
  CHECK(newnames_admit(&b, "c"));
  newnames_tick(&b, 3700);
  CHECK(!newnames_admit(&b, "d")); /* b renewed at 200, c at 3600.5 */
  newnames_free(&b);
  CHECK(newnames_init(&b, 0) == 0); /* no limit */
  for (int i = 0; i < 1000; i++)
    CHECK(newnames_admit(&b, "x"));
  newnames_free(&b);
  return 0;
}

int main(void) {
  tl_prog = "newnames";
  RUN_TEST(per_read_and_per_hour);
  RUN_TEST(known_name_free_and_window);
  END_TEST;
}
