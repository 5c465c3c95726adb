// SPDX-License-Identifier: GPL-2.0-only
/* The receive path's user side (rx.h): one object (rx, or rx_sampled or
 * rx_outliers when a client needs their paths) whose programs on the
 * receive hooks call every client's handlers, loaded once through the
 * loader for the clients that joined. */
#include "rx/rx.h"
#include "rx.skel.h"
#include "rx_outliers.skel.h"
#include "rx_sampled.skel.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The variants are opened through rx's skeleton: same maps, programs and
 * variables. */
_Static_assert(sizeof(struct rx_bpf__rodata) ==
                       sizeof(struct rx_outliers_bpf__rodata) &&
                   sizeof(struct rx_bpf__bss) ==
                       sizeof(struct rx_outliers_bpf__bss) &&
                   sizeof(struct rx_bpf) == sizeof(struct rx_outliers_bpf),
               "the rx objects differ");
_Static_assert(sizeof(struct rx_bpf__rodata) ==
                       sizeof(struct rx_sampled_bpf__rodata) &&
                   sizeof(struct rx_bpf__bss) ==
                       sizeof(struct rx_sampled_bpf__bss) &&
                   sizeof(struct rx_bpf) == sizeof(struct rx_sampled_bpf),
               "the rx objects differ");

#define P(...) HOOK_PROG(rx_bpf, __VA_ARGS__)
static const struct hook_def hook_defs[RX_NHOOKS] = {
    {"ip_start",
     {P(ip_start_fentry_v4),
      P(ip_start_fentry_v6, true),
      P(ip_start_tp),
      P(ip_start_kprobe_v4),
      P(ip_start_kprobe_v6, true)}},
    {"tcp_start",
     {P(tcp_start_fentry_v4),
      P(tcp_start_fentry_v6, true),
      P(tcp_start_tp),
      P(tcp_start_kprobe_v4),
      P(tcp_start_kprobe_v6, true)}},
    {"udp_start",
     {P(udp_start_fentry_v4),
      P(udp_start_fentry_v6, true),
      P(udp_start_kprobe_v4),
      P(udp_start_kprobe_v6, true)}},
    {"tcp_socket_enqueued",
     /* enqueued_tp serves both enqueue hooks (one program on the
      * tracepoint): the loader loads and attaches it once. */
     {P(tcp_enqueued_fexit), P(enqueued_tp), P(tcp_enqueued_kprobe)}},
    {"udp_socket_enqueued",
     /* Entry before return in each pair: the loader attaches in this
      * order, so every return that fires had its entry seen. */
     {P(udp_enqueued_fentry),
      P(udp_enqueued_fexit),
      P(enqueued_tp),
      P(udp_enqueued_kprobe),
      P(udp_enqueued_kretprobe)}},
    {"tcp_socket_read",
     {P(tcp_read_fentry), P(tcp_read_tp), P(tcp_read_kprobe)}},
    {"udp_socket_read", {P(udp_read_fentry), P(udp_read_kprobe)}},
};
#undef P

#define RX_MAX_CLIENTS 8

static struct {
  struct rx_bpf *skel;
  struct hook_state hooks[RX_NHOOKS];
  struct rx_client *clients[RX_MAX_CLIENTS];
  size_t nclients;
  unsigned paths;
} rx;

void rx_join(struct rx_client *c) { c->joined = true; }

/* The object with the paths the clients need compiled in. NULL (errno
 * set) when it cannot be opened. */
static struct rx_bpf *open_object(unsigned paths) {
  LIBBPF_OPTS(bpf_object_open_opts, opts,
              .btf_custom_path = ebpf_global.btf_path);
  if (!paths)
    return rx_bpf__open_opts(&opts);
  struct rx_bpf *skel = calloc(1, sizeof(*skel));
  int err = skel ? rx_bpf__create_skeleton(skel) : -ENOMEM;
  if (!err) {
    skel->skeleton->data =
        paths & RX_PATH_OUTLIERS
            ? rx_outliers_bpf__elf_bytes(&skel->skeleton->data_sz)
            : rx_sampled_bpf__elf_bytes(&skel->skeleton->data_sz);
    err = bpf_object__open_skeleton(skel->skeleton, &opts);
  }
  if (err) {
    if (skel)
      rx_bpf__destroy(skel);
    skel = NULL;
    errno = -err;
  }
  return skel;
}

static struct bpf_object *rx_open(void *ctx, void **skel_out) {
  (void)ctx;
  rx.skel = open_object(rx.paths);
  if (!rx.skel)
    return NULL;
  *skel_out = rx.skel;
  for (size_t i = 0; i < rx.nclients; i++) {
    struct rx_client *c = rx.clients[i];
    if (c->open)
      c->open(c->ctx, rx.skel, c->joined);
  }
  return rx.skel->obj;
}

static int rx_load(void *ctx) {
  (void)ctx;
  /* The flavours are chosen: the one sk_data_ready program serves the
   * enqueue hooks that chose it, and only those. */
  rx.skel->rodata->rx_tcp_enqueued_tp =
      rx.hooks[RX_TCP_SOCKET_ENQUEUED].flavour == FLAVOUR_TP;
  rx.skel->rodata->rx_udp_enqueued_tp =
      rx.hooks[RX_UDP_SOCKET_ENQUEUED].flavour == FLAVOUR_TP;
  for (size_t i = 0; i < rx.nclients; i++) {
    struct rx_client *c = rx.clients[i];
    if (c->joined && c->load)
      c->load(c->ctx, rx.skel);
  }
  int err = rx_bpf__load(rx.skel);
  for (size_t i = 0; !err && i < rx.nclients; i++) {
    struct rx_client *c = rx.clients[i];
    if (c->joined && c->loaded)
      c->loaded(c->ctx, rx.skel);
  }
  return err;
}

static void rx_destroy(void *ctx) {
  (void)ctx;
  rx_bpf__destroy(rx.skel);
  rx.skel = NULL;
  for (size_t i = 0; i < rx.nclients; i++) {
    struct rx_client *c = rx.clients[i];
    if (c->gone)
      c->gone(c->ctx);
  }
}

/* Each hook wanted by a joined client, after the first such client, with
 * every client's program list and refusals. */
static const char *set_hooks(void) {
  const char *first = NULL;
  for (int h = 0; h < RX_NHOOKS; h++) {
    struct hook_state *hs = &rx.hooks[h];
    *hs = (struct hook_state){.def = &hook_defs[h]};
    for (size_t i = 0; i < rx.nclients; i++) {
      const struct rx_client *c = rx.clients[i];
      if (!c->joined || !c->want[h])
        continue;
      if (!hs->wanted) {
        hs->wanted = true;
        hs->feature = c->feature;
        first = first ? first : c->feature;
      }
      if (c->def[h])
        hs->def = c->def[h];
      for (int f = 0; f < FLAVOUR_COUNT; f++)
        if (c->refuse[h][f] && !hs->refuse[f])
          hs->refuse[f] = c->refuse[h][f];
    }
  }
  return first;
}

int rx_start(struct rx_client *const *clients, size_t n) {
  rx.nclients = 0;
  rx.paths = 0;
  for (size_t i = 0; i < n && rx.nclients < RX_MAX_CLIENTS; i++)
    if (clients[i]) {
      rx.clients[rx.nclients++] = clients[i];
      if (clients[i]->joined)
        rx.paths |= clients[i]->paths;
    }
  const char *first = set_hooks();
  if (!first)
    return 0;
  struct loader_ops ops = {NULL, rx_open, rx_load, rx_destroy};
  int r = loader_run(first, &ops, rx.hooks, RX_NHOOKS);
  return rx.skel ? r : (r < 0 ? r : -ENOENT);
}

struct bpf_object *rx_object(void) { return rx.skel ? rx.skel->obj : NULL; }

struct rx_bpf *rx_skel(void) { return rx.skel; }

void rx_view(const struct rx_client *c, struct hook_state view[RX_NHOOKS]) {
  for (int h = 0; h < RX_NHOOKS; h++) {
    if (c->joined && c->want[h] && rx.skel) {
      view[h] = rx.hooks[h];
      view[h].feature = c->feature;
      continue;
    }
    view[h] = (struct hook_state){.def = c->def[h] ? c->def[h] : &hook_defs[h],
                                  .flavour = -1};
  }
}

int rx_flavour(int hook) {
  if (!rx.skel || hook < 0 || hook >= RX_NHOOKS || !rx.hooks[hook].wanted)
    return -1;
  return rx.hooks[hook].flavour;
}

void rx_leave(struct rx_client *c) {
  if (!c->joined)
    return;
  c->joined = false;
  bool any = false;
  for (size_t i = 0; i < rx.nclients; i++)
    any = any || rx.clients[i]->joined;
  if (!any) {
    loader_detach(rx.hooks, RX_NHOOKS);
    if (rx.skel)
      rx_destroy(NULL);
    rx.nclients = 0;
    memset(rx.hooks, 0, sizeof(rx.hooks));
    return;
  }
  /* The hooks only c wanted: their programs stop running (the handlers
   * of c left in the others run on, on maps nobody reads, until the last
   * client leaves). enqueued_tp is linked under tcp_socket_enqueued, the
   * first hook that uses it: that hook's links stay while
   * udp_socket_enqueued is wanted. */
  for (int h = 0; h < RX_NHOOKS; h++) {
    bool wanted = false;
    for (size_t i = 0; i < rx.nclients && !wanted; i++)
      wanted = rx.clients[i]->joined &&
               (rx.clients[i]->want[h] ||
                (h == RX_TCP_SOCKET_ENQUEUED &&
                 rx.clients[i]->want[RX_UDP_SOCKET_ENQUEUED]));
    if (!wanted && rx.hooks[h].wanted) {
      loader_unlink(&rx.hooks[h]);
      rx.hooks[h].wanted = false;
    }
  }
}
