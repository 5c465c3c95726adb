// SPDX-License-Identifier: GPL-2.0-only
/* The receive path's user side: the programs on the receive hooks
 * (bpf/rx/), loaded and attached once, through the loader, for every
 * feature that has a handler there. A feature is a client: it says at its
 * init which hooks it needs and sets its own settings and maps in the one
 * object through callbacks; the part chooses each hook's flavour, loads,
 * and tells each client what came of it. The part knows no feature's
 * meaning and no feature knows another: each reaches its own .rodata,
 * variables and maps through the skeleton (rx.skel.h, struct rx_bpf).
 *
 * The core hands the part every feature's client (struct ebpf_feature's
 * rx), after every init: rx_start() loads once for the clients that
 * joined, and opens the object with the others told they are out (their
 * maps made at their smallest). Then each feature's start callback reads
 * what it got (rx_view()). */
#ifndef EBPF_RX_H
#define EBPF_RX_H

#include "common/loader.h"
#include "rx/hooks.h"

#include <stdbool.h>

struct rx_bpf;

/* Paths a client needs compiled into the programs, each in an object of
 * its own (bpf/rx/sampled.bpf.c, bpf/rx/outliers.bpf.c), so that the
 * default object carries not even their loads. */
enum {
  RX_PATH_SAMPLING = 1u << 0,
  RX_PATH_OUTLIERS = 1u << 1, /* with the sampling path */
};

struct rx_client {
  /* The feature's name: a hook is named in the log and in
   * ebpf/<feature>-<hook>/gauge-flavour after the first client (in the
   * core's order) that wants it. */
  const char *feature;
  void *ctx;
  /* Set by the client before rx_start() (rx_join()). A client may join
   * without wanting a hook: its handlers then run only where another
   * client's hook has the programs attached (rx_flavour()), and the object
   * stays while it is joined. */
  bool joined;
  bool want[RX_NHOOKS];
  /* Flavours the client's settings rule out, with the reason to log. */
  const char *refuse[RX_NHOOKS][FLAVOUR_COUNT];
  /* The hook's programs when the client needs more than the part's (NULL:
   * the part's list), e.g. netstacklat's head-of-line tracking. */
  const struct hook_def *def[RX_NHOOKS];
  unsigned paths;
  /* Callbacks, each optional. open: the object is opened (again, after a
   * flavour was struck off): set the client's rodata and size its maps;
   * joined false: the client is out, its maps at their smallest. load:
   * the flavours are chosen (rx_view()), the object about to be loaded.
   * loaded: it is loaded. gone: it is destroyed (its pointers are stale).
   * load and loaded are called for joined clients only. */
  void (*open)(void *ctx, struct rx_bpf *skel, bool joined);
  void (*load)(void *ctx, struct rx_bpf *skel);
  void (*loaded)(void *ctx, struct rx_bpf *skel);
  void (*gone)(void *ctx);
};

/* Marks c as a client of the next rx_start() (its want, refuse, def and
 * paths set). */
void rx_join(struct rx_client *c);

/* Load and attach for the clients that joined, among the n of clients[]
 * (NULL entries skipped). Returns the number of hooks attached, 0 when no
 * client joined, or a negative errno when the object could not be loaded
 * (the log said why). */
int rx_start(struct rx_client *const *clients, size_t n);

/* The object, while loaded (self-monitoring); NULL otherwise. */
struct bpf_object *rx_object(void);
struct rx_bpf *rx_skel(void);

/* Each hook as client c sees it: the part's state for a hook c wants
 * (flavour, links), flavour -1 and not wanted for the others. */
void rx_view(const struct rx_client *c, struct hook_state view[RX_NHOOKS]);

/* The flavour the part's run chose for a hook whose programs are
 * attached, whichever client wants it; -1 otherwise. A client that has a
 * handler on a hook without wanting it (it rides on another's) asks. */
int rx_flavour(int hook);

/* c leaves: the hooks no other client wants are detached, and the object
 * is destroyed with the last client. */
void rx_leave(struct rx_client *c);

#endif
