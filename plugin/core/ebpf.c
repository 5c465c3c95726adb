// SPDX-License-Identifier: GPL-2.0-only
/* collectd-ebpf: the collectd side. One <Plugin ebpf> block holds global
 * settings and one block per feature; each feature runs on or is disabled
 * on its own, so one missing kernel capability never takes the others down. */
#include "core/ebpf.h"
#include "common/cgroup.h"
#include "common/loader.h"
#include "rx/rx.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>



static const struct ebpf_feature *const features[] = {
    &feature_pressure,
    &feature_netstacklat,
    &feature_tcp_window,
    &feature_drops,
};
#define NFEATURES (sizeof(features) / sizeof(features[0]))

static bool configured[NFEATURES]; /* the block is in the config */
static bool running[NFEATURES];    /* init succeeded */
static int config_errors;          /* init fails when > 0 */
static int stats_fd = -1;          /* bpf_enable_stats() */

/* <Plugin ebpf>'s own keys; the feature blocks are the features'. */
enum { G_ATTACH_MODE, G_BPF_STATS, G_BTF_PATH, G_NKEYS };
static const struct cfg_key global_keys[G_NKEYS] = {
    [G_ATTACH_MODE] = {"AttachMode", CK_OTHER, .show = "auto",
                       .doc = "auto, fentry, tracepoint or kprobe: the attach "
                              "flavour tried for every hook"},
    [G_BPF_STATS] = {"BPFStats", CK_BOOL, .def = 0,
                     .doc = "turn on the kernel's BPF run statistics and "
                            "dispatch each program's run count and time"},
    [G_BTF_PATH] = {"BTFPath", CK_STRING, .show = "none",
                    .doc = "a BTF file for kernels without "
                           "/sys/kernel/btf/vmlinux, that only root can "
                           "change"},
};
const struct cfg_block ebpf_global_keys = {"Plugin ebpf", global_keys,
                                           G_NKEYS};
static bool seen_global[G_NKEYS];

/* Back to the state before any configuration (after shutdown, and between
 * the cases of the unit tests). */
static void config_reset(void) {
  memset(configured, 0, sizeof(configured));
  config_errors = 0;
  memset(seen_global, 0, sizeof(seen_global));
  ebpf_global.attach_mode = ATTACH_AUTO;
  ebpf_global.bpf_stats = cfg_key_default(&ebpf_global_keys, G_BPF_STATS) != 0;
  free(ebpf_global.btf_path);
  ebpf_global.btf_path = NULL;
}

static int config_attach_mode(const oconfig_item_t *ci) {
  char *s = NULL;
  if (cfg_string(ci, &s))
    return -1;
  static const char *const names[] = {"auto", "fentry", "tracepoint",
                                      "kprobe"};
  int found = -1;
  for (int i = 0; i < 4; i++)
    if (strcasecmp(s, names[i]) == 0)
      found = i;
  if (found < 0) {
    E_ERROR("invalid value \"%s\" for option \"AttachMode\": expected "
            "auto, fentry, tracepoint or kprobe.",
            s);
    free(s);
    return -1;
  }
  free(s);
  ebpf_global.attach_mode = (enum attach_mode)found;
  return 0;
}

/* Why a file (or a directory on its way) could be changed by a user other
 * than root, or NULL: owned by another user, or writable by its group or
 * others; a directory may be world-writable with the sticky bit (/tmp),
 * where only a file's owner can rename or remove it. */
static const char *not_roots(const char *path, const struct stat *st,
                             char *why, size_t len) {
  bool dir = S_ISDIR(st->st_mode);
  if (!dir && !S_ISREG(st->st_mode))
    snprintf(why, len, "%s is not a regular file", path);
  else if (st->st_uid != 0)
    snprintf(why, len, "%s%s is owned by uid %u, not root",
             dir ? "directory " : "", path, (unsigned)st->st_uid);
  else if ((st->st_mode & 022) && !(dir && (st->st_mode & S_ISVTX)))
    snprintf(why, len, "%s%s is writable by its group or others (mode %04o)",
             dir ? "directory " : "", path, (unsigned)(st->st_mode & 07777));
  else
    return NULL;
  return why;
}

/* BTFPath: the BTF the BPF programs are relocated with, read as root. Only
 * a file that nobody but root can change, in directories nobody but root
 * can change (as sshd's StrictModes; symbolic links resolved first, and
 * the resolved path kept, so that what was checked is what is read). A
 * file that does not exist is left to check_btf() (a WARNING, the BPF
 * features off). */
/* The file and each directory above it, to the root. */
static const char *path_not_roots(char *path, char *why, size_t len) {
  for (;;) {
    struct stat st;
    if (stat(path, &st) != 0) {
      snprintf(why, len, "%s: %s", path, ERRSTR(errno));
      return why;
    }
    const char *bad = not_roots(path, &st, why, len);
    char *slash = strrchr(path, '/');
    if (bad || !slash || strcmp(path, "/") == 0)
      return bad;
    slash[slash == path] = 0; /* "/a/b" -> "/a", "/a" -> "/" */
  }
}

static int config_btf_path(const oconfig_item_t *ci) {
  char *s = NULL;
  if (cfg_string(ci, &s))
    return -1;
  char *real = realpath(s, NULL), *walk = real ? strdup(real) : NULL;
  char why[PATH_MAX + 80];
  const char *bad = NULL;
  if (real && !walk)
    snprintf(why, sizeof(why), "%s", ERRSTR(ENOMEM)), bad = why;
  else if (walk)
    bad = path_not_roots(walk, why, sizeof(why));
  free(walk);
  if (bad) {
    E_ERROR("option \"BTFPath\" \"%s\": %s; refusing a BTF file that a "
            "user other than root can change.",
            s, bad);
    free(s);
    free(real);
    return -1;
  }
  if (real) {
    free(s);
    s = real;
  }
  ebpf_global.btf_path = s;
  return 0;
}

static int config_global(const oconfig_item_t *ci) {
  int k = cfg_key_find(&ebpf_global_keys, ci, seen_global);
  switch (k) {
  case G_ATTACH_MODE:
    return config_attach_mode(ci);
  case G_BPF_STATS:
    return cfg_key_bool(&global_keys[k], ci, &ebpf_global.bpf_stats);
  case G_BTF_PATH:
    return config_btf_path(ci);
  }
  return -1;
}

static int ebpf_config(oconfig_item_t *ci) {
  for (int i = 0; i < ci->children_num; i++) {
    const oconfig_item_t *c = &ci->children[i];
    size_t f;
    for (f = 0; f < NFEATURES; f++)
      if (strcasecmp(c->key, features[f]->block) == 0)
        break;
    if (f == NFEATURES) {
      if (config_global(c))
        config_errors++;
      continue;
    }
    if (c->values_num != 0) {
      E_ERROR("block <%s> takes no argument.", c->key);
      config_errors++;
      continue;
    }
    if (configured[f]) {
      E_ERROR("block <%s> given more than once.", c->key);
      config_errors++;
      continue;
    }
    configured[f] = true;
    cfg_in_block(features[f]->block);
    if (features[f]->config(c) != 0)
      config_errors++;
    cfg_in_block(NULL);
  }
  /* Returning an error here would stop collectd from starting at all and
   * take every other plugin down with us; failing init disables only this
   * plugin and still makes `collectd -T` exit non-zero. */
  return 0;
}

/* Say up front which capabilities are missing for BPF, rather than leave
 * the user to decode EPERM from each feature. The table of what needs
 * which capability, measured (tests/integration/test_capabilities): */
#define CAPABILITIES_DOC "/usr/share/doc/collectd-ebpf/capabilities.md"
static void check_capabilities(void) {
  FILE *f = fopen("/proc/self/status", "re");
  if (!f)
    return;
  char line[256];
  unsigned long long eff = 0;
  bool found = false;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "CapEff: %llx", &eff) == 1) {
      found = true;
      break;
    }
  fclose(f);
  if (!found)
    return;
#define HAS(cap) ((eff >> (cap)) & 1)
  enum { SYS_ADMIN = 21, PERFMON = 38, BPF = 39 };
  if (HAS(SYS_ADMIN) || (HAS(BPF) && HAS(PERFMON)))
    return;
  E_WARNING("collectd lacks %s%s%s (and CAP_SYS_ADMIN): BPF programs cannot "
            "be loaded, so netstacklat, drops and tcp_window's clamp counter will be "
            "disabled (pressure, TCP memory and stalled receivers run on). Give "
            "collectd CAP_BPF and CAP_PERFMON (kernel >= 5.8; CAP_SYS_ADMIN "
            "before); BPFStats and entering a NetworkNamespace need "
            "CAP_SYS_ADMIN. See " CAPABILITIES_DOC ".",
            HAS(BPF) ? "" : "CAP_BPF", !HAS(BPF) && !HAS(PERFMON) ? " and " : "",
            HAS(PERFMON) ? "" : "CAP_PERFMON");
#undef HAS
}

/* CO-RE needs the running kernel's BTF (or BTFPath): say so once. */
static void check_btf(void) {
  const char *path = ebpf_global.btf_path ? ebpf_global.btf_path
                                          : "/sys/kernel/btf/vmlinux";
  if (access(path, R_OK) == 0)
    return;
  E_WARNING("BTF file %s: %s; BPF programs cannot be relocated (CO-RE), so "
            "netstacklat, drops and tcp_window's clamp counter will be disabled "
            "(pressure, TCP memory and stalled receivers run on)%s.",
            path, ERRSTR(errno),
            ebpf_global.btf_path ? ""
                                 : " (kernel without CONFIG_DEBUG_INFO_BTF: "
                                   "set BTFPath to a BTF file for it)");
}

/* The receive path, loaded once for the features that joined it at their
 * init, then each running feature's start. Returns the features still
 * running. */
static int start_features(int nrunning) {
  struct rx_client *clients[NFEATURES];
  for (size_t f = 0; f < NFEATURES; f++)
    clients[f] = features[f]->rx;
  rx_start(clients, NFEATURES);
  for (size_t f = 0; f < NFEATURES; f++)
    if (running[f] && features[f]->start && features[f]->start() != 0) {
      running[f] = false;
      nrunning--;
    }
  return nrunning;
}

static int ebpf_init(void) {
  if (config_errors) {
    E_ERROR("%d configuration error%s (see above); the plugin is disabled.",
            config_errors, config_errors == 1 ? "" : "s");
    return -1;
  }
  loader_log_install();
  for (size_t f = 0; f < NFEATURES; f++)
    if (configured[f] && (features[f]->bpf_object || features[f]->rx)) {
      check_capabilities();
      check_btf();
      break;
    }

  if (ebpf_global.bpf_stats) {
    stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    int err = errno;
    if (stats_fd < 0)
      E_WARNING("BPFStats: cannot enable kernel BPF run-time statistics: %s%s",
                ERRSTR(err),
                err == EPERM ? " (BPF_ENABLE_STATS needs CAP_SYS_ADMIN; "
                                 "see " CAPABILITIES_DOC ")"
                               : "");
    else
      E_INFO("BPFStats: kernel BPF run-time statistics enabled (this adds a "
             "little cost to every BPF program on the host while collectd "
             "runs).");
  }

  int nrunning = 0, nconfigured = 0;
  for (size_t f = 0; f < NFEATURES; f++) {
    if (!configured[f])
      continue;
    nconfigured++;
    int st = features[f]->init();
    running[f] = st == 0;
    if (running[f])
      nrunning++;
    if (st == -EINVAL)
      config_errors++; /* a setting that names nothing real */
  }
  if (config_errors) {
    loader_btf_release();
    /* Nothing of ours may stay attached once collectd unloads us. */
    for (size_t f = 0; f < NFEATURES; f++) {
      if (running[f])
        features[f]->shutdown();
      running[f] = false;
    }
    if (stats_fd >= 0) /* host-wide: must not outlive us either */
      close(stats_fd);
    stats_fd = -1;
    loader_log_restore();
    E_ERROR("%d configuration error%s (see above); the plugin is disabled.",
            config_errors, config_errors == 1 ? "" : "s");
    return -1;
  }
  nrunning = start_features(nrunning);
  loader_btf_release();
  /* Parsing the kernel's BTF leaves ~11 MiB freed but kept by malloc. */
  malloc_trim(0);
  if (nconfigured == 0)
    E_NOTICE("no feature block (<Pressure>, <Netstacklat>, <WindowClamp>, "
             "<Drops>) "
             "is configured: nothing to report.");
  else if (nrunning == 0)
    E_WARNING("none of the configured features could start (see above).");
  return 0;
}

/* Self-monitoring: the kernel's run count and run time of each program. */
static void read_bpf_stats(struct bpf_object *obj) {
  struct bpf_program *p;
  bpf_object__for_each_program(p, obj) {
    struct bpf_prog_info info;
    if (loader_prog_info(p, &info) != 0)
      continue;
    value_list_t vl;
    vl_prepare(&vl, "ebpf", bpf_program__name(p));
    vl_derive(&vl, "derive", "run_count", (int64_t)info.run_cnt);
    vl_derive(&vl, "derive", "run_time_ns", (int64_t)info.run_time_ns);
  }
}

/* Which flavour feeds each hook's values, in the backend and not only in
 * the log: ebpf/<feature>-<hook>/gauge-flavour (flavour_code()). Program
 * names never contain '-', so these never meet the run stats' instances. */
static struct flavour_vl {
  const struct hook_state *h;
  value_list_t vl; /* ebpf/<feature>-<hook>, made the first time */
} flavour_vls[64];
static size_t nflavour_vls;

static void submit_flavour(const char *feature, const struct hook_state *h,
                           void *arg) {
  if (strcmp(feature, (const char *)arg) != 0)
    return;
  struct flavour_vl *f = NULL;
  for (size_t i = 0; i < nflavour_vls && !f; i++)
    if (flavour_vls[i].h == h)
      f = &flavour_vls[i];
  if (!f) {
    char inst[DATA_MAX_NAME_LEN];
    snprintf(inst, sizeof(inst), "%s-%s", feature, h->def->name);
    if (nflavour_vls == sizeof(flavour_vls) / sizeof(flavour_vls[0])) {
      submit_gauge(PLUGIN_NAME, inst, "gauge", "flavour",
                   (double)flavour_code(h->flavour));
      return;
    }
    f = &flavour_vls[nflavour_vls++];
    f->h = h;
    vl_prepare(&f->vl, PLUGIN_NAME, inst);
  }
  vl_gauge(&f->vl, "gauge", "flavour", (double)flavour_code(h->flavour));
}

static int ebpf_read(void) {
  series_read_begin();
  for (size_t f = 0; f < NFEATURES; f++) {
    if (!running[f])
      continue;
    features[f]->read();
    loader_for_each_hook(submit_flavour, (void *)features[f]->name);
    if (stats_fd >= 0 && features[f]->bpf_object) {
      struct bpf_object *obj = features[f]->bpf_object();
      if (obj)
        read_bpf_stats(obj);
    }
  }
  /* The receive path's programs, once for every feature on them. */
  if (stats_fd >= 0 && rx_object())
    read_bpf_stats(rx_object());
  series_read_end();
  return 0;
}

static int ebpf_shutdown(void) {
  for (size_t f = 0; f < NFEATURES; f++) {
    if (running[f] || configured[f])
      features[f]->shutdown();
    running[f] = false;
  }
  nflavour_vls = 0; /* the hook arrays are the features' */
  series_reset();
  if (stats_fd >= 0)
    close(stats_fd);
  stats_fd = -1;
  loader_log_restore();
  cgroup2_reset();
  config_reset();
  return 0;
}

__attribute__((visibility("default"))) void module_register(void) {
  plugin_register_complex_config(PLUGIN_NAME, ebpf_config);
  plugin_register_init(PLUGIN_NAME, ebpf_init);
  plugin_register_read(PLUGIN_NAME, ebpf_read);
  plugin_register_shutdown(PLUGIN_NAME, ebpf_shutdown);
}
