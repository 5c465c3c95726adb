/* Who holds a socket (plugin/common/owners.c): the iterator's records read
 * from a pipe in pieces that cut them anywhere, parsed into owners (the
 * cgroup path root first, each inode once, the others counted as left
 * out, a record cut short refused), 8 MB of records through the fixed
 * buffer without the process's peak RSS growing; and, as root on a kernel
 * with iter/task_file, the real pass: this process's socket found with its
 * pid, comm and the cgroup path of /proc/self/cgroup, in a child's cgroup
 * of Kubernetes' depth too; 24 sockets (more records than the seq_file
 * buffer holds) all found; a socket dup()ed 1,000 times in this process
 * and two children named once, the others counted exactly. */
/* Links with the plugin's other objects (see the Makefile). */
#include "../../plugin/common/owners.c"
#include "common/cgroup.h"
#include "mock_collectd.h"
#include "testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
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

/* len bytes of buf into a pipe by a child, piece bytes at a time; the
 * pipe's read end. */
static int feed(const char *buf, size_t len, size_t piece, pid_t *child) {
  int p[2];
  if (pipe(p) != 0)
    return -1;
  *child = fork();
  if (*child == 0) {
    close(p[0]);
    for (size_t o = 0; o < len;) {
      size_t k = len - o < piece ? len - o : piece;
      ssize_t w = write(p[1], buf + o, k);
      if (w <= 0)
        _exit(1);
      o += (size_t)w;
    }
    _exit(0);
  }
  close(p[1]);
  return p[0];
}

static int drain(const char *buf, size_t len, size_t piece, const uint64_t *want,
                 size_t n, struct got *g, struct owners_left *left) {
  pid_t child;
  int fd = feed(buf, len, piece, &child);
  if (fd < 0)
    return -1000;
  int r = owners_drain(fd, want, n, collect, g, left);
  close(fd);
  waitpid(child, NULL, 0);
  return r;
}

static long vm_hwm_kib(void) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, "VmHWM:", 6))
      v = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  return v;
}

DEF_TEST(records_parsed) {
  static char buf[5 * OWNERS_REC_LEN];
  const char *const k8s[] = {
      "cri-containerd-4d1f0b5a9c3e.scope",
      "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice",
      "kubepods-burstable.slice", "kubepods.slice"};
  size_t o = put_rec(buf, 77, 4242, "rcv\x01", k8s, 4);
  o += put_rec(buf + o, 77, 4243, "other", k8s, 1); /* the same inode */
  o += put_rec(buf + o, 78, 1, "init", NULL, 0);     /* the root cgroup */
  o += put_rec(buf + o, 79, 5, "unasked", NULL, 0);  /* not looked for */
  const uint64_t want[] = {77, 78, 80};
  for (size_t piece = 1000; piece <= 2 * OWNERS_REC_LEN; piece += 2 * OWNERS_REC_LEN - 1000) {
    struct got g = {0};
    struct owners_left left = {0};
    CHECK_EQ_INT(2, drain(buf, o, piece, want, 3, &g, &left));
    CHECK_EQ_INT(2, g.n);
    CHECK(left.fds == 2 && left.procs == 0);
    CHECK(g.o[0].inode == 77 && g.o[0].pid == 4242 && g.o[0].ns_pid == 1 &&
          g.o[0].pid_ns == 4026532000u);
    CHECK_EQ_STR("rcv\x01", g.o[0].comm); /* as it is: escaped where shown */
    CHECK_EQ_STR("/kubepods.slice/kubepods-burstable.slice/"
                 "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901"
                 ".slice/cri-containerd-4d1f0b5a9c3e.scope",
                 g.path[0]);
    CHECK(g.o[1].inode == 78 && g.o[1].pid == 1);
    CHECK_EQ_STR("/", g.path[1]);
  }
  /* Cut anywhere inside a record: refused. */
  struct got g = {0};
  CHECK_EQ_INT(-EINVAL, drain(buf, OWNERS_REC_LEN + 10, 7, want, 3, &g, NULL));
  CHECK_EQ_INT(-EINVAL, drain(buf, 12, 12, want, 3, &g, NULL));
  CHECK_EQ_INT(0, drain(buf, 0, 1, want, 3, &g, NULL));
  /* A depth beyond the blocks: refused. */
  struct owners_rec bad = {.inode = 77, .depth = OWNERS_DEPTH_MAX + 1};
  memcpy(buf, &bad, sizeof(bad));
  CHECK_EQ_INT(-EINVAL, drain(buf, OWNERS_REC_LEN, OWNERS_REC_LEN, want, 3, &g, NULL));
  return 0;
}

/* 2,000 records of one inode (8.3 MB) through the fixed buffer: one owner,
 * 1,999 left out, and this process's peak RSS grows by less than 1 MiB
 * (a buffer that held them all would add 8 MiB). */
DEF_TEST(records_bounded) {
  enum { N = 2000 };
  int p[2];
  CHECK(pipe(p) == 0);
  long before = vm_hwm_kib();
  pid_t child = fork();
  if (child == 0) { /* the records are made here, not in the parent */
    static char rec[OWNERS_REC_LEN];
    close(p[0]);
    for (uint32_t i = 0; i < N; i++) {
      put_rec(rec, 91, 100 + i, "flood", NULL, 0);
      if (write(p[1], rec, sizeof(rec)) != (ssize_t)sizeof(rec))
        _exit(1);
    }
    _exit(0);
  }
  close(p[1]);
  const uint64_t want[] = {91};
  struct got g = {0};
  struct owners_left left = {0};
  CHECK_EQ_INT(1, owners_drain(p[0], want, 1, collect, &g, &left));
  close(p[0]);
  int st;
  waitpid(child, &st, 0);
  long after = vm_hwm_kib();
  printf("owners.records_bounded: VmHWM %ld -> %ld KiB\n", before, after);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(g.n == 1 && g.o[0].pid == 100);
  CHECK(left.fds == N - 1);
  CHECK(before > 0 && after - before < 1024);
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
  int found = owners_find(inodes, 3, collect, &g, NULL);
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

/* All of 24 sockets (100 KB of records, more than the seq_file's buffer of
 * 32 KiB takes at once: a record that does not fit is shown again at the
 * next read and must be reported then); then one of them dup()ed 1,000
 * times here and held by two children: named once, for this process (the
 * lowest pid of the three), with 3 * 1,001 - 1 descriptors and 2 processes
 * left out. */
DEF_TEST(real_pass_bounded) {
  char why[256];
  if (geteuid() != 0 || owners_init(why, sizeof(why)) != 0) {
    printf("SKIP: owners.real_pass_bounded (not root, or %s)\n",
           geteuid() ? "" : why);
    return 0;
  }
  enum { NS = 24, DUPS = 1000 };
  /* The VM matrix's guests start at a soft limit of 1,024 descriptors. */
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  if (rl.rlim_cur < NS + DUPS + 64) {
    rl.rlim_cur = rl.rlim_max;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    CHECK(rl.rlim_cur >= NS + DUPS + 64);
  }
  int fds[NS];
  uint64_t inodes[NS];
  for (int i = 0; i < NS; i++) {
    struct stat sb;
    fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fds[i] >= 0 && fstat(fds[i], &sb) == 0);
    inodes[i] = sb.st_ino;
  }
  struct got g = {0}; /* keeps the first 4 */
  struct owners_left left;
  CHECK_EQ_INT(NS, owners_find(inodes, NS, collect, &g, &left));
  CHECK(left.fds == 0 && left.procs == 0);
  int dups[DUPS];
  for (int i = 0; i < DUPS; i++) {
    dups[i] = dup(fds[5]);
    CHECK(dups[i] >= 0);
  }
  int pfd[2];
  CHECK(pipe(pfd) == 0);
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      char c;
      close(pfd[1]);
      (void)!read(pfd[0], &c, 1); /* until the parent closes its end */
      _exit(0);
    }
  }
  close(pfd[0]);
  memset(&g, 0, sizeof(g));
  int found = owners_find(&inodes[5], 1, collect, &g, &left);
  close(pfd[1]);
  for (int k = 0; k < 2; k++)
    waitpid(kids[k], NULL, 0);
  printf("owners.real_pass_bounded: left out %llu descriptors, %llu "
         "processes\n", (unsigned long long)left.fds,
         (unsigned long long)left.procs);
  CHECK_EQ_INT(1, found);
  CHECK(g.n == 1 && g.o[0].inode == inodes[5] && g.o[0].pid == getpid());
  CHECK(left.fds == 3 * (DUPS + 1) - 1 && left.procs == 2);
  for (int i = 0; i < DUPS; i++)
    close(dups[i]);
  for (int i = 0; i < NS; i++)
    close(fds[i]);
  owners_free();
  return 0;
}

int main(void) {
  tl_prog = "owners";
  RUN_TEST(records_parsed);
  RUN_TEST(records_bounded);
  RUN_TEST(real_pass);
  RUN_TEST(real_pass_bounded);
  END_TEST;
}
