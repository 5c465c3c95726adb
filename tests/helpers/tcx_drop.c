// SPDX-License-Identifier: GPL-2.0-only
/* Test helper of test_drops: attaches tc_drop_udp of xdp_drop.bpf.o to a
 * device's tcx ingress (6.6+; a BPF link, no tc module), or another of its
 * programs to its ingress or egress, prints "ready", holds the link until
 * its standard input closes, then prints how many packets the program
 * dropped.
 *   tcx_drop OBJECT NETNS-NAME DEVICE [PROGRAM [ingress|egress]] */
#define _GNU_SOURCE 1
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TCX_INGRESS 46 /* enum bpf_attach_type BPF_TCX_INGRESS (6.6) */
#define TCX_EGRESS 47

int main(int argc, char **argv) {
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: %s OBJECT NETNS DEVICE [PROGRAM [ingress|egress]]\n",
            argv[0]);
    return 2;
  }
  char path[256];
  snprintf(path, sizeof(path), "/run/netns/%s", argv[2]);
  int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "%s: %s\n", path, strerror(errno));
    return 1;
  }
  unsigned ifindex = if_nametoindex(argv[3]);
  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj) {
    fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  const char *name = argc > 4 ? argv[4] : "tc_drop_udp";
  int where = argc > 5 && !strcmp(argv[5], "egress") ? TCX_EGRESS : TCX_INGRESS;
  struct bpf_program *p, *tc = bpf_object__find_program_by_name(obj, name);
  bpf_object__for_each_program(p, obj) bpf_program__set_autoload(p, p == tc);
  if (!tc || !ifindex || bpf_object__load(obj) != 0) {
    fprintf(stderr, "cannot load %s for %s\n", name, argv[3]);
    return 1;
  }
  int link = bpf_link_create(bpf_program__fd(tc), (int)ifindex, where, NULL);
  if (link < 0) {
    fprintf(stderr, "tcx of %s: %s\n", argv[3], strerror(errno));
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof(buf)) > 0)
    ;
  close(link);
  struct bpf_map *bss = bpf_object__find_map_by_name(obj, ".bss");
  unsigned long long v[2] = {0, 0}; /* dropped, tc_dropped */
  unsigned zero = 0;
  if (!bss || bpf_map_lookup_elem(bpf_map__fd(bss), &zero, v) != 0) {
    fprintf(stderr, "cannot read the program's count\n");
    return 1;
  }
  printf("%llu\n", v[1]);
  return 0;
}
