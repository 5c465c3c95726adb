// SPDX-License-Identifier: GPL-2.0-only
/* Run-time choice of attach flavour per hook; see loader.h. */
#include "common/loader.h"

#include "probe.skel.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* ------------------------------------------------------------ libbpf log */

static libbpf_print_fn_t prev_print;
static bool log_installed;
static int log_quiet;          /* > 0 while probing: libbpf noise is DEBUG */
static char log_blame[64];     /* last program libbpf failed to load */
/* The verifier's last words for it (the end of its log): the reason a
 * flavour was refused carries them into the hook's WARNING. */
static char log_verdict[200];

/* The verifier's verdict in its log (msg): the last `lines` lines before
 * its statistics ("processed N insns ...", "verification time ...", the
 * "-- END PROG LOAD LOG --" marker), joined with " | ", into out. */
static bool verdict_noise(const char *l, size_t n) {
  static const char *const noise[] = {"--", "processed ", "verification time",
                                      "stack depth", "mark_read"};
  for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++)
    if (n >= strlen(noise[i]) && strncmp(l, noise[i], strlen(noise[i])) == 0)
      return true;
  return n == 0;
}

static void last_lines(const char *msg, int lines, char *out, size_t outlen) {
  const char *starts[8];
  size_t lens[8];
  int n = 0;
  const char *end = msg + strlen(msg);
  if (lines > 8)
    lines = 8;
  while (end > msg && n < lines) {
    const char *e = end;
    const char *b = e;
    while (b > msg && b[-1] != '\n')
      b--;
    end = b > msg ? b - 1 : msg;
    if (!verdict_noise(b, (size_t)(e - b))) {
      starts[n] = b;
      lens[n++] = (size_t)(e - b);
    }
  }
  size_t o = 0;
  out[0] = 0;
  for (int i = n - 1; i >= 0 && o < outlen; i--) {
    int w = snprintf(out + o, outlen - o, "%s%.*s", o ? " | " : "",
                     (int)lens[i], starts[i]);
    o = w < 0 ? outlen : o + (size_t)w;
  }
  if (o >= outlen && outlen > 4)
    memcpy(out + outlen - 4, "...", 4);
}

/* Logs the last lines of a long message (a verifier log ends with the
 * reason), one collectd line each. */
static void log_tail(int sev, char *msg, int lines) {
  char *p = msg + strlen(msg);
  int n = 0;
  while (p > msg && n <= lines)
    if (*--p == '\n')
      n++;
  if (p > msg)
    p++;
  for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n"))
    plugin_log(sev, LOG_PREFIX "libbpf: | %s", line);
}

static int libbpf_to_collectd(enum libbpf_print_level level, const char *fmt,
                              va_list ap) {
  /* Called at init only, from one thread: a static buffer is fine and
   * holds a whole verifier log. */
  static char msg[1 << 16];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  size_t n = strlen(msg);
  while (n && msg[n - 1] == '\n')
    msg[--n] = 0;
  if (n == 0)
    return 0;

  /* "libbpf: prog 'NAME': failed to load: -13" names the culprit. */
  const char *p = strstr(msg, "prog '");
  if (p && strstr(msg, "failed to load")) {
    p += 6;
    const char *e = strchr(p, '\'');
    if (e && (size_t)(e - p) < sizeof(log_blame)) {
      memcpy(log_blame, p, (size_t)(e - p));
      log_blame[e - p] = 0;
    }
  }

  int sev = LOG_DEBUG;
  if (!log_quiet) {
    if (level == LIBBPF_WARN)
      sev = LOG_WARNING;
    else if (level == LIBBPF_INFO)
      sev = LOG_INFO;
  }
  char *nl = strchr(msg, '\n');
  if (nl) { /* a verifier log: the first line and the reason at the end */
    last_lines(nl + 1, 2, log_verdict, sizeof(log_verdict));
    *nl = 0;
    plugin_log(sev, LOG_PREFIX "%s%s", strncmp(msg, "libbpf: ", 8) ? "libbpf: " : "", msg);
    log_tail(sev, nl + 1, 6);
    return (int)n;
  }
  plugin_log(sev, LOG_PREFIX "%s%s",
             strncmp(msg, "libbpf: ", 8) == 0 ? "" : "libbpf: ", msg);
  return (int)n;
}

void loader_log_install(void) {
  if (log_installed)
    return;
  prev_print = libbpf_set_print(libbpf_to_collectd);
  log_installed = true;
}

void loader_log_restore(void) {
  if (!log_installed)
    return;
  libbpf_set_print(prev_print);
  log_installed = false;
}

int loader_quiet_load(int (*load)(void *obj), void *obj, char *verdict,
                      size_t len) {
  log_verdict[0] = 0;
  log_quiet++;
  int err = load(obj);
  log_quiet--;
  snprintf(verdict, len, "%s", err ? log_verdict : "");
  log_verdict[0] = 0;
  return err;
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

static void probes_reset(void) {
  free(probes);
  probes = NULL;
  nprobes = 0;
  btf__free(vmlinux_btf);
  vmlinux_btf = NULL;
  vmlinux_btf_tried = false;
}

static int probe_attach(const char *sec, char *why, size_t whylen) {
  const char *target = NULL;
  bool ret = false;
  int f = section_flavour(sec, &target, &ret);
  bool raw = strncmp(sec, "raw_tp", 6) == 0;

  /* Cheap, precise reasons first: is the target in the kernel's BTF? */
  if (f == FLAVOUR_FENTRY || (f == FLAVOUR_TP && !raw)) {
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
  }

  struct probe_bpf *skel = probe_bpf__open();
  if (!skel) {
    int err = -errno;
    snprintf(why, whylen, "cannot open probe object: %s", ERRSTR(err));
    return err;
  }
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

  int err = 0;
  if (f == FLAVOUR_FENTRY || (f == FLAVOUR_TP && !raw))
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
  struct bpf_link *link;
  if (f == FLAVOUR_KPROBE)
    link = bpf_program__attach_kprobe(use, ret, target);
  else if (raw)
    link = bpf_program__attach_raw_tracepoint(use, target);
  else
    link = bpf_program__attach_trace(use);
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

static int probe_cached(const char *sec, const char **why) {
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
  log_quiet++;
  p->err = probe_attach(sec, p->why, sizeof(p->why));
  log_quiet--;
  *why = p->why;
  return p->err;
}

/* ------------------------------------------------------------ selection */

/* The skeleton opened by this round of loader_run(). */
static void *cur_skel;

static struct bpf_program *prog_of(const struct hook_prog *hp) {
  return *(struct bpf_program **)((char *)cur_skel + hp->skel_off);
}

static int prog_flavour(struct bpf_program *p) {
  return section_flavour(bpf_program__section_name(p), NULL, NULL);
}

static bool mode_allows(enum flavour f) {
  switch (ebpf_global.attach_mode) {
  case ATTACH_AUTO:
    return true;
  case ATTACH_FENTRY:
    return f == FLAVOUR_FENTRY;
  case ATTACH_TRACEPOINT:
    return f == FLAVOUR_TP;
  case ATTACH_KPROBE:
    return f == FLAVOUR_KPROBE;
  }
  return false;
}

/* Choose a flavour for one hook and set autoload on its programs. */
static void choose(struct hook_state *h) {
  const struct hook_def *d = h->def;
  h->flavour = -1;
  for (int f = 0; f < FLAVOUR_COUNT && h->wanted; f++) {
    if (h->failed[f])
      continue;
    if (!mode_allows((enum flavour)f)) {
      h->failed[f] = true;
      snprintf(h->why[f], sizeof(h->why[f]), "not tried (AttachMode)");
      continue;
    }
    int have = 0, ok = 0;
    for (int i = 0; i < HOOK_MAX_PROGS && d->progs[i].skel_off; i++) {
      struct bpf_program *p = prog_of(&d->progs[i]);
      if (!p || prog_flavour(p) != f)
        continue;
      have++;
      const char *why = NULL;
      int err = probe_cached(bpf_program__section_name(p), &why);
      if (err && !d->progs[i].optional) {
        h->failed[f] = true;
        snprintf(h->why[f], sizeof(h->why[f]), "%s (errno %d)", why, -err);
        break;
      }
      if (!err)
        ok++;
    }
    if (!have && !h->failed[f]) {
      h->failed[f] = true;
      snprintf(h->why[f], sizeof(h->why[f]), "this hook has no such flavour");
    }
    if (!h->failed[f] && ok == 0) {
      h->failed[f] = true;
      snprintf(h->why[f], sizeof(h->why[f]), "none of its targets exist");
    }
    if (!h->failed[f]) {
      h->flavour = f;
      break;
    }
  }
  /* Autoload the chosen flavour's programs that can attach. Only ever
   * switched on here: a program two hooks share is loaded when either
   * chose its flavour (loader_run() switched every one off first). */
  for (int i = 0; i < HOOK_MAX_PROGS && d->progs[i].skel_off; i++) {
    struct bpf_program *p = prog_of(&d->progs[i]);
    if (!p)
      continue;
    bool on = h->flavour >= 0 && prog_flavour(p) == h->flavour;
    if (on && d->progs[i].optional) {
      const char *why;
      on = probe_cached(bpf_program__section_name(p), &why) == 0;
    }
    if (on)
      bpf_program__set_autoload(p, true);
  }
}

/* Whether program p is one of hook h's and feeds it now (h chose p's
 * flavour). */
static bool hook_uses(const struct hook_state *h, struct bpf_program *p) {
  if (h->flavour < 0 || prog_flavour(p) != h->flavour)
    return false;
  for (int j = 0; j < HOOK_MAX_PROGS && h->def->progs[j].skel_off; j++)
    if (prog_of(&h->def->progs[j]) == p)
      return true;
  return false;
}

static struct bpf_program *prog_named(struct hook_state *hooks, size_t n,
                                      const char *name) {
  for (size_t i = 0; i < n; i++)
    for (int j = 0; j < HOOK_MAX_PROGS && hooks[i].def->progs[j].skel_off;
         j++) {
      struct bpf_program *p = prog_of(&hooks[i].def->progs[j]);
      if (p && strcmp(bpf_program__name(p), name) == 0)
        return p;
    }
  return NULL;
}

/* The hook arrays loader_run() handled, for loader_for_each_hook(). Init,
 * read and shutdown run one after the other, so no lock. */
#define MAX_HOOK_SETS 8
static struct hook_set {
  const char *feature;
  struct hook_state *hooks;
  size_t n;
} hook_sets[MAX_HOOK_SETS];

static void hook_set_forget(const struct hook_state *hooks) {
  for (size_t i = 0; i < MAX_HOOK_SETS; i++)
    if (hook_sets[i].hooks == hooks)
      hook_sets[i] = (struct hook_set){0};
}

static void hook_set_remember(const char *feature, struct hook_state *hooks,
                              size_t n) {
  hook_set_forget(hooks);
  for (size_t i = 0; i < MAX_HOOK_SETS; i++)
    if (!hook_sets[i].hooks) {
      hook_sets[i] = (struct hook_set){feature, hooks, n};
      return;
    }
}

void loader_for_each_hook(void (*cb)(const char *feature,
                                     const struct hook_state *h, void *arg),
                          void *arg) {
  for (size_t i = 0; i < MAX_HOOK_SETS; i++)
    for (size_t j = 0; hook_sets[i].hooks && j < hook_sets[i].n; j++)
      if (hook_sets[i].hooks[j].wanted)
        cb(hook_sets[i].feature, &hook_sets[i].hooks[j], arg);
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

void loader_unlink(struct hook_state *h) {
  for (int j = 0; j < h->nlinks; j++) {
    bpf_link__destroy(h->links[j]);
    h->links[j] = NULL;
  }
  h->nlinks = 0;
}

void loader_detach(struct hook_state *hooks, size_t nhooks) {
  hook_set_forget(hooks);
  for (size_t i = 0; i < nhooks; i++)
    loader_unlink(&hooks[i]);
}

int loader_prog_info(const struct bpf_program *p, struct bpf_prog_info *info) {
  int fd = bpf_program__fd(p);
  __u32 len = sizeof(*info);
  memset(info, 0, sizeof(*info));
  return fd >= 0 && bpf_obj_get_info_by_fd(fd, info, &len) == 0 ? 0 : -1;
}

/* Attach hooks[k]'s programs. One that an earlier hook shares and uses is
 * attached already (hooks are attached in order, and a failure ends the
 * round): attached twice, it would run twice per event. */
static int attach_hook(struct hook_state *hooks, size_t k) {
  struct hook_state *h = &hooks[k];
  const struct hook_def *d = h->def;
  for (int i = 0; i < HOOK_MAX_PROGS && d->progs[i].skel_off; i++) {
    struct bpf_program *p = prog_of(&d->progs[i]);
    if (!p || !bpf_program__autoload(p) || !hook_uses(h, p))
      continue;
    bool shared = false;
    for (size_t e = 0; e < k && !shared; e++)
      shared = hook_uses(&hooks[e], p);
    if (shared)
      continue;
    struct bpf_link *l = bpf_program__attach(p);
    if (!l) {
      int err = -errno;
      h->failed[h->flavour] = true;
      snprintf(h->why[h->flavour], sizeof(h->why[h->flavour]),
               "attaching %s failed: %s (errno %d)", bpf_program__name(p),
               ERRSTR(err), -err);
      return err;
    }
    h->links[h->nlinks++] = l;
  }
  return 0;
}

static void report(const char *feature, struct hook_state *h) {
  char why[FLAVOUR_COUNT * 420] = "";
  size_t off = 0;
  for (int f = 0; f < FLAVOUR_COUNT; f++) {
    if (!h->failed[f] || off >= sizeof(why))
      continue;
    off += (size_t)snprintf(why + off, sizeof(why) - off, "%s%s: %s",
                            off ? "; " : "", flavour_name((enum flavour)f),
                            h->why[f]);
  }
  if (!h->wanted)
    return;
  if (h->flavour >= 0)
    E_INFO("%s: hook %s attached with the %s flavour%s%s%s", feature,
           h->def->name, flavour_name((enum flavour)h->flavour),
           off ? " (" : "", why, off ? ")" : "");
  else
    E_WARNING("%s: hook %s is unavailable on this kernel: %s", feature,
              h->def->name, off ? why : "no flavour");
}

int loader_run(const char *feature, const struct loader_ops *ops,
               struct hook_state *hooks, size_t nhooks) {
  int result = 0;
  for (size_t i = 0; i < nhooks; i++) {
    memset(hooks[i].failed, 0, sizeof(hooks[i].failed));
    for (int f = 0; f < FLAVOUR_COUNT; f++)
      if (hooks[i].refuse[f]) {
        hooks[i].failed[f] = true;
        snprintf(hooks[i].why[f], sizeof(hooks[i].why[f]), "%s",
                 hooks[i].refuse[f]);
      }
    hooks[i].flavour = -1;
    hooks[i].nlinks = 0;
  }

  /* Each round strikes off at least one flavour of one hook, so this ends. */
  for (int round = 0; round <= (int)nhooks * FLAVOUR_COUNT; round++) {
    cur_skel = NULL;
    struct bpf_object *obj = ops->open(ops->ctx, &cur_skel);
    if (!obj || !cur_skel) {
      result = -errno ? -errno : -EINVAL;
      E_WARNING("%s: cannot open the BPF object: %s", feature,
                ERRSTR(result));
      goto out;
    }
    /* Every program with a hook's section starts switched off, also one
     * of a hook not passed here: only the flavours chosen below load. */
    struct bpf_program *prog;
    bpf_object__for_each_program(prog, obj) {
      if (prog_flavour(prog) >= 0)
        bpf_program__set_autoload(prog, false);
    }
    for (size_t i = 0; i < nhooks; i++)
      choose(&hooks[i]);

    log_blame[0] = 0;
    log_verdict[0] = 0;
    int err = ops->load(ops->ctx);
    if (err) {
      err = err < 0 ? err : -errno;
      /* The flavour that failed is struck off for every hook that uses
       * the program (a shared one fails them all). */
      struct bpf_program *bp =
          log_blame[0] ? prog_named(hooks, nhooks, log_blame) : NULL;
      size_t blamed = 0;
      for (size_t i = 0; bp && i < nhooks; i++) {
        struct hook_state *h = &hooks[i];
        if (!hook_uses(h, bp))
          continue;
        h->failed[h->flavour] = true;
        snprintf(h->why[h->flavour], sizeof(h->why[h->flavour]),
                 "program %s rejected by the kernel: %s (errno %d)%s%s%s",
                 log_blame, ERRSTR(err), -err,
                 log_verdict[0] ? "; the verifier's last words: \"" : "",
                 log_verdict, log_verdict[0] ? "\"" : "");
        blamed++;
      }
      if (!blamed) {
        E_WARNING("%s: loading the BPF object failed: %s%s%s%s", feature,
                  ERRSTR(err),
                  log_verdict[0] ? "; the verifier's last words: \"" : "",
                  log_verdict, log_verdict[0] ? "\"" : "");
        ops->destroy(ops->ctx);
        result = err;
        for (size_t i = 0; i < nhooks; i++)
          hooks[i].flavour = -1;
        goto out;
      }
      ops->destroy(ops->ctx);
      continue;
    }

    bool again = false;
    for (size_t i = 0; i < nhooks && !again; i++)
      if (hooks[i].flavour >= 0 && attach_hook(hooks, i) != 0)
        again = true;
    if (again) {
      loader_detach(hooks, nhooks);
      ops->destroy(ops->ctx);
      continue;
    }
    for (size_t i = 0; i < nhooks; i++) {
      report(feature, &hooks[i]);
      if (hooks[i].flavour >= 0)
        result++;
    }
    goto out;
  }
  result = -ELOOP;
  for (size_t i = 0; i < nhooks; i++)
    hooks[i].flavour = -1; /* nothing is attached */
out:
  probes_reset();
  cur_skel = NULL;
  hook_set_remember(feature, hooks, nhooks);
  return result;
}
