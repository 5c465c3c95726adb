// SPDX-License-Identifier: GPL-2.0-only
/* Run-time choice of attach flavour per hook; see loader.h. */
#include "common/loader.h"
#include "common/libbpf_log.h"
#include "common/probe.h"

#include <bpf/bpf.h>
#include <stdio.h>
#include <string.h>

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
      int err = loader_probe(bpf_program__section_name(p), &why);
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
      on = loader_probe(bpf_program__section_name(p), &why) == 0;
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
        cb(hook_sets[i].hooks[j].feature ? hook_sets[i].hooks[j].feature
                                         : hook_sets[i].feature,
           &hook_sets[i].hooks[j], arg);
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
  if (h->feature)
    feature = h->feature;
  if (h->flavour >= 0)
    E_INFO("%s: hook %s attached with the %s flavour%s%s%s", feature,
           h->def->name, flavour_name((enum flavour)h->flavour),
           off ? " (" : "", why, off ? ")" : "");
  else
    E_WARNING("%s: hook %s is unavailable on this kernel: %s", feature,
              h->def->name, off ? why : "no flavour");
}

/* Every hook starts with only the flavours its feature refused struck off,
 * nothing chosen, nothing attached. */
static void hooks_reset(struct hook_state *hooks, size_t nhooks) {
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
}

/* ops->load failed with err: strike the flavour that failed off, and
 * return true to try again, or false (*result set) when no program is to
 * blame and the feature cannot load at all. The skeleton is destroyed. */
static bool load_failed(const char *feature, const struct loader_ops *ops,
                        struct hook_state *hooks, size_t nhooks, int err,
                        int *result) {
  const char *blame = loader_log_blame();
  const char *verdict = loader_log_verdict();
  /* The flavour that failed is struck off for every hook that uses
   * the program (a shared one fails them all). */
  struct bpf_program *bp = blame[0] ? prog_named(hooks, nhooks, blame) : NULL;
  size_t blamed = 0;
  for (size_t i = 0; bp && i < nhooks; i++) {
    struct hook_state *h = &hooks[i];
    if (!hook_uses(h, bp))
      continue;
    h->failed[h->flavour] = true;
    snprintf(h->why[h->flavour], sizeof(h->why[h->flavour]),
             "program %s rejected by the kernel: %s (errno %d)%s%s%s",
             blame, ERRSTR(err), -err,
             verdict[0] ? "; the verifier's last words: \"" : "",
             verdict, verdict[0] ? "\"" : "");
    blamed++;
  }
  if (!blamed) {
    E_WARNING("%s: loading the BPF object failed: %s%s%s%s", feature,
              ERRSTR(err),
              verdict[0] ? "; the verifier's last words: \"" : "",
              verdict, verdict[0] ? "\"" : "");
    ops->destroy(ops->ctx);
    *result = err;
    for (size_t i = 0; i < nhooks; i++)
      hooks[i].flavour = -1;
    return false;
  }
  ops->destroy(ops->ctx);
  return true;
}

/* One round of loader_run(): open the object, choose each hook's flavour,
 * load, attach. Returns true when the round struck a flavour off and
 * another is due, false when the run is over (*result set). */
static bool run_round(const char *feature, const struct loader_ops *ops,
                      struct hook_state *hooks, size_t nhooks, int *result) {
  cur_skel = NULL;
  struct bpf_object *obj = ops->open(ops->ctx, &cur_skel);
  if (!obj || !cur_skel) {
    *result = -errno ? -errno : -EINVAL;
    E_WARNING("%s: cannot open the BPF object: %s", feature,
              ERRSTR(*result));
    return false;
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

  loader_log_forget();
  int err = ops->load(ops->ctx);
  if (err)
    return load_failed(feature, ops, hooks, nhooks, err < 0 ? err : -errno,
                       result);

  bool again = false;
  for (size_t i = 0; i < nhooks && !again; i++)
    if (hooks[i].flavour >= 0 && attach_hook(hooks, i) != 0)
      again = true;
  if (again) {
    loader_detach(hooks, nhooks);
    ops->destroy(ops->ctx);
    return true;
  }
  *result = 0;
  for (size_t i = 0; i < nhooks; i++) {
    report(feature, &hooks[i]);
    if (hooks[i].flavour >= 0)
      (*result)++;
  }
  return false;
}

int loader_run(const char *feature, const struct loader_ops *ops,
               struct hook_state *hooks, size_t nhooks) {
  int result = 0;
  hooks_reset(hooks, nhooks);
  bool again = true;
  /* Each round strikes off at least one flavour of one hook, so this ends. */
  for (int round = 0; again && round <= (int)nhooks * FLAVOUR_COUNT; round++)
    again = run_round(feature, ops, hooks, nhooks, &result);
  if (again) {
    result = -ELOOP;
    for (size_t i = 0; i < nhooks; i++)
      hooks[i].flavour = -1; /* nothing is attached */
  }
  loader_probes_reset();
  cur_skel = NULL;
  hook_set_remember(feature, hooks, nhooks);
  return result;
}
