/* bench/bpfload OBJ [reverse | only=NAME]: load every program of a BPF
 * object, attach each (in object order, or the reverse: programs on one hook
 * run in attach order, and the first one pays for cold caches), or only
 * program NAME, print
 * "ready <ms> name=id ..." (load + verify + attach time in ms) on stdout and
 * hold them until SIGTERM, SIGINT or end of stdin. The floor arm of
 * `make bench` runs bench/empty.bpf.c with it. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_sig(int s) { (void)s; stop = 1; }

static int quiet(enum libbpf_print_level l, const char *f, va_list ap) {
  return l == LIBBPF_WARN ? vfprintf(stderr, f, ap) : 0;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s OBJ [reverse | only=NAME]\n", argv[0]);
    return 2;
  }
  libbpf_set_print(quiet);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj || libbpf_get_error(obj)) {
    fprintf(stderr, "bpfload: cannot open %s\n", argv[1]);
    return 1;
  }
  if (bpf_object__load(obj)) {
    fprintf(stderr, "bpfload: cannot load %s\n", argv[1]);
    return 1;
  }
  struct bpf_program *p, *all[64];
  int n = 0;
  bpf_object__for_each_program(p, obj) if (n < 64) all[n++] = p;
  bool rev = argc == 3 && !strcmp(argv[2], "reverse");
  const char *only = argc == 3 && !strncmp(argv[2], "only=", 5) ? argv[2] + 5 : NULL;
  for (int i = 0; i < n; i++) {
    p = all[rev ? n - 1 - i : i];
    if (only && strcmp(bpf_program__name(p), only))
      continue;
    struct bpf_link *l = bpf_program__attach(p);
    if (!l || libbpf_get_error(l)) {
      fprintf(stderr, "bpfload: cannot attach %s\n", bpf_program__name(p));
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("ready %.3f", (t1.tv_sec - t0.tv_sec) * 1e3 +
                           (t1.tv_nsec - t0.tv_nsec) / 1e6);
  bpf_object__for_each_program(p, obj) {
    if (only && strcmp(bpf_program__name(p), only))
      continue;
    struct bpf_prog_info info;
    __u32 len = sizeof(info);
    memset(&info, 0, sizeof(info));
    bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len);
    printf(" %s=%u", bpf_program__name(p), info.id);
  }
  printf("\n");
  fflush(stdout);
  signal(SIGTERM, on_sig);
  signal(SIGINT, on_sig);
  struct pollfd pfd = {.fd = 0, .events = POLLIN};
  char buf[64];
  while (!stop) {
    if (poll(&pfd, 1, 500) > 0 && read(0, buf, sizeof(buf)) <= 0)
      break;
  }
  bpf_object__close(obj);
  return 0;
}
