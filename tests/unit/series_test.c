/* A DERIVE series that appears while collectd runs starts from 0
 * (plugin/core/series.c), through vl_derive() as the features call it:
 * what the collectd mock receives, in order, with the times. */
#include "../../plugin/core/series.c"

#include "mock_collectd.h"
#include "testlib.h"

static void derive(const char *pi, const char *ti, int64_t v) {
  value_list_t vl;
  vl_prepare(&vl, "drops", pi);
  vl_derive(&vl, "operations", ti, v);
}

/* The values of one identifier the mock received since *from, in order. */
static int values_of(const char *pi, const char *ti, int from,
                     const struct mock_value **out, int max) {
  int n = 0, nv = __atomic_load_n(&mock_nvalues, __ATOMIC_ACQUIRE);
  for (int i = from; i < nv && n < max; i++) {
    const value_list_t *vl = &mock_values[i].vl;
    if (!strcmp(vl->plugin_instance, pi) && !strcmp(vl->type_instance, ti))
      out[n++] = &mock_values[i];
  }
  return n;
}

DEF_TEST(first_read_as_it_is) {
  series_reset();
  mock_reset();
  derive("before", "", 1000); /* no read begun: init, or another test */
  series_read_begin();
  derive("before", "", 1200);
  series_read_end();
  CHECK_EQ_INT(2, mock_nvalues);
  CHECK_EQ_INT(1200, mock_values[1].v.derive);
  CHECK_EQ_INT(0, (long long)mock_values[1].vl.time); /* collectd's now */
  return 0;
}

/* 300 drops of a new reason at read 2: a 0 at the previous read's time
 * (at least one Interval before read 2), 300 at read 2's time sent at
 * read 3's start, then read 3's own count; the differences add up to the
 * count. */
DEF_TEST(new_series_from_zero) {
  series_reset();
  mock_reset();
  series_read_begin();
  derive("old", "", 5);
  series_read_end();
  cdtime_t t1 = st.t_now;
  series_read_begin();
  derive("old", "", 6);
  derive("no_socket", "", 300);
  cdtime_t t2 = st.nheld == 1 ? st.held[0].t : 0; /* when it was read */
  series_read_end();
  const struct mock_value *v[8];
  CHECK_EQ_INT(1, values_of("no_socket", "", 0, v, 8));
  CHECK_EQ_INT(0, v[0]->v.derive);
  CHECK(v[0]->vl.time > 0 && v[0]->vl.time <= t1);
  CHECK(t2 >= st.t_now && t2 - v[0]->vl.time >= plugin_get_interval());
  CHECK_EQ_STR("operations", v[0]->vl.type);
  int mark = mock_nvalues;
  series_read_begin();
  derive("old", "", 7);
  derive("no_socket", "", 450);
  derive("no_socket", "", 451); /* twice in a read: the later count */
  cdtime_t t3 = late.n - late.head == 1 ? late.q[late.head].v.t : 0;
  cdtime_t due = late.n - late.head == 1 ? late.q[late.head].due : 0;
  series_read_end();
  /* The held count first, at the read's start, ahead of every value of the
   * read; the read's own count is not sent in the same read (it waits
   * half an Interval, 5 s here: the thread has not sent it yet). */
  CHECK_EQ_STR("no_socket", mock_values[mark].vl.plugin_instance);
  CHECK_EQ_INT(300, mock_values[mark].v.derive);
  CHECK_EQ_INT(1, values_of("no_socket", "", mark, v, 8));
  CHECK_EQ_INT(300, v[0]->v.derive);
  CHECK_EQ_U64(t2, v[0]->vl.time);
  CHECK(t3 >= st.t_now && due - t3 == plugin_get_interval() / 2);
  CHECK_EQ_INT(1, values_of("old", "", mark, v, 8)); /* once a read */
  /* Not yet sent by the next read's start: sent there first, stamped when
   * it was read. From then on as it is. */
  mark = mock_nvalues;
  series_read_begin();
  derive("no_socket", "", 460);
  series_read_end();
  CHECK_EQ_STR("no_socket", mock_values[mark].vl.plugin_instance);
  CHECK_EQ_INT(2, values_of("no_socket", "", mark, v, 8));
  CHECK_EQ_INT(451, v[0]->v.derive);
  CHECK_EQ_U64(t3, v[0]->vl.time);
  CHECK_EQ_INT(460, v[1]->v.derive);
  CHECK_EQ_INT(0, (long long)v[1]->vl.time);
  CHECK_EQ_INT(0, (long long)late.n);
  return 0;
}

/* The second value goes out half an Interval after its read, from the
 * file's thread, without waiting for the next read: a write thread that
 * took the held count has that long to hand it to write_graphite before
 * the cache holds a newer count (whose rate write_graphite would send). */
DEF_TEST(second_value_half_an_interval_on) {
  series_reset();
  mock_reset();
  mock_interval = TIME_T_TO_CDTIME_T(1) / 5; /* 200 ms */
  for (int r = 0; r < 3; r++) {
    series_read_begin();
    if (r == 1)
      derive("no_socket", "", 300);
    if (r == 2)
      derive("no_socket", "", 310);
    series_read_end();
  }
  cdtime_t t3 = st.t_now;
  const struct mock_value *v[8];
  CHECK_EQ_INT(2, values_of("no_socket", "", 0, v, 8)); /* 0, 300 */
  int n = 0;
  for (int i = 0; i < 300 && n < 3; i++) { /* 3 s at most */
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
    n = values_of("no_socket", "", 0, v, 8);
  }
  CHECK_EQ_INT(3, n);
  CHECK_EQ_INT(310, v[2]->v.derive);
  CHECK(v[2]->vl.time >= t3);
  /* The read's Interval: collectd cannot find it from this thread. */
  CHECK_EQ_U64(mock_interval, v[2]->vl.interval);
  CHECK_EQ_INT(0, (long long)late.n);
  series_reset();
  return 0;
}

/* A pod that lives one interval: its count goes out at the next read's
 * end, though nothing dispatches it any more. */
DEF_TEST(one_interval_series_flushed) {
  series_reset();
  mock_reset();
  series_read_begin();
  series_read_end();
  series_read_begin();
  derive("pod", "le_1000", 40);
  derive("pod", "le_1000", 42); /* twice in a read: the later count */
  cdtime_t t2 = st.held[0].t;
  series_read_end();
  series_read_begin();
  series_read_end();
  const struct mock_value *v[8];
  CHECK_EQ_INT(2, values_of("pod", "le_1000", 0, v, 8));
  CHECK_EQ_INT(0, v[0]->v.derive);
  CHECK_EQ_INT(42, v[1]->v.derive);
  CHECK_EQ_U64(t2, v[1]->vl.time);
  CHECK_EQ_STR("drops", v[1]->vl.plugin);
  CHECK_EQ_STR("operations", v[1]->vl.type);
  CHECK_EQ_INT(0, (long long)st.nheld);
  return 0;
}

DEF_TEST(renamed_counts_on) {
  series_reset();
  mock_reset();
  series_read_begin();
  derive("udp-a", "", 10);
  series_read_end();
  series_read_begin();
  value_list_t vl;
  vl_prepare(&vl, "drops", "udp-a_1234abcd");
  series_renamed(&vl);
  vl_derive(&vl, "operations", "", 11);
  series_read_end();
  CHECK_EQ_INT(2, mock_nvalues);
  CHECK_EQ_INT(11, mock_values[1].v.derive);
  return 0;
}

/* At most SERIES_MAX identifiers: past it, a new series goes out as it is
 * (one NOTICE); those not dispatched for SERIES_AGE reads make room. */
DEF_TEST(bounded) {
  series_reset();
  mock_reset();
  char name[32];
  series_read_begin();
  for (unsigned i = 0; i < SERIES_MAX; i++) {
    snprintf(name, sizeof(name), "s%u", i);
    derive(name, "", 1);
  }
  series_read_end();
  CHECK_EQ_INT(SERIES_MAX, (long long)st.n);
  CHECK(st.cap <= 2 * SERIES_MAX);
  mock_reset();
  series_read_begin();
  derive("late", "", 7);
  series_read_end();
  CHECK_EQ_INT(1, mock_nvalues);
  CHECK_EQ_INT(7, mock_values[0].v.derive);
  CHECK(mock_log_find(LOG_NOTICE, "16384 series are remembered") >= 0);
  for (unsigned r = 0; r < SERIES_AGE; r++) {
    series_read_begin();
    series_read_end();
  }
  mock_reset();
  series_read_begin();
  derive("later", "", 9);
  series_read_end();
  CHECK_EQ_INT(1, mock_nvalues);
  CHECK_EQ_INT(0, mock_values[0].v.derive);
  CHECK(st.n < 16);
  series_reset();
  return 0;
}

int main(void) {
  tl_prog = "series_test";
  RUN_TEST(first_read_as_it_is);
  RUN_TEST(new_series_from_zero);
  RUN_TEST(second_value_half_an_interval_on);
  RUN_TEST(one_interval_series_flushed);
  RUN_TEST(renamed_counts_on);
  RUN_TEST(bounded);
  END_TEST;
}
