/* Who holds a socket (plugin/common/owners.c): the iterator's records parsed into
 * owners (the cgroup path root first, each inode once, a short buffer
 * refused), and, as root on a kernel with iter/task_file, the real pass:
 * this process's socket found with its pid, comm and the cgroup path of
 * /proc/self/cgroup, in a child's cgroup of Kubernetes' depth too. */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/common/owners.c"
#include "common/cgroup.h"
#include "mock_collectd.h"
#include "testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct got {
  int n;
  struct owner o[4];
  char path[4][1024];
};

static void collect(const struct owner *o, void *arg) {
  struct got *g = arg;
  if (g->n >= 4)
    return;
  g->o[g->n] = *o;
  snprintf(g->path[g->n], sizeof(g->path[0]), "%s", o->cgroup);
  g->n++;
}

static size_t put_rec(char *buf, uint64_t inode, uint32_t tgid,
                      const char *comm, const char *const *leaf_up,
                      int depth) {
  struct owners_rec r = {.inode = inode, .tgid = tgid, .ns_pid = 1,
                         .pid_ns = 4026532000u, .depth = (uint16_t)depth};
  snprintf(r.comm, sizeof(r.comm), "%s", comm);
  memcpy(buf, &r, sizeof(r));
  size_t o = sizeof(r);
  for (int i = 0; i < OWNERS_DEPTH_MAX; i++) {
    memset(buf + o, 'x', OWNERS_NAME_MAX); /* what follows a NUL is noise */
    snprintf(buf + o, OWNERS_NAME_MAX, "%s", i < depth ? leaf_up[i] : "");
    o += OWNERS_NAME_MAX;
  }
  return o;
}

DEF_TEST(records_parsed) {
  static char buf[4 * (sizeof(struct owners_rec) +
                       OWNERS_DEPTH_MAX * OWNERS_NAME_MAX)];
  const char *const k8s[] = {
      "cri-containerd-4d1f0b5a9c3e.scope",
      "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice",
      "kubepods-burstable.slice", "kubepods.slice"};
  size_t o = put_rec(buf, 77, 4242, "rcv\x01", k8s, 4);
  o += put_rec(buf + o, 77, 4243, "other", k8s, 1); /* the same inode */
  o += put_rec(buf + o, 78, 1, "init", NULL, 0);     /* the root cgroup */
  struct got g = {0};
  CHECK_EQ_INT(2, owners_parse(buf, o, collect, &g));
  CHECK_EQ_INT(2, g.n);
  CHECK(g.o[0].inode == 77 && g.o[0].pid == 4242 && g.o[0].ns_pid == 1 &&
        g.o[0].pid_ns == 4026532000u);
  CHECK_EQ_STR("rcv\x01", g.o[0].comm); /* as it is: escaped where shown */
  CHECK_EQ_STR("/kubepods.slice/kubepods-burstable.slice/"
               "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901"
               ".slice/cri-containerd-4d1f0b5a9c3e.scope",
               g.path[0]);
  CHECK(g.o[1].inode == 78 && g.o[1].pid == 1);
  CHECK_EQ_STR("/", g.path[1]);
  /* Cut anywhere inside a record: refused. */
  g.n = 0;
  CHECK_EQ_INT(-EINVAL, owners_parse(buf, sizeof(struct owners_rec) + 10,
                                     collect, &g));
  CHECK_EQ_INT(-EINVAL, owners_parse(buf, 12, collect, &g));
  CHECK_EQ_INT(0, owners_parse(buf, 0, collect, &g));
  return 0;
}

/* "0::/a/b" of /proc/<pid>/cgroup, as collectd (in the root cgroup
 * namespace) reads it. */
static int self_cgroup(pid_t pid, char *out, size_t len) {
  char p[64], line[4096];
  snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
  FILE *f = fopen(p, "r");
  if (!f)
    return -1;
  int r = -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "0::", 3)) {
      line[strcspn(line, "\n")] = 0;
      size_t n = strlen(line + 3);
      if (n >= len)
        n = len - 1;
      memcpy(out, line + 3, n);
      out[n] = 0;
      r = 0;
    }
  fclose(f);
  return r;
}

DEF_TEST(real_pass) {
  char why[256];
  if (geteuid() != 0 || owners_init(why, sizeof(why)) != 0) {
    printf("SKIP: owners.real_pass (not root, or %s)\n", geteuid() ? "" : why);
    return 0;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct stat sb;
  CHECK(fd >= 0 && fstat(fd, &sb) == 0);
  /* A child in a cgroup of Kubernetes' depth and length holds another. */
  char cg[1024], leaf[1024];
  CHECK(self_cgroup(getpid(), cg, sizeof(cg)) == 0);
  const char *root = cgroup2_root();
  CHECK(root != NULL);
  snprintf(leaf, sizeof(leaf),
           "%s/owners-test-%d.slice/kubepods-burstable.slice/"
           "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
           "cri-containerd-4d1f0b5a9c3e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e"
           "0f9a8b7c6d5e4f3a.scope",
           root, (int)getpid());
  char mk[1200];
  snprintf(mk, sizeof(mk), "mkdir -p '%s'", leaf);
  CHECK(system(mk) == 0);
  int pfd[2];
  CHECK(pipe(pfd) == 0);
  pid_t child = fork();
  if (child == 0) {
    char procs[1100];
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", leaf);
    FILE *f = fopen(procs, "w");
    if (!f || fprintf(f, "0\n") < 0 || fclose(f))
      _exit(1);
    int s = socket(AF_INET6, SOCK_DGRAM, 0);
    struct stat cs;
    fstat(s, &cs);
    uint64_t ino = cs.st_ino;
    if (write(pfd[1], &ino, sizeof(ino)) != sizeof(ino))
      _exit(1);
    pause();
    _exit(0);
  }
  uint64_t cino = 0;
  CHECK(read(pfd[0], &cino, sizeof(cino)) == sizeof(cino));
  uint64_t inodes[3] = {sb.st_ino, cino, 1 /* nobody's */};
  struct got g = {0};
  int found = owners_find(inodes, 3, collect, &g);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  /* Remove the leaf and its parents up to the cgroup2 root. */
  char d[1024];
  memcpy(d, leaf, sizeof(d));
  for (int i = 0; i < 4; i++) {
    rmdir(d);
    char *slash = strrchr(d, '/');
    if (slash)
      *slash = 0;
  }
  CHECK_EQ_INT(2, found);
  CHECK_EQ_INT(2, g.n);
  int me = g.o[0].inode == (uint64_t)sb.st_ino ? 0 : 1;
  CHECK(g.o[me].inode == (uint64_t)sb.st_ino && g.o[me].pid == getpid());
  CHECK_EQ_STR(cg, g.path[me]);
  char comm[32] = "";
  FILE *f = fopen("/proc/self/comm", "r");
  CHECK(f && fgets(comm, sizeof(comm), f));
  fclose(f);
  comm[strcspn(comm, "\n")] = 0;
  CHECK_EQ_STR(comm, g.o[me].comm);
  CHECK(g.o[1 - me].inode == cino && g.o[1 - me].pid == child);
  CHECK_EQ_STR(leaf + strlen(root), g.path[1 - me]);
  /* Nothing is looked for once the pass is over. */
  CHECK_EQ_INT(0, (int)skel->bss->owners_nwant);
  close(fd);
  owners_free();
  return 0;
}

int main(void) {
  tl_prog = "owners";
  RUN_TEST(records_parsed);
  RUN_TEST(real_pass);
  END_TEST;
}
