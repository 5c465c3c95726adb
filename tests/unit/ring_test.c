/* Unit tests for plugin/common/ring.c: a read of a ring buffer stops at
 * what the ring holds or at its time budget, and leaves the rest for the
 * next read, in order. Against a real BPF ring buffer (SKIP where BPF
 * maps cannot be made), filled by a socket filter of a few instructions
 * run with BPF_PROG_TEST_RUN; its producer as fast as the reader is the
 * reader's own callback, which makes a record for each it gets. */
#include "testlib.h"

#include "../../plugin/common/ring.c"
#include "../../plugin/core/esc.c" /* its log lines */
#include "mock_collectd.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#define REC 80         /* bytes a record: a drops_event's size */
#define RING 64 * 1024 /* the plugin's rings */

static int map_fd = -1, prog_fd = -1;
static uint64_t seq; /* the next record's number */

/* A socket filter that copies its packet's first REC bytes into the ring
 * (bpf_ringbuf_output from the stack): the packet carries the record's
 * number, at its byte 8. */
static int setup(const char **why) {
  map_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ring_test", 0, 0, RING, NULL);
  if (map_fd < 0) {
    *why = "cannot create a BPF ring buffer";
    return -1;
  }
  struct bpf_insn p[] = {
      /* r6 = skb; bpf_skb_load_bytes(skb, 0, fp - REC, REC) */
      {BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0},
      {BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 0},
      {BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0},
      {BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, -REC},
      {BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, REC},
      {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_skb_load_bytes},
      /* bpf_ringbuf_output(map, fp - REC, REC, 0) */
      {BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map_fd},
      {0, 0, 0, 0, 0},
      {BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0},
      {BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -REC},
      {BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, REC},
      {BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0},
      {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output},
      {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  prog_fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "ring_test", "GPL",
                          p, sizeof(p) / sizeof(p[0]), NULL);
  if (prog_fd < 0) {
    *why = "cannot load a socket filter";
    return -1;
  }
  return 0;
}

/* One record, numbered: 0, or -1 when the ring had no room. */
static int produce(void) {
  /* The program sees the packet past its Ethernet header (14 bytes). */
  uint8_t pkt[14 + REC] = {0};
  memcpy(pkt + 14 + 8, &seq, sizeof(seq));
  LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt,
              .data_size_in = sizeof(pkt));
  if (bpf_prog_test_run_opts(prog_fd, &o) || o.retval)
    return -1;
  seq++;
  return 0;
}

struct reader {
  uint64_t got, next;  /* records got; the number the next must carry */
  bool in_order;
  uint64_t feed;       /* records still to produce, one per record got */
  long sleep_us;       /* a slow consumer */
};

static int on_rec(void *ctx, void *data, size_t size) {
  struct reader *rd = ctx;
  uint64_t n;
  memcpy(&n, (char *)data + 8, sizeof(n));
  if (size != REC || n != rd->next)
    rd->in_order = false;
  rd->next = n + 1;
  rd->got++;
  if (rd->feed) {
    rd->feed--;
    produce();
  }
  if (rd->sleep_us)
    usleep((useconds_t)rd->sleep_us);
  return 0;
}

DEF_TEST(capacity) {
  CHECK_EQ_U64(65536 / 88, ebpf_ring_capacity(65536, 80));
  CHECK_EQ_U64(65536 / 16, ebpf_ring_capacity(65536, 1));
  CHECK_EQ_U64(1, ebpf_ring_capacity(64, 4096));
  return 0;
}

/* A producer as fast as the reader: ring_buffer__consume() itself would
 * read all 20 ring-fulls in one call; a bounded read stops after one
 * ring-full, and the next reads go on from there, in order. */
DEF_TEST(stops_at_what_the_ring_holds) {
  struct ebpf_ring r;
  struct reader rd = {.in_order = true};
  CHECK_EQ_INT(0, ebpf_ring_open(&r, map_fd, REC, on_rec, &rd));
  uint64_t cap = ebpf_ring_capacity(RING, REC);
  CHECK_EQ_U64(cap, r.max);
  for (int i = 0; i < 10; i++)
    CHECK_EQ_INT(0, produce());
  rd.feed = 20 * cap;
  CHECK_EQ_INT((int64_t)cap, ebpf_ring_read(&r, 0));
  CHECK(r.stopped);
  CHECK_EQ_U64(cap, rd.got);
  CHECK_EQ_INT((int64_t)cap, ebpf_ring_read(&r, 0));
  CHECK_EQ_U64(2 * cap, rd.got);
  rd.feed = 0; /* the producer stops: the rest is read to its end */
  CHECK_EQ_INT(10, ebpf_ring_read(&r, 0));
  CHECK(!r.stopped);
  CHECK_EQ_INT(0, ebpf_ring_read(&r, 0));
  CHECK(rd.in_order);
  CHECK_EQ_U64(seq, rd.next);
  ebpf_ring_close(&r);
  return 0;
}

/* A consumer of 2 ms a record and a budget of 50 ms: about 25 records a
 * read, the rest left (none lost). */
DEF_TEST(stops_at_its_time_budget) {
  struct ebpf_ring r;
  struct reader rd = {.in_order = true, .next = seq, .sleep_us = 2000};
  CHECK_EQ_INT(0, ebpf_ring_open(&r, map_fd, REC, on_rec, &rd));
  for (int i = 0; i < 200; i++)
    CHECK_EQ_INT(0, produce());
  int64_t n = ebpf_ring_read(&r, 50 * 1000000LL);
  CHECK(r.stopped);
  CHECK(n >= 1 && n <= 30);
  rd.sleep_us = 0;
  CHECK_EQ_INT(200 - n, ebpf_ring_read(&r, 50 * 1000000LL));
  CHECK(!r.stopped && rd.in_order);
  ebpf_ring_close(&r);
  return 0;
}

/* One WARNING when reads start to stop, none while they go on stopping,
 * one INFO when a read reaches the end again. */
DEF_TEST(says_it_once) {
  struct ebpf_ring r = {.max = 5};
  mock_reset();
  r.stopped = true, r.n = 5;
  ebpf_ring_note(&r, "drops: DropNotifications", "x");
  ebpf_ring_note(&r, "drops: DropNotifications", "x");
  CHECK_EQ_INT(1, mock_nlog);
  CHECK(mock_log_find(LOG_WARNING, "after 5 records (what the ring buffer holds)") >= 0);
  r.stopped = false;
  ebpf_ring_note(&r, "drops: DropNotifications", "x");
  CHECK_EQ_INT(2, mock_nlog);
  CHECK(mock_log_find(LOG_INFO, "read to its end again") >= 0);
  return 0;
}

int main(void) {
  tl_prog = "ring";
  RUN_TEST(capacity);
  RUN_TEST(says_it_once);
  const char *why = NULL;
  if (setup(&why)) {
    printf("SKIP: ring.stops_at_what_the_ring_holds (%s: %s)\n", why,
           strerror(errno));
    printf("SKIP: ring.stops_at_its_time_budget (%s)\n", why);
    END_TEST;
  }
  RUN_TEST(stops_at_what_the_ring_holds);
  RUN_TEST(stops_at_its_time_budget);
  END_TEST;
}
