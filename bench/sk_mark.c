/* bench/sk_mark OBJ [forward|reverse] [BASE [MARK]]: the per-event price of marking
 * sockets on the enqueue path (bench/sk_mark.bpf.c), for
 * bench/socketscan --marked. Loads the object's program MARK (mark, the
 * default, or mark_slot) and BASE (mark_empty, the default, or mark_read),
 * attaches both on sk_data_ready
 * (mark first, or with reverse BASE first: the first program on a
 * tracepoint pays the cold lines), says "ready", then answers one line per
 * command on stdin:
 *   stats   "mark_runs=R mark_ns=T base_runs=R base_ns=T" (the kernel's
 *           run statistics: kernel.bpf_stats_enabled must be 1)
 * and exits at the end of stdin. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int quiet(enum libbpf_print_level l, const char *f, va_list ap) {
  return l == LIBBPF_WARN ? vfprintf(stderr, f, ap) : 0;
}

static void prog_stats(struct bpf_program *p, uint64_t *runs, uint64_t *ns) {
  struct bpf_prog_info info = {0};
  uint32_t len = sizeof(info);
  *runs = *ns = 0;
  if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0) {
    *runs = info.run_cnt;
    *ns = info.run_time_ns;
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 5) {
    fprintf(stderr, "usage: %s OBJ [forward|reverse] [BASE [MARK]]\n",
            argv[0]);
    return 2;
  }
  const char *base_name = argc >= 4 ? argv[3] : "mark_empty";
  const char *mark_name = argc == 5 ? argv[4] : "mark";
  int rev = argc >= 3 && strcmp(argv[2], "reverse") == 0;
  libbpf_set_print(quiet);
  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj || libbpf_get_error(obj)) {
    fprintf(stderr, "sk_mark: cannot open %s\n", argv[1]);
    return 1;
  }
  struct bpf_program *mark = bpf_object__find_program_by_name(obj, mark_name);
  struct bpf_program *base = bpf_object__find_program_by_name(obj, base_name);
  struct bpf_program *p;
  if (!mark || !base || base == mark) {
    fprintf(stderr, "sk_mark: no program %s or %s\n", mark_name, base_name);
    return 2;
  }
  bpf_object__for_each_program(p, obj) {
    if (p != mark && p != base)
      bpf_program__set_autoload(p, false);
  }
  if (bpf_object__load(obj)) {
    fprintf(stderr, "sk_mark: cannot load %s\n", argv[1]);
    return 1;
  }
  struct bpf_link *first = bpf_program__attach(rev ? base : mark);
  struct bpf_link *second = bpf_program__attach(rev ? mark : base);
  if (!first || !second) {
    fprintf(stderr, "sk_mark: cannot attach: %s\n", strerror(errno));
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  char line[128];
  while (fgets(line, sizeof(line), stdin)) {
    if (strncmp(line, "stats", 5) == 0) {
      uint64_t mr, mn, br, bn;
      prog_stats(mark, &mr, &mn);
      prog_stats(base, &br, &bn);
      printf("mark_runs=%llu mark_ns=%llu base_runs=%llu base_ns=%llu\n",
             (unsigned long long)mr, (unsigned long long)mn,
             (unsigned long long)br, (unsigned long long)bn);
    } else {
      printf("error unknown command\n");
    }
    fflush(stdout);
  }
  bpf_link__destroy(second);
  bpf_link__destroy(first);
  bpf_object__close(obj);
  return 0;
}
