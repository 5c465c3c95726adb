/* Drives plugin/common/loader.c with a real BPF object (bpf/common/selftest.bpf.c) on the
 * running kernel. Usage:
 *   loader_check auto|fentry|tracepoint|kprobe N [shared|rejected]
 * With "shared", a third hook, "shared", has openat's tracepoint program as
 * its only flavour (one program serving two hooks, as netstacklat's
 * sk_data_ready program does); links= then tells how many links there are.
 * With "rejected", the third hook, "rejected", has a tracepoint program the
 * verifier refuses.
 * Prints, as key=value lines: the flavour chosen for each hook, the calls
 * the BPF program counted for N openat() calls of ours, and the plugin's
 * log lines; tests/integration/test_loader judges them. */
#include "common/loader.h"
#include "mock_collectd.h"
#include "selftest.skel.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct selftest_bpf *skel;

static struct bpf_object *st_open(void *ctx, void **skel_out) {
  skel = selftest_bpf__open();
  if (!skel)
    return NULL;
  *skel_out = skel;
  skel->rodata->targ_tgid = (__u32)getpid();
  return skel->obj;
}
static int st_load(void *ctx) { return selftest_bpf__load(skel); }
static void st_destroy(void *ctx) {
  selftest_bpf__destroy(skel);
  skel = NULL;
}

static const struct hook_def hooks_def[] = {
    {"openat",
     {HOOK_PROG(selftest_bpf, openat_fentry), HOOK_PROG(selftest_bpf, openat_tp),
      HOOK_PROG(selftest_bpf, openat_kprobe)}},
    {"missing",
     {HOOK_PROG(selftest_bpf, missing_fentry),
      HOOK_PROG(selftest_bpf, missing_kprobe)}},
    {"shared", {HOOK_PROG(selftest_bpf, openat_tp)}},
    {"rejected", {HOOK_PROG(selftest_bpf, rejected_tp)}},
};

int main(int argc, char **argv) {
  bool rejected = argc == 4 && strcmp(argv[3], "rejected") == 0;
  if (argc != 3 &&
      !(argc == 4 && (strcmp(argv[3], "shared") == 0 || rejected))) {
    fprintf(stderr,
            "usage: %s auto|fentry|tracepoint|kprobe N [shared|rejected]\n",
            argv[0]);
    return 2;
  }
  static const char *const modes[] = {"auto", "fentry", "tracepoint",
                                      "kprobe"};
  for (int i = 0; i < 4; i++)
    if (strcmp(argv[1], modes[i]) == 0)
      ebpf_global.attach_mode = (enum attach_mode)i;
  int n = atoi(argv[2]);

  loader_log_install();
  int nh = argc == 4 ? 3 : 2;
  struct hook_state hooks[3] = {{.def = &hooks_def[0], .wanted = true},
                                {.def = &hooks_def[1], .wanted = true},
                                {.def = &hooks_def[rejected ? 3 : 2],
                                 .wanted = true}};
  struct loader_ops ops = {NULL, st_open, st_load, st_destroy};
  int attached = loader_run("selftest", &ops, hooks, (size_t)nh);
  printf("attached=%d\n", attached);
  int links = 0;
  for (int i = 0; i < nh; i++)
    links += hooks[i].nlinks;
  printf("links=%d\n", links);
  for (int i = 0; i < nh; i++)
    printf("hook.%s=%s\n", hooks[i].def->name,
           hooks[i].flavour >= 0 ? flavour_name(hooks[i].flavour) : "none");

  if (skel) {
    for (int i = 0; i < n; i++) {
      int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY);
      if (fd >= 0)
        close(fd);
    }
    printf("counted=%llu\n", (unsigned long long)skel->bss->openat_calls);
  }
  loader_detach(hooks, (size_t)nh);
  if (skel)
    st_destroy(NULL);
  loader_log_restore();

  for (int i = 0; i < mock_nlog; i++)
    printf("log.%d=%s\n", mock_log_sev[i], mock_log[i]);
  return 0;
}
