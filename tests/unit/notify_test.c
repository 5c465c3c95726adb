/* The notification helper of plugin/core/util.c (ebpf_notify): the message is
 * the documented key=value form of the fields, the meta data holds the same
 * fields with their types, fields that do not fit collectd's message are
 * left out whole, and nothing leaks. Checked against what the collectd mock
 * received. */
#include "../../plugin/core/esc.c"
#include "../../plugin/core/util.c"

#include "mock_collectd.h"
#include "testlib.h"

#include <time.h>

DEF_TEST(message_and_typed_meta_agree) {
  mock_reset();
  struct ebpf_nfield f[] = {
      NF_STR("receiver", "stalled"), NF_STR("local", "10.0.0.1:80"),
      NF_UINT("recv_q", 100000),     NF_DBL("stalled_s", 2.104),
      NF_INT("delta", -7),           NF_STR("comm", "my prog"),
  };
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  CHECK_EQ_INT(0, ebpf_notify(NOTIF_WARNING, "tcp_window", "pi", "count",
                              "stalled_receivers", f, 6));
  CHECK_EQ_INT(1, mock_nnotif);
  const struct mock_notif *m = &mock_notifs[0];
  CHECK_EQ_STR("receiver=stalled local=10.0.0.1:80 recv_q=100000 "
               "stalled_s=2.104 delta=-7 comm=\"my prog\"",
               m->n.message);
  CHECK_EQ_INT(NOTIF_WARNING, m->n.severity);
  CHECK_EQ_STR("mockhost", m->n.host);
  CHECK_EQ_STR("tcp_window", m->n.plugin);
  CHECK_EQ_STR("pi", m->n.plugin_instance);
  CHECK_EQ_STR("count", m->n.type);
  CHECK_EQ_STR("stalled_receivers", m->n.type_instance);
  double t = CDTIME_T_TO_DOUBLE(m->n.time);
  CHECK_NEAR((double)t0.tv_sec + t0.tv_nsec / 1e9, t, 1.0);
  /* Same fields, same order, typed. */
  CHECK_EQ_INT(6, m->nmeta);
  static const char *names[] = {"receiver", "local",  "recv_q",
                                "stalled_s", "delta", "comm"};
  for (int i = 0; i < 6; i++)
    CHECK_EQ_STR(names[i], m->meta[i].name);
  CHECK_EQ_INT(NM_TYPE_STRING, m->meta[0].type);
  CHECK_EQ_STR("stalled", m->meta[0].s);
  CHECK_EQ_INT(NM_TYPE_UNSIGNED_INT, m->meta[2].type);
  CHECK_EQ_U64(100000, m->meta[2].u);
  CHECK_EQ_INT(NM_TYPE_DOUBLE, m->meta[3].type);
  CHECK(m->meta[3].d == 2.104);
  CHECK_EQ_INT(NM_TYPE_SIGNED_INT, m->meta[4].type);
  CHECK_EQ_INT(-7, m->meta[4].i);
  /* The meta string is the value itself, not its quoted form. */
  CHECK_EQ_STR("my prog", mock_nmeta_find(m, "comm")->s);
  CHECK_EQ_INT(0, mock_nmeta_live);
  return 0;
}

/* Every quoting and number rule of the documented format. */
DEF_TEST(value_forms) {
  char buf[NOTIF_MAX_MSG_LEN];
  struct ebpf_nfield f[] = {
      NF_STR("a", ""),          NF_STR("b", "x\"y\\z"),
      NF_STR("c", "tab\there"), NF_STR("d", "caf\xc3\xa9"),
      NF_STR("e", "k=v"),       NF_DBL("f", 0.1),
      NF_DBL("g", 1e-9),        NF_DBL("h", 0.30000000000000004),
      NF_INT("i", INT64_MIN),   NF_UINT("j", UINT64_MAX),
  };
  CHECK_EQ_INT(10, ebpf_notify_format(buf, sizeof(buf), f, 10));
  CHECK_EQ_STR("a=\"\" b=\"x\\\"y\\\\z\" c=\"tab\\x09here\" "
               "d=caf\xc3\xa9 e=k=v f=0.1 g=1e-09 "
               "h=0.30000000000000004 i=-9223372036854775808 "
               "j=18446744073709551615",
               buf);
  return 0;
}

/* collectd keeps 255 characters: the fields that fit, whole, then " ...";
 * the meta data has every field. */
DEF_TEST(long_message_drops_whole_fields) {
  mock_reset();
  char big[200];
  memset(big, 'c', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  struct ebpf_nfield f[] = {
      NF_STR("local", "[2001:db8:1234:5678:9abc:def0:1234:5678]:65535"),
      NF_STR("remote", "[2001:db8:1234:5678:9abc:def0:1234:5679]:65535"),
      NF_UINT("recv_q", 4294967295u),
      NF_STR("cgroup", big),
      NF_UINT("pid", 4194304),
  };
  ebpf_notify(NOTIF_WARNING, "p", "", "", "", f, 5);
  const struct mock_notif *m = &mock_notifs[0];
  CHECK_EQ_STR("local=[2001:db8:1234:5678:9abc:def0:1234:5678]:65535 "
               "remote=[2001:db8:1234:5678:9abc:def0:1234:5679]:65535 "
               "recv_q=4294967295 ...",
               m->n.message);
  CHECK_EQ_INT(5, m->nmeta);
  CHECK_EQ_STR(big, mock_nmeta_find(m, "cgroup")->s);
  /* Exactly at the limit: 255 characters fit, with no " ...". */
  char v[NOTIF_MAX_MSG_LEN];
  memset(v, 'v', 253);
  v[253] = 0;
  char buf[NOTIF_MAX_MSG_LEN];
  struct ebpf_nfield one = NF_STR("k", v); /* "k=" + 253 = 255 */
  CHECK_EQ_INT(1, ebpf_notify_format(buf, sizeof(buf), &one, 1));
  CHECK_EQ_INT(255, strlen(buf));
  v[253] = 'v';
  v[254] = 0;
  CHECK_EQ_INT(0, ebpf_notify_format(buf, sizeof(buf), &one, 1));
  CHECK_EQ_STR("...", buf);
  CHECK_EQ_INT(0, mock_nmeta_live);
  return 0;
}

/* Out of memory halfway through the meta data: the notification goes out
 * with its message and no meta data (never a part of it), one ERROR. */
DEF_TEST(meta_allocation_failure) {
  mock_reset();
  struct ebpf_nfield f[] = {NF_UINT("a", 1), NF_UINT("b", 2),
                            NF_UINT("c", 3)};
  mock_nmeta_fail_at = 2;
  ebpf_notify(NOTIF_OKAY, "p", "", "", "", f, 3);
  CHECK_EQ_INT(1, mock_nnotif);
  CHECK_EQ_STR("a=1 b=2 c=3", mock_notifs[0].n.message);
  CHECK_EQ_INT(0, mock_notifs[0].nmeta);
  CHECK(mock_log_find(LOG_ERR, "meta data could not be allocated") >= 0);
  CHECK(mock_log_find(LOG_ERR, "n == NULL") < 0);
  CHECK_EQ_INT(0, mock_nmeta_live);
  return 0;
}

/* A tenant's string (a comm set by prctl(PR_SET_NAME), a cgroup's name):
 * the message and the meta data both by the escaping rule, so that exec's
 * "key: value" header lines cannot get one more. */
DEF_TEST(tenant_strings_escaped_in_message_and_meta) {
  mock_reset();
  char long_name[201];
  memset(long_name, '\x1b', sizeof(long_name) - 1);
  long_name[sizeof(long_name) - 1] = 0;
  struct ebpf_nfield f[] = {
      NF_STR("comm", "\nSeverity: OKAY\x1b"),
      NF_STR("cgroup", "a\\b\xff\xc3\xa9\"q"),
      NF_STR("path", long_name),
  };
  ebpf_notify(NOTIF_WARNING, "p", "", "", "", f, 3);
  CHECK_EQ_INT(1, mock_nnotif);
  const struct mock_notif *m = &mock_notifs[0];
  CHECK_EQ_STR("comm=\"\\x0aSeverity: OKAY\\x1b\" "
               "cgroup=\"a\\\\b\\xff\xc3\xa9\\\"q\" ...",
               m->n.message);
  CHECK_EQ_STR("\\x0aSeverity: OKAY\\x1b", mock_nmeta_find(m, "comm")->s);
  CHECK_EQ_STR("a\\\\b\\xff\xc3\xa9\"q", mock_nmeta_find(m, "cgroup")->s);
  /* Longer than the stack buffer: whole, on the heap. */
  const char *p = mock_nmeta_find(m, "path")->s;
  CHECK_EQ_INT(4 * 200, (int)strlen(p));
  CHECK(strncmp(p, "\\x1b\\x1b", 8) == 0 && !strchr(p, 0x1b));
  CHECK_EQ_INT(0, mock_nmeta_live);
  return 0;
}

int main(void) {
  tl_prog = "notify_test";
  RUN_TEST(message_and_typed_meta_agree);
  RUN_TEST(value_forms);
  RUN_TEST(long_message_drops_whole_fields);
  RUN_TEST(meta_allocation_failure);
  RUN_TEST(tenant_strings_escaped_in_message_and_meta);
  END_TEST;
}
