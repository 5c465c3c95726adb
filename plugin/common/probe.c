// SPDX-License-Identifier: GPL-2.0-only
/* The attach flavours: their names, the sections that make them, and
 * whether each loads and attaches on this kernel; see probe.h. */
#include "common/probe.h"
#include "common/libbpf_log.h"
#include "common/loader.h"

#include "probe.skel.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *flavour_name(enum flavour f) {
  switch (f) {
  case FLAVOUR_FENTRY:
    return "fentry";
  case FLAVOUR_TP:
    return "tracepoint";
  case FLAVOUR_KPROBE:
    return "kprobe";
  default:
    return "?";
  }
}

int flavour_code(int flavour) {
  switch (flavour) {
  case FLAVOUR_FENTRY:
    return 1;
  case FLAVOUR_TP:
    return 2;
  case FLAVOUR_KPROBE:
    return 3;
  default:
    return 0;
  }
}

/* ------------------------------------------------------- section parsing */

int section_flavour(const char *sec, const char **target, bool *ret) {
  static const struct {
    const char *prefix;
    enum flavour f;
    bool ret;
  } map[] = {
      {"fentry/", FLAVOUR_FENTRY, false},
      {"fexit/", FLAVOUR_FENTRY, true},
      {"tp_btf/", FLAVOUR_TP, false},
      {"raw_tp/", FLAVOUR_TP, false},
      {"raw_tracepoint/", FLAVOUR_TP, false},
      {"kprobe/", FLAVOUR_KPROBE, false},
      {"kretprobe/", FLAVOUR_KPROBE, true},
  };
  if (!sec)
    return -1;
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
    size_t n = strlen(map[i].prefix);
    if (strncmp(sec, map[i].prefix, n) == 0 && sec[n]) {
      if (target)
        *target = sec + n;
      if (ret)
        *ret = map[i].ret;
      return (int)map[i].f;
    }
  }
  return -1;
}

/* ---------------------------------------------------------------- probes */

/* One probe result per (section kind, target), for the lifetime of one
 * loader_run() call: hooks share targets. */
struct probe_result {
  char sec[96];
  int err; /* 0: loads and attaches */
  char why[128];
};
static struct probe_result *probes;
static size_t nprobes;
static struct btf *vmlinux_btf;
static bool vmlinux_btf_tried;

static const struct btf *kernel_btf(void) {
  if (!vmlinux_btf_tried) {
    vmlinux_btf_tried = true;
    vmlinux_btf = btf__load_vmlinux_btf();
    if (!vmlinux_btf)
      vmlinux_btf = NULL;
  }
  return vmlinux_btf;
}

void loader_probes_reset(void) {
  free(probes);
  probes = NULL;
  nprobes = 0;
}

const struct btf *loader_kernel_btf(void) { return kernel_btf(); }

void loader_btf_release(void) {
  btf__free(vmlinux_btf);
  vmlinux_btf = NULL;
  vmlinux_btf_tried = false;
}


/* Cheap, precise reasons first: is the target in the kernel's BTF? */
static int probe_btf(int f, const char *target, char *why, size_t whylen) {
  const struct btf *btf = kernel_btf();
  if (!btf) {
    snprintf(why, whylen, "kernel BTF not available");
    return -ENOENT;
  }
  char name[128];
  int kind = BTF_KIND_FUNC;
  if (f == FLAVOUR_TP) {
    snprintf(name, sizeof(name), "btf_trace_%s", target);
    kind = BTF_KIND_TYPEDEF;
  } else {
    snprintf(name, sizeof(name), "%s", target);
  }
  if (btf__find_by_name_kind(btf, name, kind) < 0) {
    snprintf(why, whylen, "the kernel has no %s %s", f == FLAVOUR_TP ?
             "tracepoint" : "BTF function", target);
    return -ENOENT;
  }
  return 0;
}

/* The probe object's program of the section's kind, the only one of the
 * object that loads. */
static struct bpf_program *probe_prog(struct probe_bpf *skel, int f, bool ret,
                                      bool raw) {
  struct bpf_program *progs[] = {skel->progs.probe_fentry,
                                 skel->progs.probe_fexit,
                                 skel->progs.probe_tp_btf,
                                 skel->progs.probe_raw_tp,
                                 skel->progs.probe_kprobe};
  struct bpf_program *use;
  if (f == FLAVOUR_FENTRY)
    use = ret ? skel->progs.probe_fexit : skel->progs.probe_fentry;
  else if (f == FLAVOUR_TP)
    use = raw ? skel->progs.probe_raw_tp : skel->progs.probe_tp_btf;
  else
    use = skel->progs.probe_kprobe;
  for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
    bpf_program__set_autoload(progs[i], progs[i] == use);
  return use;
}

static struct bpf_link *probe_link(struct bpf_program *use, int f, bool ret,
                                   bool raw, const char *target) {
  if (f == FLAVOUR_KPROBE)
    return bpf_program__attach_kprobe(use, ret, target);
  else if (raw)
    return bpf_program__attach_raw_tracepoint(use, target);
  else
    return bpf_program__attach_trace(use);
}

/* fentry, fexit and tp_btf: an empty tracing program loaded with the bpf
 * syscall itself, pointed at the target's id in the kernel's BTF that
 * probe_btf() parsed. Through libbpf, every probe's object load parsed the
 * kernel's BTF once more (about 60 ms each here, seconds per collectd start
 * under emulation, for a dozen probes). */
static int probe_typed(int f, bool ret, const char *target, char *why,
                       size_t whylen) {
  char name[128];
  if (f == FLAVOUR_TP)
    snprintf(name, sizeof(name), "btf_trace_%s", target);
  else
    snprintf(name, sizeof(name), "%s", target);
  int id = btf__find_by_name_kind(kernel_btf(), name,
                                  f == FLAVOUR_TP ? BTF_KIND_TYPEDEF
                                                  : BTF_KIND_FUNC);
  const struct bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, o, .attach_btf_id = (__u32)id,
              .expected_attach_type = f == FLAVOUR_TP ? BPF_TRACE_RAW_TP
                                      : ret           ? BPF_TRACE_FEXIT
                                                      : BPF_TRACE_FENTRY);
  int fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "probe", "GPL", insns, 2, &o);
  if (fd < 0) {
    snprintf(why, whylen, "%s program does not load: %s",
             f == FLAVOUR_TP ? "tp_btf" : ret ? "fexit" : "fentry",
             ERRSTR(fd));
    return fd;
  }
  int lfd = bpf_raw_tracepoint_open(NULL, fd);
  int err = lfd < 0 ? lfd : 0;
  if (lfd < 0)
    snprintf(why, whylen, "cannot attach to %s: %s%s", target, ERRSTR(lfd),
             f == FLAVOUR_FENTRY && lfd == -524
                 ? " (ENOTSUPP: this kernel cannot attach fentry/fexit to "
                   "kernel functions; arm64 before 6.4 cannot)"
                 : "");
  else
    close(lfd);
  close(fd);
  return err;
}

static int probe_attach(const char *sec, char *why, size_t whylen) {
  const char *target = NULL;
  bool ret = false;
  int f = section_flavour(sec, &target, &ret);
  bool raw = strncmp(sec, "raw_tp", 6) == 0;
  bool typed = f == FLAVOUR_FENTRY || (f == FLAVOUR_TP && !raw);

  if (typed) {
    int err = probe_btf(f, target, why, whylen);
    if (err)
      return err;
    return probe_typed(f, ret, target, why, whylen);
  }

  struct probe_bpf *skel = probe_bpf__open();
  if (!skel) {
    int err = -errno;
    snprintf(why, whylen, "cannot open probe object: %s", ERRSTR(err));
    return err;
  }
  struct bpf_program *use = probe_prog(skel, f, ret, raw);

  int err = 0;
  if (typed)
    err = bpf_program__set_attach_target(use, 0, target);
  if (!err)
    err = probe_bpf__load(skel);
  if (err) {
    err = err < 0 ? err : -errno;
    snprintf(why, whylen, "%s program does not load: %s",
             f == FLAVOUR_FENTRY ? (ret ? "fexit" : "fentry")
             : f == FLAVOUR_TP   ? (raw ? "raw_tp" : "tp_btf")
                                 : "kprobe",
             ERRSTR(err));
    probe_bpf__destroy(skel);
    return err;
  }
  struct bpf_link *link = probe_link(use, f, ret, raw, target);
  if (!link) {
    err = -errno;
    /* 524 is the kernel's ENOTSUPP: arm64 kernels before 6.4 have no
     * ftrace direct calls (DYNAMIC_FTRACE_WITH_DIRECT_CALLS came to arm64
     * in 6.4), so a BPF trampoline cannot attach to a kernel function:
     * measured on Debian's 6.1 arm64 kernel (docs/vm-matrix.md). */
    snprintf(why, whylen, "cannot attach to %s: %s%s", target, ERRSTR(err),
             f == FLAVOUR_KPROBE && err == -ENOENT
                 ? " (kernel without CONFIG_KPROBES, or no such symbol)"
             : f == FLAVOUR_FENTRY && err == -524
                 ? " (ENOTSUPP: this kernel cannot attach fentry/fexit to "
                   "kernel functions; arm64 before 6.4 cannot)"
                 : "");
  }
  bpf_link__destroy(link);
  probe_bpf__destroy(skel);
  return err;
}

int loader_probe(const char *sec, const char **why) {
  for (size_t i = 0; i < nprobes; i++)
    if (strcmp(probes[i].sec, sec) == 0) {
      *why = probes[i].why;
      return probes[i].err;
    }
  struct probe_result *p = realloc(probes, (nprobes + 1) * sizeof(*p));
  if (!p) {
    *why = "out of memory";
    return -ENOMEM;
  }
  probes = p;
  p = &probes[nprobes++];
  snprintf(p->sec, sizeof(p->sec), "%s", sec);
  p->why[0] = 0;
  loader_log_quiet(true);
  p->err = probe_attach(sec, p->why, sizeof(p->why));
  loader_log_quiet(false);
  *why = p->why;
  return p->err;
}
