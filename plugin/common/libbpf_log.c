// SPDX-License-Identifier: GPL-2.0-only
/* libbpf's output into collectd's log, for the loader; see libbpf_log.h. */
#include "common/libbpf_log.h"
#include "common/loader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    ebpf_log(sev, LOG_PREFIX "libbpf: | %s", line);
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
    ebpf_log(sev, LOG_PREFIX "%s%s", strncmp(msg, "libbpf: ", 8) ? "libbpf: " : "", msg);
    log_tail(sev, nl + 1, 6);
    return (int)n;
  }
  ebpf_log(sev, LOG_PREFIX "%s%s",
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

void loader_log_quiet(bool on) {
  if (on)
    log_quiet++;
  else
    log_quiet--;
}

const char *loader_log_blame(void) { return log_blame; }

const char *loader_log_verdict(void) { return log_verdict; }

void loader_log_forget(void) {
  log_blame[0] = 0;
  log_verdict[0] = 0;
}
