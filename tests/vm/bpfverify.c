/* Loads each program of a BPF object on its own and prints the verifier's
 * verdict, for the VM matrix's failure reports (tests/vm/guest-check):
 *
 *   bpfverify OBJ [TAIL]
 *
 * One line per program, "VERIFY <prog> <section> ok" or
 * "VERIFY <prog> <section> FAIL errno <n>: <last line of the verifier log>",
 * then, for the first program that failed, the last TAIL (default 30)
 * lines of its verifier log, each prefixed "  ". The plugin's own log
 * keeps only the start of libbpf's messages; this gets the verdict. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv) {
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
