/* Loads each program of a BPF object on its own and prints the verifier's
 * verdict, for the VM matrix's failure reports (tests/vm/guest-check):
 *
 *   bpfverify OBJ [TAIL]
 *
 * One line per program, "VERIFY <prog> <section> ok" or
 * "VERIFY <prog> <section> FAIL errno <n>: <last line of the verifier log>",
 * then, for the first program that failed, the last TAIL (default 30)
 * lines of its verifier log, each prefixed "  ". The plugin's own log
 * keeps only the start of libbpf's messages; this gets the verdict.
 *
 *   bpfverify --missed
 *
 * For every loaded program, "MISSED <prog name> <n>": the runs the kernel
 * skipped for it, its recursion_misses (a program that would have run
 * inside another on the same CPU; counted for kprobes from 6.7) plus, for
 * a kprobe/kretprobe link, the probe's own missed count (a kprobe hit
 * while another kprobe handler ran on that CPU; in the link's info from
 * 6.7, 0 before). The VM matrix's concurrency case uses it to tell events
 * the kernel never showed the programs from events they lost. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int quiet(enum libbpf_print_level l, const char *f, va_list ap) {
  return 0;
}

static char logbuf[4 << 20];

/* The last non-empty lines of logbuf, skipping precision-tracking noise. */
static void print_tail(int tail, int only_last) {
  char *lines[4096];
  int n = 0;
  for (char *s = strtok(logbuf, "\n"); s && n < 4096; s = strtok(NULL, "\n")) {
    if (!*s || !strncmp(s, "regs=", 5) || !strncmp(s, "parent didn't", 13) ||
        !strncmp(s, "last_idx", 8))
      continue;
    if (!strncmp(s, "verification time", 17) || !strncmp(s, "stack depth", 11) ||
        !strncmp(s, "processed ", 10))
      continue;
    lines[n++] = s;
  }
  if (only_last) {
    printf("%s\n", n ? lines[n - 1] : "(empty verifier log)");
    return;
  }
  for (int i = n > tail ? n - tail : 0; i < n; i++)
    printf("  %s\n", lines[i]);
}

/* The perf_event part of struct bpf_link_info from 6.7's uapi (this
 * build's headers are older): for a kprobe link, `missed` is at byte 48. */
struct link_info_kprobe {
  __u32 type, id, prog_id, pad0;
  __u32 perf_type, pad1;
  __u64 func_name;
  __u32 name_len, offset;
  __u64 addr, missed, cookie;
  __u8 rest[64];
};

static int missed(void) {
  /* prog id -> kprobe missed, from the links */
  static struct { __u32 prog; __u64 missed; } lk[4096];
  int nlk = 0;
  for (__u32 id = 0; !bpf_link_get_next_id(id, &id);) {
    int fd = bpf_link_get_fd_by_id(id);
    if (fd < 0)
      continue;
    struct link_info_kprobe li;
    memset(&li, 0, sizeof(li));
    __u32 len = sizeof(li);
    if (!bpf_obj_get_info_by_fd(fd, &li, &len) && nlk < 4096 &&
        li.type == 7 /* BPF_LINK_TYPE_PERF_EVENT */ &&
        (li.perf_type == 3 || li.perf_type == 4) /* (ret)kprobe */) {
      lk[nlk].prog = li.prog_id;
      lk[nlk++].missed = li.missed;
    }
    close(fd);
  }
  for (__u32 id = 0; !bpf_prog_get_next_id(id, &id);) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0)
      continue;
    struct bpf_prog_info pi;
    memset(&pi, 0, sizeof(pi));
    __u32 len = sizeof(pi);
    if (!bpf_obj_get_info_by_fd(fd, &pi, &len)) {
      __u64 m = pi.recursion_misses;
      for (int i = 0; i < nlk; i++)
        if (lk[i].prog == id)
          m += lk[i].missed;
      printf("MISSED %s %llu\n", pi.name[0] ? pi.name : "-",
             (unsigned long long)m);
    }
    close(fd);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--missed"))
    return missed();
  if (argc < 2) {
    fprintf(stderr, "usage: bpfverify OBJ [TAIL]\n");
    return 2;
  }
  int tail = argc > 2 ? atoi(argv[2]) : 30;
  libbpf_set_print(quiet);

  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj) {
    printf("VERIFY - - FAIL cannot open %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  int nprogs = 0;
  struct bpf_program *p;
  bpf_object__for_each_program(p, obj) nprogs++;
  bpf_object__close(obj);

  int failed = 0, shown = 0;
  for (int i = 0; i < nprogs; i++) {
    obj = bpf_object__open_file(argv[1], NULL);
    if (!obj)
      return 1;
    struct bpf_program *want = NULL;
    int k = 0;
    bpf_object__for_each_program(p, obj) {
      bpf_program__set_autoload(p, k == i);
      if (k++ == i)
        want = p;
    }
    logbuf[0] = 0;
    bpf_program__set_log_buf(want, logbuf, sizeof(logbuf));
    bpf_program__set_log_level(want, 1);
    int err = bpf_object__load(obj);
    printf("VERIFY %s %s ", bpf_program__name(want),
           bpf_program__section_name(want));
    if (!err) {
      printf("ok\n");
    } else {
      failed++;
      printf("FAIL errno %d: ", -err);
      if (!shown) {
        static char copy[sizeof(logbuf)];
        memcpy(copy, logbuf, sizeof(logbuf));
        print_tail(tail, 1);
        memcpy(logbuf, copy, sizeof(logbuf));
        print_tail(tail, 0);
        shown = 1;
      } else {
        print_tail(tail, 1);
      }
    }
    bpf_object__close(obj);
  }
  return failed ? 1 : 0;
}
