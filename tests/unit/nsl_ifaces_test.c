/* netstacklat's interfaces (plugin/netstacklat/ifaces.c) against real interfaces
 * and namespaces (as root): the Interface filter's map holds the index of
 * each configured name that exists, follows one made later, gone, or made
 * again with a new index, and keeps an index that another configured name
 * has now; GroupBy interface names a group in collectd's own namespace
 * plainly, in another namespace as <namespace>_<interface>, and marks a
 * group whose interface or namespace is gone, and names an interface
 * renamed in another namespace again within NSL_IF_RENAME_READS refreshes.
 * The witness is the kernel's
 * own indexes (if_nametoindex) and namespace inodes. */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/netstacklat/ifaces.c"
#include "mock_collectd.h"
#include "testlib.h"

#include <bpf/libbpf.h>
#include <sys/stat.h>

static char veth[IF_NAMESIZE], peer[IF_NAMESIZE], nsname[32];
static bool skipped_ns;

static int sh(const char *fmt, const char *a, const char *b) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), fmt, a, b);
  return system(cmd);
}

static bool in_map(int fd, uint64_t key) {
  uint8_t v;
  return bpf_map_lookup_elem(fd, &key, &v) == 0;
}

static int map_keys(int fd) {
  uint64_t k, next;
  int n = 0;
  for (int err = bpf_map_get_next_key(fd, NULL, &next); !err;
       err = bpf_map_get_next_key(fd, &k, &next)) {
    k = next;
    n++;
  }
  return n;
}

DEF_TEST(filter_follows_the_names) {
  int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_ifindex", 8, 1, 16, NULL);
  if (fd < 0) {
    printf("SKIP: nsl_ifaces.filter_follows_the_names (no BPF maps here)\n");
    return 0;
  }
  struct netns host = {.kind = NETNS_HOST, .inum = netns_self_inum()};
  char *names[] = {"lo", veth};
  struct nsl_iffilter f;
  CHECK(nsl_iff_init(&f, names, 2, &host) == 0);
  f.map_fd = fd;
  mock_nlog = 0;
  nsl_iff_refresh(&f, true);
  unsigned lo = if_nametoindex("lo");
  CHECK(lo > 0 && in_map(fd, lo));
  CHECK_EQ_INT(1, map_keys(fd));
  CHECK(mock_nlog == 1 && strstr(mock_log[0], "no such interface") &&
        strstr(mock_log[0], veth));
  /* Made later: counted from the refresh that sees it. */
  CHECK(sh("ip link add %s type veth peer name %s", veth, peer) == 0);
  unsigned i1 = if_nametoindex(veth);
  mock_nlog = 0;
  nsl_iff_refresh(&f, false);
  CHECK(in_map(fd, i1) && in_map(fd, lo));
  CHECK_EQ_INT(2, map_keys(fd));
  CHECK(mock_nlog == 1 && strstr(mock_log[0], "exists now"));
  /* Made again: a new index replaces the old one. */
  CHECK(sh("ip link del %s%s", veth, "") == 0);
  CHECK(sh("ip link add %s type veth peer name %s", veth, peer) == 0);
  unsigned i2 = if_nametoindex(veth);
  CHECK(i2 != i1);
  mock_nlog = 0;
  nsl_iff_refresh(&f, false);
  CHECK(in_map(fd, i2) && !in_map(fd, i1));
  CHECK_EQ_INT(2, map_keys(fd));
  CHECK(mock_nlog == 1 && strstr(mock_log[0], "made again"));
  /* Gone: out of the map, said as a WARNING. */
  CHECK(sh("ip link del %s%s", veth, "") == 0);
  mock_nlog = 0;
  nsl_iff_refresh(&f, false);
  CHECK(!in_map(fd, i2) && in_map(fd, lo));
  CHECK_EQ_INT(1, map_keys(fd));
  CHECK(mock_nlog == 1 && mock_log_sev[0] == LOG_WARNING &&
        strstr(mock_log[0], "is gone"));
  nsl_iff_free(&f);
  /* The same index under two names (one configured twice): one leaving
   * does not take it out of the map. */
  char *twice[] = {"lo", "lo"};
  CHECK(nsl_iff_init(&f, twice, 2, &host) == 0);
  f.map_fd = fd;
  nsl_iff_refresh(&f, true);
  CHECK(in_map(fd, lo));
  f.cur[1] = 12345; /* as if the second name had moved */
  bpf_map_update_elem(fd, &(uint64_t){12345}, &(uint8_t){1}, BPF_ANY);
  nsl_iff_refresh(&f, false);
  CHECK(in_map(fd, lo) && !in_map(fd, 12345));
  nsl_iff_free(&f);
  /* "all": the key carries collectd's own namespace. */
  struct netns all = {.kind = NETNS_ALL};
  CHECK(nsl_iff_init(&f, names, 1, &all) == 0);
  f.map_fd = fd;
  nsl_iff_refresh(&f, true);
  CHECK(in_map(fd, ((uint64_t)netns_self_inum() << 32) | lo));
  nsl_iff_free(&f);
  close(fd);
  return 0;
}

DEF_TEST(group_names_by_namespace) {
  if (sh("ip netns add %s%s", nsname, "") != 0 ||
      sh("ip link add %s type veth peer name %s", veth, peer) != 0 ||
      sh("ip link set %s netns %s", peer, nsname) != 0)
  {
    /* The case needs them; what it tests is not their making. */
    printf("SKIP: nsl_ifaces.group_names_by_namespace (cannot make a "
           "namespace and a veth pair here)\n");
    skipped_ns = true;
    return 1;
  }
  char p[64];
  snprintf(p, sizeof(p), "/run/netns/%s", nsname);
  struct stat st;
  CHECK(stat(p, &st) == 0);
  uint32_t other = (uint32_t)st.st_ino, self = netns_self_inum();
  unsigned lo = if_nametoindex("lo"), v = if_nametoindex(veth);
  struct netns all = {.kind = NETNS_ALL};
  struct nsl_ifnames t = {.ns = &all};
  uint64_t g_lo = ((uint64_t)self << 32) | lo,
           g_v = ((uint64_t)self << 32) | v,
           g_other_lo = ((uint64_t)other << 32) | 1,
           g_none = ((uint64_t)self << 32) | 999999,
           g_zero = ((uint64_t)self << 32),
           g_nons = ((uint64_t)1 << 32) | 1; /* no such namespace */
  /* Unsorted, with repeats. */
  uint64_t groups[] = {g_other_lo, g_v, g_lo, g_none, g_lo, g_zero, g_nons};
  nsl_ifnames_refresh(&t, groups, 7);
  CHECK_EQ_INT(6, t.n);
  const struct nsl_if_group *g = nsl_ifnames_find(&t, g_lo);
  CHECK(g && !g->gone);
  CHECK_EQ_STR("lo", g->name);
  CHECK_EQ_U64(path_hash("lo"), g->hash);
  g = nsl_ifnames_find(&t, g_v);
  CHECK(g && !g->gone);
  CHECK_EQ_STR(veth, g->name);
  /* Another namespace: <namespace>_<interface>, hashed as its path. */
  char want[EBPF_NAME_LEN], path[64];
  snprintf(path, sizeof(path), "%s/lo", nsname);
  instance_from_path(path, want);
  g = nsl_ifnames_find(&t, g_other_lo);
  CHECK(g && !g->gone);
  CHECK_EQ_STR(want, g->name);
  CHECK_EQ_U64(path_hash(path), g->hash);
  CHECK(nsl_ifnames_find(&t, g_none)->gone);
  CHECK_EQ_STR("if0", nsl_ifnames_find(&t, g_zero)->name);
  CHECK(nsl_ifnames_find(&t, g_nons)->gone);
  CHECK(!nsl_ifnames_find(&t, g_lo + 1000));
  /* The namespace deleted (and with it the peer): its groups are gone at
   * the next refresh; the host's veth end went with the pair. */
  CHECK(sh("ip netns del %s%s", nsname, "") == 0);
  for (int i = 0; i < 50 && if_nametoindex(veth); i++)
    usleep(20000);
  nsl_ifnames_refresh(&t, groups, 7);
  CHECK(nsl_ifnames_find(&t, g_other_lo)->gone);
  CHECK(nsl_ifnames_find(&t, g_v)->gone);
  CHECK(!nsl_ifnames_find(&t, g_lo)->gone);
  nsl_ifnames_free(&t);
  return 0;
}

/* An interface renamed in another namespace: its group keeps the name of
 * the last refresh until the namespace's turn (once every
 * NSL_IF_RENAME_READS refreshes, by its inode), then has the new one; the
 * namespace is looked up, not walked for, at the refreshes between. */
DEF_TEST(renamed_in_another_namespace) {
  char ns[40], a[IF_NAMESIZE], b[IF_NAMESIZE], p[80];
  snprintf(ns, sizeof(ns), "%sr", nsname);
  snprintf(a, sizeof(a), "nslra%d", (int)getpid() % 100000);
  snprintf(b, sizeof(b), "nslrb%d", (int)getpid() % 100000);
  /* main() has made a veth pair: one is made here inside the namespace. */
  CHECK(sh("ip netns add %s%s", ns, "") == 0);
  char cmd[160];
  snprintf(cmd, sizeof(cmd), "ip -n %s link add %s type veth peer name %sp",
           ns, a, a);
  CHECK(system(cmd) == 0);
  snprintf(p, sizeof(p), "/run/netns/%s", ns);
  struct stat st;
  CHECK(stat(p, &st) == 0);
  uint32_t other = (uint32_t)st.st_ino;
  snprintf(cmd, sizeof(cmd), "ip netns exec %s cat /sys/class/net/%s/ifindex",
           ns, a);
  FILE *f = popen(cmd, "r");
  unsigned idx = 0;
  CHECK(f && fscanf(f, "%u", &idx) == 1 && idx > 1);
  pclose(f);
  struct netns all = {.kind = NETNS_ALL};
  struct nsl_ifnames t = {.ns = &all};
  uint64_t g = ((uint64_t)other << 32) | idx;
  char old[EBPF_NAME_LEN], now[EBPF_NAME_LEN], path[80];
  snprintf(path, sizeof(path), "%s/%s", ns, a);
  instance_from_path(path, old);
  snprintf(path, sizeof(path), "%s/%s", ns, b);
  instance_from_path(path, now);
  nsl_ifnames_refresh(&t, &g, 1);
  CHECK(netns_found(other));
  CHECK_EQ_STR(old, nsl_ifnames_find(&t, g)->name);
  snprintf(cmd, sizeof(cmd), "ip -n %s link set %s name %s", ns, a, b);
  CHECK(system(cmd) == 0);
  int renamed_at = 0;
  for (int i = 1; i <= NSL_IF_RENAME_READS && !renamed_at; i++) {
    nsl_ifnames_refresh(&t, &g, 1);
    const char *name = nsl_ifnames_find(&t, g)->name;
    if (strcmp(name, now) == 0)
      renamed_at = i;
    else
      CHECK_EQ_STR(old, name);
  }
  CHECK(renamed_at > 0);
  CHECK_EQ_INT(0, (int)((other + t.refreshes) % NSL_IF_RENAME_READS));
  nsl_ifnames_free(&t);
  CHECK(sh("ip netns del %s%s", ns, "") == 0);
  return 0;
}

int main(void) {
  tl_prog = "nsl_ifaces";
  snprintf(veth, sizeof(veth), "nslif%d", (int)getpid() % 100000);
  snprintf(peer, sizeof(peer), "nslip%d", (int)getpid() % 100000);
  snprintf(nsname, sizeof(nsname), "nslifns%d", (int)getpid());
  /* Interfaces and namespaces are made as root, with CAP_NET_ADMIN and
   * CAP_BPF: not in a package build's (fake)root, nor without iproute2. */
  int probe = bpf_map_create(BPF_MAP_TYPE_HASH, "t_probe", 8, 1, 1, NULL);
  const char *why = geteuid() != 0 ? "not root"
                    : probe < 0    ? "no BPF maps here"
                    : sh("ip link add %s type veth peer name %s 2>/dev/null",
                         veth, peer) != 0
                        ? "cannot make a veth pair (no ip(8) or no veth)"
                        : NULL;
  sh("ip link del %s 2>/dev/null%s", veth, "");
  if (probe >= 0)
    close(probe);
  if (why) {
    printf("SKIP: nsl_ifaces.filter_follows_the_names (%s)\n", why);
    printf("SKIP: nsl_ifaces.group_names_by_namespace (%s)\n", why);
    printf("SKIP: nsl_ifaces.renamed_in_another_namespace (%s)\n", why);
    END_TEST;
  }
  RUN_TEST(filter_follows_the_names);
  sh("ip link del %s 2>/dev/null%s", veth, "");
  if (test_group_names_by_namespace() == 0)
    printf("PASS: nsl_ifaces.group_names_by_namespace\n");
  else if (!skipped_ns) {
    printf("FAIL: nsl_ifaces.group_names_by_namespace\n");
    tl_failed++;
  }
  sh("ip link del %s 2>/dev/null%s", veth, "");
  sh("ip netns del %s 2>/dev/null%s", nsname, "");
  RUN_TEST(renamed_in_another_namespace);
  sh("ip netns del %sr 2>/dev/null%s", nsname, "");
  END_TEST;
}
