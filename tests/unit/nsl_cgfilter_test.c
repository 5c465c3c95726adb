/* netstacklat's Cgroup filter (plugin/netstacklat/cgfilter.c) against real
 * cgroups and the BPF object's own maps and variables (as root; the
 * programs are not loaded): the ancestors way orders the paths deepest
 * first and writes the id at each path, a new one when the cgroup is made
 * again and 0 when it is gone; the storage way marks the directories the
 * globs match now and moves the generation when that changes; the hash way
 * holds every cgroup below the matches, says when the map is full and
 * retries. The witness is the cgroup directories' inode numbers. */
/* Links with the plugin's other objects (see the Makefile). */
#define _GNU_SOURCE /* nftw() */
#include "../../plugin/netstacklat/cgfilter.c"
#include "mock_collectd.h"
#include "rx.skel.h"
#include "testlib.h"

#include <bpf/libbpf.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static char base[64];    /* below the cgroup2 root */
static char absbase[512];

static uint64_t ino(const char *rel) {
  char p[1024];
  struct stat st;
  snprintf(p, sizeof(p), "%s/%s", absbase, rel);
  return stat(p, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static int mk(const char *rel) {
  char p[1024];
  snprintf(p, sizeof(p), "%s/%s", absbase, rel);
  return mkdir(p, 0755);
}

static int rm(const char *rel) {
  char p[1024];
  snprintf(p, sizeof(p), "%s/%s", absbase, rel);
  return rmdir(p);
}

/* What a failed case left: the test's cgroups, deepest first. */
static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP)
    rmdir(p);
  return 0;
}
static void clean(void) {
  if (absbase[0])
    nftw(absbase, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The object's maps and variables; NULL (SKIP) where there are no BPF
 * maps (a package build's chroot) or no cgroup2. */
static struct rx_bpf *open_maps(uint32_t filter_size,
                                         const char **why) {
  *why = NULL;
  if (!cgroup2_root()) {
    *why = "no cgroup2 mount";
    return NULL;
  }
  struct rx_bpf *skel = rx_bpf__open();
  if (!skel) {
    *why = "cannot open the BPF object";
    return NULL;
  }
  struct bpf_program *p;
  bpf_object__for_each_program(p, skel->obj) bpf_program__set_autoload(p, false);
  bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_filter, filter_size);
  if (libbpf_probe_bpf_map_type((enum bpf_map_type)32, NULL) != 1) {
    bpf_map__set_type(skel->maps.netstacklat_cgroup_state,
                      BPF_MAP_TYPE_ARRAY);
    bpf_map__set_map_flags(skel->maps.netstacklat_cgroup_state, 0);
    bpf_map__set_max_entries(skel->maps.netstacklat_cgroup_state, 1);
  }
  if (rx_bpf__load(skel)) {
    rx_bpf__destroy(skel);
    *why = "no BPF maps here";
    return NULL;
  }
  return skel;
}

static void bind_maps(struct nsl_cgfilter *f, struct rx_bpf *skel) {
  nsl_cgf_loaded(f, &skel->data->cg_filter_gen, skel->bss->anc_id,
                 bpf_map__fd(skel->maps.netstacklat_cgroup_state),
                 bpf_map__fd(skel->maps.netstacklat_cgroup_filter),
                 bpf_map__max_entries(skel->maps.netstacklat_cgroup_filter));
}

static bool in_hash(struct rx_bpf *skel, uint64_t id) {
  __u64 k = id;
  __u8 v;
  return bpf_map_lookup_elem(bpf_map__fd(skel->maps.netstacklat_cgroup_filter),
                             &k, &v) == 0;
}

DEF_TEST(ancestors_deepest_first_and_made_again) {
  const char *why;
  struct rx_bpf *skel = open_maps(16, &why);
  if (!skel) {
    printf("SKIP: nsl_cgfilter.ancestors_deepest_first_and_made_again (%s)\n",
           why);
    return 0;
  }
  CHECK(mk("") == 0);
  CHECK(mk("a") == 0 && mk("a/b") == 0);
  char shallow[128], deep[128], missing[128];
  snprintf(shallow, sizeof(shallow), "%s", base);        /* level 1 */
  snprintf(deep, sizeof(deep), "/%s/a/b", base);         /* level 3 */
  snprintf(missing, sizeof(missing), "%s/zz", base);     /* level 2 */
  char *paths[] = {shallow, deep, missing};
  struct nsl_cgfilter f;
  nsl_cgf_init(&f, paths, 3, true, false, false);
  CHECK_EQ_INT(1, f.anc_path[0]);
  CHECK_EQ_INT(2, f.anc_path[1]);
  CHECK_EQ_INT(0, f.anc_path[2]);
  /* Before load the object's own variables: levels and ids written. */
  __u32 levels[NSL_CG_ANC_MAX] = {0}, gen = 1;
  __u64 ids[NSL_CG_ANC_MAX] = {0};
  nsl_cgf_opened(&f, levels, &gen, ids);
  CHECK_EQ_INT(3, levels[0]);
  CHECK_EQ_INT(2, levels[1]);
  CHECK_EQ_INT(1, levels[2]);
  CHECK_EQ_U64(ino("a/b"), ids[0]);
  CHECK_EQ_U64(0, ids[1]);
  CHECK_EQ_U64(ino(""), ids[2]);
  /* Loaded: the mapped variables from now on. */
  bind_maps(&f, skel);
  memset(f.anc_ids, 0, sizeof(f.anc_ids));
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, NULL, true));
  uint64_t old = ino("a/b");
  CHECK_EQ_U64(old, skel->bss->anc_id[0]);
  CHECK_EQ_U64(ino(""), skel->bss->anc_id[2]);
  /* Made again: a new id at the same path. */
  CHECK(rm("a/b") == 0 && mk("a/b") == 0);
  CHECK(ino("a/b") != old);
  mock_nlog = 0;
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, NULL, true));
  CHECK_EQ_U64(ino("a/b"), skel->bss->anc_id[0]);
  CHECK(mock_nlog == 1 && strstr(mock_log[0], "(1 new, 1 gone)"));
  /* Gone: 0. The one that was missing exists now. */
  CHECK(rm("a/b") == 0 && mk("zz") == 0);
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, NULL, false));
  CHECK_EQ_U64(0, skel->bss->anc_id[0]);
  CHECK_EQ_U64(ino("zz"), skel->bss->anc_id[1]);
  CHECK(rm("zz") == 0 && rm("a") == 0 && rm("") == 0);
  nsl_cgf_free(&f);
  rx_bpf__destroy(skel);
  return 0;
}

static int mark_of(struct rx_bpf *skel, const char *rel,
                   __u32 *mark) {
  char p[1024];
  snprintf(p, sizeof(p), "%s/%s", absbase, rel);
  int dfd = open(p, O_RDONLY | O_DIRECTORY);
  if (dfd < 0)
    return -1;
  struct nsl_cg_state v;
  int err = bpf_map_lookup_elem(
      bpf_map__fd(skel->maps.netstacklat_cgroup_state), &dfd, &v);
  close(dfd);
  *mark = v.mark;
  return err;
}

DEF_TEST(storage_marks_what_the_globs_match) {
  const char *why;
  struct rx_bpf *skel = open_maps(16, &why);
  if (skel && bpf_map__type(skel->maps.netstacklat_cgroup_state) ==
                  BPF_MAP_TYPE_ARRAY) {
    rx_bpf__destroy(skel);
    skel = NULL;
    why = "no cgroup storage (kernel < 6.2)";
  }
  if (!skel) {
    printf("SKIP: nsl_cgfilter.storage_marks_what_the_globs_match (%s)\n",
           why);
    return 0;
  }
  CHECK(mk("") == 0 && mk("x1") == 0 && mk("x2") == 0 && mk("y") == 0);
  CHECK(mk("x1/below") == 0);
  char glob[128];
  snprintf(glob, sizeof(glob), "%s/x*", base);
  char *paths[] = {glob};
  struct nsl_cgfilter f;
  nsl_cgf_init(&f, paths, 1, false, true, false);
  bind_maps(&f, skel);
  __u32 gen0 = skel->data->cg_filter_gen, mark;
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, NULL, false));
  CHECK_EQ_U64(gen0 + 1, skel->data->cg_filter_gen);
  CHECK(mark_of(skel, "x1", &mark) == 0 && mark == 1);
  CHECK(mark_of(skel, "x2", &mark) == 0 && mark == 1);
  /* Only the globs' matches: the kernel decides those below. */
  CHECK(mark_of(skel, "y", &mark) != 0);
  CHECK(mark_of(skel, "x1/below", &mark) != 0);
  /* Nothing changed: the generation stays. */
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, NULL, false));
  CHECK_EQ_U64(gen0 + 1, skel->data->cg_filter_gen);
  /* x2 removed, x3 made: marked, and the generation moves. */
  CHECK(rm("x2") == 0 && mk("x3") == 0);
  mock_nlog = 0;
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, NULL, true));
  CHECK_EQ_U64(gen0 + 2, skel->data->cg_filter_gen);
  CHECK(mark_of(skel, "x3", &mark) == 0 && mark == 1);
  CHECK(mock_nlog == 1 && strstr(mock_log[0], "marks 2 configured cgroups "
                                              "(1 new, 1 gone)"));
  CHECK(rm("x1/below") == 0 && rm("x1") == 0 && rm("x3") == 0 &&
        rm("y") == 0 && rm("") == 0);
  nsl_cgf_free(&f);
  rx_bpf__destroy(skel);
  return 0;
}

DEF_TEST(hash_holds_the_subtrees_and_says_full) {
  const char *why;
  struct rx_bpf *skel = open_maps(2, &why);
  if (!skel) {
    printf("SKIP: cgfilter.hash_holds_the_subtrees_and_says_full (%s)\n",
           why);
    return 0;
  }
  CHECK(mk("") == 0 && mk("a") == 0 && mk("a/b") == 0 && mk("a/b/c") == 0);
  CHECK(mk("other") == 0);
  char p[128];
  snprintf(p, sizeof(p), "%s/a", base);
  char *paths[] = {p};
  struct nsl_cgfilter f;
  nsl_cgf_init(&f, paths, 1, false, false, true);
  bind_maps(&f, skel);
  struct cgroup_tree tree = {0};
  cgroup_tree_refresh(&tree);
  mock_nlog = 0;
  /* Three match (a and the two below it); the map holds two. */
  CHECK_EQ_INT(3, nsl_cgf_refresh(&f, &tree, true));
  CHECK_EQ_INT(1, f.failed_said);
  CHECK_EQ_INT(2, in_hash(skel, ino("a")) + in_hash(skel, ino("a/b")) +
                      in_hash(skel, ino("a/b/c")));
  CHECK(!in_hash(skel, ino("other")));
  bool warned = false;
  for (int i = 0; i < mock_nlog; i++)
    warned = warned || strstr(mock_log[i], "(2 entries) is full: 1 of 3");
  CHECK(warned);
  /* One gone: every match in the map again, said once. */
  CHECK(rm("a/b/c") == 0);
  cgroup_tree_refresh(&tree);
  mock_nlog = 0;
  CHECK_EQ_INT(2, nsl_cgf_refresh(&f, &tree, true));
  CHECK_EQ_INT(0, f.failed_said);
  CHECK(in_hash(skel, ino("a")) && in_hash(skel, ino("a/b")));
  bool again = false;
  for (int i = 0; i < mock_nlog; i++)
    again = again || strstr(mock_log[i], "in the cgroup filter's map again");
  CHECK(again);
  CHECK(rm("a/b") == 0 && rm("a") == 0 && rm("other") == 0 && rm("") == 0);
  cgroup_tree_free(&tree);
  nsl_cgf_free(&f);
  rx_bpf__destroy(skel);
  return 0;
}

int main(void) {
  tl_prog = "nsl_cgfilter";
  snprintf(base, sizeof(base), "nslcgf-test-%d", (int)getpid());
  if (cgroup2_root())
    snprintf(absbase, sizeof(absbase), "%s/%s", cgroup2_root(), base);
  RUN_TEST(ancestors_deepest_first_and_made_again);
  clean();
  RUN_TEST(storage_marks_what_the_globs_match);
  clean();
  RUN_TEST(hash_holds_the_subtrees_and_says_full);
  clean();
  END_TEST;
}
