/* drops' names: the reasons' from the running kernel's BTF (the metric
 * name of every SKB_DROP_REASON_ enumerator at its value, the SKB_CONSUMED
 * value the programs skip, "other" past the end), and the drop locations'
 * from a kallsyms file (the text symbol at or below an address, a
 * compiler suffix cut off, data symbols ignored, MaxLocations names and
 * the rest at_other, one WARNING when the file shows no addresses). */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/drops/names.c"
#include "mock_collectd.h"
#include "testlib.h"

#include <ctype.h>

static void reset(long long max_locations) {
  drops_names_free();
  mock_reset();
  drops_locations_alloc(max_locations);
}

DEF_TEST(reason_names_strip_the_prefix) {
  char *a = reason_name("SKB_DROP_REASON_NO_SOCKET");
  char *b = reason_name("SKB_CONSUMED");
  char *c = reason_name("SKB_DROP_REASON_TCP_OFO_QUEUE_PRUNE");
  CHECK(a && !strcmp(a, "no_socket"));
  CHECK(b && !strcmp(b, "consumed"));
  CHECK(c && !strcmp(c, "tcp_ofo_queue_prune"));
  free(a);
  free(b);
  free(c);
  CHECK(drops_reason_name_ok("socket_rcvbuff"));
  CHECK(!drops_reason_name_ok("no-socket"));
  CHECK(!drops_reason_name_ok(""));
  CHECK(!drops_reason_name_ok("No_socket"));
  return 0;
}

DEF_TEST(reasons_from_the_running_kernels_btf) {
  reset(32);
  struct btf *btf = btf__load_vmlinux_btf();
  if (!btf || libbpf_get_error(btf)) {
    printf("SKIP: drops_test.reasons_from_the_running_kernels_btf (no BTF)\n");
    return 0;
  }
  int id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
  if (id < 0) {
    btf__free(btf);
    printf("SKIP: drops_test.reasons_from_the_running_kernels_btf (no reasons)\n");
    return 0;
  }
  CHECK_EQ_INT(1, drops_reasons_read(btf));
  /* Every enumerator read again here, one by one. */
  const struct btf_type *t = btf__type_by_id(btf, id);
  const struct btf_enum *e = btf_enum(t);
  int checked = 0;
  for (int i = 0; i < btf_vlen(t); i++) {
    const char *n = btf__name_by_offset(btf, e[i].name_off);
    if (!strcmp(n, "SKB_DROP_REASON_MAX")) {
      CHECK_EQ_INT(e[i].val, nreasons);
      continue;
    }
    if (!strcmp(n, "SKB_CONSUMED"))
      CHECK_EQ_INT(e[i].val, consumed);
    /* Not reasons: SKB_DROP_REASON_SUBSYS_MASK (6.9+) and the like. */
    if (strncmp(n, "SKB_DROP_REASON_", 16) || strstr(n, "SUBSYS"))
      continue;
    char want[128];
    size_t k;
    for (k = 0; n[16 + k] && k < sizeof(want) - 1; k++)
      want[k] = (char)tolower((unsigned char)n[16 + k]);
    want[k] = 0;
    CHECK((uint32_t)e[i].val < nreasons);
    if (strcmp(reason_names[e[i].val], want))
      FAILF("value %u: %s, want %s", (unsigned)e[i].val, reason_names[e[i].val], want);
    checked++;
  }
  CHECK(checked > 10);
  CHECK(!strcmp(reason_names[nreasons], "other"));
  btf__free(btf);
  return 0;
}

static const char *write_syms(const char *text) {
  static char path[] = "/tmp/kallsymsXXXXXX";
  strcpy(path, "/tmp/kallsymsXXXXXX");
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
    return NULL;
  close(fd);
  return path;
}

DEF_TEST(locations_named_from_kallsyms) {
  reset(2);
  kallsyms_path = write_syms("ffffffff81000000 T _stext\n"
                             "ffffffff81100000 t __udp4_lib_rcv\n"
                             "ffffffff81100800 T udp_rcv\n"
                             "ffffffff81200000 t tcp_v4_rcv.cold\n"
                             "ffffffff81300000 d some_table\n"
                             "ffffffffc0000000 t mod_fn\t[somemod]\n");
  CHECK(kallsyms_path);
  const uint64_t at[] = {0xffffffff81100010ULL, 0xffffffff81100900ULL,
                         0xffffffff81100020ULL, 0xffffffff81200010ULL,
                         0xffffffff81300010ULL};
  for (size_t i = 0; i < 5; i++)
    loc_index(at[i]);
  CHECK_EQ_INT(5, nlocs);
  name_locations(0);
  unlink(kallsyms_path);
  kallsyms_path = "/proc/kallsyms";
  CHECK_EQ_INT(2, nfns); /* MaxLocations 2 */
  CHECK(!strcmp(fns[0].name, "at___udp4_lib_rcv"));
  CHECK(!strcmp(fns[1].name, "at_udp_rcv"));
  CHECK_EQ_INT(0, locs[0].fn);
  CHECK_EQ_INT(1, locs[1].fn);
  CHECK_EQ_INT(0, locs[2].fn); /* the same function, another address */
  CHECK_EQ_INT(-1, locs[3].fn); /* tcp_v4_rcv: past MaxLocations */
  CHECK_EQ_INT(-1, locs[4].fn); /* above data: still tcp_v4_rcv's text */
  CHECK(!strcmp(drops_location_name(0xffffffff81100900ULL), "at_udp_rcv"));
  CHECK(!strcmp(drops_location_name(0xffffffff81200004ULL), "at_other"));
  CHECK_EQ_INT(-1, mock_log_find(LOG_WARNING, "kallsyms"));
  return 0;
}

DEF_TEST(kallsyms_without_addresses_warns_once) {
  reset(32);
  kallsyms_path = write_syms("0000000000000000 T _stext\n"
                             "0000000000000000 t __udp4_lib_rcv\n");
  CHECK(kallsyms_path);
  loc_index(0xffffffff81100010ULL);
  name_locations(0);
  loc_index(0xffffffff81100020ULL);
  name_locations(1);
  unlink(kallsyms_path);
  kallsyms_path = "/proc/kallsyms";
  CHECK_EQ_INT(-1, locs[0].fn);
  CHECK_EQ_INT(-1, locs[1].fn);
  CHECK_EQ_INT(0, nfns);
  int w = mock_log_find(LOG_WARNING, "shows no addresses");
  CHECK(w >= 0);
  int again = 0;
  for (int i = 0; i < mock_nlog; i++)
    again += strstr(mock_log[i], "shows no addresses") != NULL;
  CHECK_EQ_INT(1, again);
  return 0;
}

int main(void) {
  tl_prog = "drops_test";
  RUN_TEST(reason_names_strip_the_prefix);
  RUN_TEST(reasons_from_the_running_kernels_btf);
  RUN_TEST(locations_named_from_kallsyms);
  RUN_TEST(kallsyms_without_addresses_warns_once);
  drops_names_free();
  END_TEST;
}
