/* bench/slices EBPF_SO CONF FLOOR_OBJ PROTO SLICES SLICE_MS CPU: the system
 * level of `make bench`, every arm inside this one process.
 *
 * "ours" is the shipped plugin itself: build/ebpf.so dlopened as in
 * bench/readcost, fed CONF (the body of <Plugin ebpf>) and initialised, so its
 * programs, maps, load-time constants, flavour choice and receive-timestamp
 * socket are exactly what collectd would run. Its links are then taken away
 * from it (each link fd found in /proc/self/fdinfo is replaced by /dev/null,
 * which releases the link; the programs stay loaded, held by the plugin) and
 * this process attaches and detaches the same programs itself. "floor" is
 * FLOOR_OBJ (bench/empty.bpf.c), loaded once. "none" has no program on the
 * hooks. Receive timestamps stay on in every slice (the plugin's socket).
 *
 * A ping-pong of 64-byte messages over loopback (PROTO udp or tcp), client and
 * server threads pinned to CPU, runs all the time and counts round trips.
 * Slices of SLICE_MS alternate: none, floor, none, ours, none, ... (the arm
 * order flips every cycle), SLICES cycles, so every arm slice has a "none"
 * slice on each side. One line per slice on stdout:
 *   slice INDEX ARM ROUND_TRIPS_PER_S ATTACH_MS
 * after a line "ready ours=name:id,... floor=N". BENCH_NICE (default -10) is
 * the traffic threads' nice. Exits 3 if the plugin attached its programs in
 * a way this tool cannot re-attach (perf-event kprobes). */
#define _GNU_SOURCE
#define READCOST_NO_MAIN
#pragma GCC diagnostic ignored "-Wunused-function"
#include "readcost.c"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXP 64

struct ours_prog {
  int prog_fd, link_fd;
  int raw; /* raw_tracepoint link (tp_btf or raw_tp); else a tracing link */
  int named; /* raw_tp program: needs the tracepoint's name */
  int attach_type;
  char tp[64], name[32];
  unsigned id;
};
static struct ours_prog ours[MAXP];
static int nours;

static struct bpf_program *floor_p[MAXP];
static struct bpf_link *floor_l[MAXP];
static int nfloor;

static unsigned long trips; /* written by the client thread only */
static int cpu, nice_val = -10;

static void pin_self(void) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
  if (nice_val)
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice_val);
}

static void *server(void *arg) {
  int fd = (int)(long)arg;
  char b[64];
  pin_self();
  for (;;) {
    if (recv(fd, b, sizeof(b), 0) <= 0 || send(fd, b, sizeof(b), 0) <= 0)
      return NULL;
  }
}

static void *client(void *arg) {
  int fd = (int)(long)arg;
  char b[64] = {0};
  pin_self();
  for (;;) {
    if (send(fd, b, sizeof(b), 0) <= 0)
      return NULL;
    /* TCP may split: read the whole reply. */
    size_t got = 0;
    while (got < sizeof(b)) {
      ssize_t n = recv(fd, b + got, sizeof(b) - got, 0);
      if (n <= 0)
        return NULL;
      got += (size_t)n;
    }
    __atomic_store_n(&trips, trips + 1, __ATOMIC_RELAXED);
  }
}

static void die(const char *m) {
  perror(m);
  exit(1);
}

static void start_traffic(int tcp) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  int c, s;
  if (tcp) {
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (void *)&a, &al))
      die("slices: listen");
    c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (void *)&a, sizeof(a)))
      die("slices: connect");
    s = accept(l, NULL, NULL);
    if (s < 0)
      die("slices: accept");
    close(l);
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  } else {
    struct sockaddr_in b = a;
    socklen_t bl = sizeof(b);
    s = socket(AF_INET, SOCK_DGRAM, 0);
    c = socket(AF_INET, SOCK_DGRAM, 0);
    if (bind(s, (void *)&a, sizeof(a)) || getsockname(s, (void *)&a, &al) ||
        bind(c, (void *)&b, sizeof(b)) || getsockname(c, (void *)&b, &bl) ||
        connect(c, (void *)&a, sizeof(a)) || connect(s, (void *)&b, sizeof(b)))
      die("slices: udp");
  }
  pthread_t t;
  if (pthread_create(&t, NULL, server, (void *)(long)s) ||
      pthread_create(&t, NULL, client, (void *)(long)c))
    die("slices: threads");
}

/* Every BPF link this process holds: the plugin's. */
static void take_plugin_links(void) {
  DIR *d = opendir("/proc/self/fdinfo");
  struct dirent *e;
  int devnull = open("/dev/null", O_RDWR);
  while (d && (e = readdir(d))) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(d))
      continue;
    char p[300], l[256], type[64] = "";
    snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", e->d_name);
    FILE *f = fopen(p, "r");
    struct ours_prog o = {.prog_fd = -1, .link_fd = -1, .attach_type = -1};
    while (f && fgets(l, sizeof(l), f)) {
      if (sscanf(l, "link_type: %63s", type) == 1)
        continue;
      if (sscanf(l, "prog_id: %u", &o.id) == 1)
        continue;
      if (sscanf(l, "tp_name: %63s", o.tp) == 1)
        continue;
      sscanf(l, "attach_type: %d", &o.attach_type);
    }
    if (f)
      fclose(f);
    if (!type[0] || !o.id)
      continue;
    if (strcmp(type, "raw_tracepoint") && strcmp(type, "tracing")) {
      fprintf(stderr, "slices: the plugin attached a %s link: not supported here\n",
              type);
      exit(3);
    }
    if (nours == MAXP)
      break;
    o.raw = !strcmp(type, "raw_tracepoint");
    o.prog_fd = bpf_prog_get_fd_by_id(o.id);
    struct bpf_prog_info info;
    __u32 len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (o.prog_fd < 0 || bpf_obj_get_info_by_fd(o.prog_fd, &info, &len))
      die("slices: prog fd");
    snprintf(o.name, sizeof(o.name), "%s", info.name);
    o.named = info.type == BPF_PROG_TYPE_RAW_TRACEPOINT ||
              info.type == BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE;
    if (!o.raw && o.attach_type < 0) {
      fprintf(stderr, "slices: no attach_type for tracing link of %s\n", o.name);
      exit(3);
    }
    /* Release the plugin's link; its later close() hits /dev/null. */
    if (dup2(devnull, fd) < 0)
      die("slices: dup2");
    ours[nours++] = o;
  }
  if (d)
    closedir(d);
}

/* No link left anywhere on the plugin's programs (a held reference would
 * keep them attached in "none" slices). */
static void check_released(void) {
  __u32 id = 0;
  while (!bpf_link_get_next_id(id, &id)) {
    int fd = bpf_link_get_fd_by_id(id);
    struct bpf_link_info li;
    __u32 len = sizeof(li);
    memset(&li, 0, sizeof(li));
    if (fd < 0)
      continue;
    if (!bpf_obj_get_info_by_fd(fd, &li, &len))
      for (int i = 0; i < nours; i++)
        if (li.prog_id == ours[i].id) {
          fprintf(stderr, "slices: %s is still attached (link %u)\n", ours[i].name, id);
          exit(1);
        }
    close(fd);
  }
}

static int attach_ours(void) {
  for (int i = 0; i < nours; i++) {
    struct ours_prog *o = &ours[i];
    if (o->raw)
      o->link_fd = bpf_raw_tracepoint_open(o->named ? o->tp : NULL, o->prog_fd);
    else
      o->link_fd = bpf_link_create(o->prog_fd, 0, (enum bpf_attach_type)o->attach_type,
                                   NULL);
    if (o->link_fd < 0) {
      fprintf(stderr, "slices: cannot attach %s: %s\n", o->name, strerror(errno));
      return -1;
    }
  }
  return 0;
}

static void detach_ours(void) {
  for (int i = 0; i < nours; i++) {
    close(ours[i].link_fd);
    ours[i].link_fd = -1;
  }
}

static int attach_floor(void) {
  for (int i = 0; i < nfloor; i++) {
    floor_l[i] = bpf_program__attach(floor_p[i]);
    if (!floor_l[i] || libbpf_get_error(floor_l[i])) {
      fprintf(stderr, "slices: cannot attach %s\n", bpf_program__name(floor_p[i]));
      return -1;
    }
  }
  return 0;
}

static void detach_floor(void) {
  for (int i = 0; i < nfloor; i++)
    bpf_link__destroy(floor_l[i]);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int quiet(enum libbpf_print_level l, const char *f, va_list ap) {
  return l == LIBBPF_WARN ? vfprintf(stderr, f, ap) : 0;
}

/* One slice of arm (0 none, 1 floor, 2 ours): attach, settle, count, detach. */
static void slice(int idx, int arm, long ms) {
  static const char *names[] = {"none", "floor", "ours"};
  double a0 = now_s();
  int rc = arm == 1 ? attach_floor() : arm == 2 ? attach_ours() : 0;
  if (rc)
    exit(1);
  double a1 = now_s();
  struct timespec settle = {0, 20 * 1000000L}, sl = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&settle, NULL);
  unsigned long c0 = __atomic_load_n(&trips, __ATOMIC_RELAXED);
  double t0 = now_s();
  nanosleep(&sl, NULL);
  unsigned long c1 = __atomic_load_n(&trips, __ATOMIC_RELAXED);
  double t1 = now_s();
  if (arm == 1)
    detach_floor();
  else if (arm == 2)
    detach_ours();
  printf("slice %d %s %.1f %.3f\n", idx, names[arm], (double)(c1 - c0) / (t1 - t0),
         (a1 - a0) * 1e3);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: %s EBPF_SO CONF FLOOR_OBJ udp|tcp SLICES SLICE_MS CPU\n",
            argv[0]);
    return 2;
  }
  libbpf_set_print(quiet);
  if (getenv("BENCH_NICE"))
    nice_val = atoi(getenv("BENCH_NICE"));
  cpu = atoi(argv[7]);
  int nslices = atoi(argv[5]);
  long ms = atol(argv[6]);
  int tcp = !strcmp(argv[4], "tcp");

  FILE *f = fopen(argv[2], "r");
  if (!f)
    die(argv[2]);
  oconfig_item_t *conf = parse(f);
  fclose(f);
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "slices: %s\n", dlerror());
    return 1;
  }
  void (*reg)(void) = (void (*)(void))dlsym(h, "module_register");
  if (!reg)
    return 1;
  reg();
  if (!cb_config || !cb_init || cb_config(conf) != 0 || cb_init() != 0) {
    fprintf(stderr, "slices: the plugin's config or init failed\n");
    return 1;
  }
  take_plugin_links();
  if (!nours) {
    fprintf(stderr, "slices: the plugin attached no program\n");
    return 1;
  }
  check_released();

  struct bpf_object *obj = bpf_object__open_file(argv[3], NULL);
  if (!obj || libbpf_get_error(obj) || bpf_object__load(obj)) {
    fprintf(stderr, "slices: cannot load %s\n", argv[3]);
    return 1;
  }
  struct bpf_program *p;
  bpf_object__for_each_program(p, obj) if (nfloor < MAXP) floor_p[nfloor++] = p;

  printf("ready ours=");
  for (int i = 0; i < nours; i++)
    printf("%s%s:%u", i ? "," : "", ours[i].name, ours[i].id);
  printf(" floor=%d\n", nfloor);
  fflush(stdout);

  start_traffic(tcp);
  struct timespec warm = {1, 0};
  nanosleep(&warm, NULL);
  int idx = 0;
  for (int i = 0; i < nslices; i++) {
    int first = i % 2 ? 2 : 1;
    slice(idx++, 0, ms);
    slice(idx++, first, ms);
    slice(idx++, 0, ms);
    slice(idx++, 3 - first, ms);
  }
  slice(idx++, 0, ms);
  /* The plugin's shutdown would destroy links it no longer has: skip it. */
  fflush(stdout);
  _exit(0);
}
