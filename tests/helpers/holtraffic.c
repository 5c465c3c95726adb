/* TCP reads behind a hole, for the IncludeHOLBlocked tests (integration
 * test test_netstacklat and the VM matrix):
 *
 *   holtraffic IFACE ADDR PORT N_BEFORE N_AFTER N_LATE HOLD_MS [LAG_MS]
 *
 * Attaches tests/helpers/hol_drop.bpf.c to IFACE in generic XDP mode (the
 * device the connection to ADDR arrives by: lo for a local address; the
 * program sees received packets only), then a child
 * connects to ADDR:PORT and sends messages of 100 bytes with TCP_NODELAY:
 *
 *   1. N_BEFORE messages, each after the previous one was read: in order;
 *   2. one message that is lost (with its retransmissions, for HOLD_MS),
 *      then N_AFTER more, 1 ms apart: they arrive out of order and wait
 *      in the out-of-order queue until a retransmission fills the hole;
 *   3. once all of that was read, N_LATE messages as in 1.
 *
 * The parent accepts and reads one message per read, with SO_TIMESTAMPNS:
 * each read's latency is the time of its return minus the kernel's receive
 * timestamp of the skb it read (what tcp_socket_read measures, told by the
 * kernel itself). A read is "slow" when that latency is at least
 * HOLD_MS / 2.
 *
 * With LAG_MS, a reader that lags: the N_BEFORE messages are sent 2 ms
 * apart without waiting for their reads, LAG_MS later the lost one and
 * N_AFTER, and the reader reads nothing until all of them are in order in
 * its receive queue (the hole filled and merged), then one message per
 * read. The data before the hole then waited LAG_MS longer than the data
 * behind it, for the reader only. Prints
 *
 *   reads=R fast=F slow=S unstamped=U max_ms=X drops=D ofo=O retrans=T
 *   before=B hole=H behind=A late=L waited=W behind_min_ms=X
 *   behind_max_ms=Y kept_max_ms=K ofo_bytes=Z
 *   skbs=K skbs_behind=M
 *
 * before, hole, behind, late: the reads of a message sent before the lost
 * one, of the lost one, of those sent behind it, of the late ones (by
 * content). waited: the reads whose data ends in data that arrived out of
 * order (ofo_bytes of it), which waited behind a hole: the drop program
 * lists the segments it let through from the loss on, in their order,
 * and they are replayed here as TCP reassembles them (a segment that
 * starts beyond the data in order so far arrived out of order). Usually
 * the N_AFTER messages; fewer when the sender was descheduled for longer
 * than the hold (seen in a loaded TCG guest) and sent the rest after the
 * hole was filled: that data arrived in order and waited for nothing.
 * behind_*_ms: the latency range of the reads that waited; kept_max_ms:
 * the largest latency of the other reads (the kernel merges the data
 * behind the hole into the skb of the retransmission that fills it, with
 * the newer receive time: the read of the lost message may then carry the
 * wait behind the hole, by the kernel's own timestamp); skbs: the skbs read (the kernel merges adjacent
 * segments that wait in a queue into one skb, with the newest receive
 * time: consecutive reads with the same kernel timestamp read one skb),
 * skbs_behind: those whose data ends in the data that waited behind the
 * hole (what a per-skb hook sees).
 *
 * drops: the segments the XDP program lost; ofo, retrans: this network
 * namespace's TcpExt TCPOFOQueue and Tcp RetransSegs over the run (the
 * kernel's witnesses that there was a hole). Exit status 0 when every
 * byte arrived and the drop program kept every segment after the loss. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "hol_drop.skel.h"

#define HOL_SEGS 256 /* the drop program's queue of segments */

#define MSG 100

static void die(const char *what) {
  fprintf(stderr, "holtraffic: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

static socklen_t make_addr(const char *addr, int port,
                           struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  if (strchr(addr, ':')) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((unsigned short)port);
    if (inet_pton(AF_INET6, addr, &a->sin6_addr) != 1)
      die("bad IPv6 address");
    return sizeof(*a);
  }
  struct sockaddr_in *a = (struct sockaddr_in *)ss;
  a->sin_family = AF_INET;
  a->sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, addr, &a->sin_addr) != 1)
    die("bad IPv4 address");
  return sizeof(*a);
}

/* One counter of /proc/net/netstat or /proc/net/snmp ("TcpExt:",
 * "TCPOFOQueue"): a header line of names, then one of values. */
static long long kcounter(const char *file, const char *group,
                          const char *name) {
  FILE *f = fopen(file, "r");
  if (!f)
    return -1;
  char keys[8192], vals[8192];
  long long out = -1;
  size_t gl = strlen(group);
  while (fgets(keys, sizeof(keys), f) && fgets(vals, sizeof(vals), f)) {
    if (strncmp(keys, group, gl) != 0)
      continue;
    char *ks, *vs;
    char *k = strtok_r(keys, " \n", &ks);
    char *v = strtok_r(vals, " \n", &vs);
    while (k && v) {
      if (strcmp(k, name) == 0)
        out = atoll(v);
      k = strtok_r(NULL, " \n", &ks);
      v = strtok_r(NULL, " \n", &vs);
    }
  }
  fclose(f);
  return out;
}

/* Read a sysctl into old (when not NULL), then write val. */
static int sysctl_set(const char *path, const char *val, char *old,
                      size_t oldlen) {
  FILE *f;
  if (old && (f = fopen(path, "r"))) {
    if (!fgets(old, (int)oldlen, f))
      old[0] = 0;
    fclose(f);
  }
  if (!(f = fopen(path, "w")))
    return -1;
  int r = fputs(val, f) < 0;
  return fclose(f) || r ? -1 : 0;
}

static double now_real(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The child's wait: until the parent has received `want` bytes in all. */
static void wait_read(int fd, unsigned long want) {
  unsigned long got = 0;
  while (got < want)
    if (read(fd, &got, sizeof(got)) != sizeof(got))
      exit(2);
}

static void sender(const char *addr, int port, int n_before, int n_after,
                   int n_late, int tokens, long lag_ms) {
  struct sockaddr_storage ss;
  socklen_t len = make_addr(addr, port, &ss);
  int c = socket(ss.ss_family, SOCK_STREAM, 0);
  int one = 1;
  if (c < 0 || setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
      connect(c, (struct sockaddr *)&ss, len))
    die("connect");
  char buf[MSG];
  unsigned long sent = 0;
  for (int i = 0; i < n_before; i++) {
    memset(buf, 'b', sizeof(buf));
    if (send(c, buf, sizeof(buf), 0) != sizeof(buf))
      die("send");
    sent += MSG;
    if (!lag_ms)
      wait_read(tokens, sent);
    sleep_ms(2);
  }
  sleep_ms(lag_ms);
  for (int i = 0; i <= n_after; i++) { /* the lost one, then n_after */
    memset(buf, i ? 'a' : 'h', sizeof(buf));
    if (send(c, buf, sizeof(buf), 0) != sizeof(buf))
      die("send");
    sleep_ms(1);
  }
  wait_read(tokens, sent += (unsigned long)(n_after + 1) * MSG);
  sleep_ms(100);
  for (int i = 0; i < n_late; i++) {
    memset(buf, 'l', sizeof(buf));
    if (send(c, buf, sizeof(buf), 0) != sizeof(buf))
      die("send");
    wait_read(tokens, sent += MSG);
    sleep_ms(2);
  }
  close(c);
  exit(0);
}

int main(int argc, char **argv) {
  if (argc != 8 && argc != 9) {
    fprintf(stderr, "usage: holtraffic IFACE ADDR PORT N_BEFORE N_AFTER "
                    "N_LATE HOLD_MS [LAG_MS]\n");
    return 2;
  }
  const char *dev = argv[1], *addr = argv[2];
  int port = atoi(argv[3]), n_before = atoi(argv[4]),
      n_after = atoi(argv[5]), n_late = atoi(argv[6]);
  long hold_ms = atol(argv[7]);
  long lag_ms = argc == 9 ? atol(argv[8]) : 0;
  signal(SIGPIPE, SIG_IGN); /* a sender that died shows as missing bytes */
  int ifindex = (int)if_nametoindex(dev);
  if (!ifindex)
    die(dev);

  /* Without SACK there is no RACK and no tail loss probe, and with a high
   * reordering threshold no fast retransmit: the sender keeps sending new
   * data past the hole (no recovery holds it back), so it arrives out of
   * order, and the hole is filled by the timeout retransmission. Without
   * retransmission collapsing that retransmission carries the lost message
   * only, so the reader gets the data that waited in the out-of-order
   * queue (with its receive time), not a fresh copy of it. All three are
   * per network namespace; restored at the end. */
  static const char *const SACK = "/proc/sys/net/ipv4/tcp_sack",
                           *const REORD = "/proc/sys/net/ipv4/tcp_reordering",
                           *const COLL =
                               "/proc/sys/net/ipv4/tcp_retrans_collapse";
  char old_sack[32] = "", old_reord[32] = "", old_coll[32] = "";
  if (sysctl_set(SACK, "0", old_sack, sizeof(old_sack)) ||
      sysctl_set(REORD, "100", old_reord, sizeof(old_reord)) ||
      sysctl_set(COLL, "0", old_coll, sizeof(old_coll)))
    die("sysctl net.ipv4.tcp_sack/tcp_reordering/tcp_retrans_collapse");

  long long ofo0 = kcounter("/proc/net/netstat", "TcpExt:", "TCPOFOQueue");
  long long rtx0 = kcounter("/proc/net/snmp", "Tcp:", "RetransSegs");

  struct hol_drop_bpf *skel = hol_drop_bpf__open();
  if (!skel)
    die("open hol_drop");
  skel->rodata->targ_dport = (__u16)port;
  skel->rodata->targ_nth = (__u32)n_before + 1;
  skel->rodata->targ_hold_ns = (__u64)hold_ms * 1000000ULL;
  if (hol_drop_bpf__load(skel))
    die("load hol_drop");
  int err = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.hol_drop),
                           XDP_FLAGS_SKB_MODE, NULL);
  if (err) {
    errno = -err;
    die("XDP attach");
  }

  struct sockaddr_storage ss;
  socklen_t len = make_addr(addr, port, &ss);
  int ls = socket(ss.ss_family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ls < 0 || bind(ls, (struct sockaddr *)&ss, len) || listen(ls, 1))
    die("listen");
  /* Asking for timestamps turns the kernel's receive stamping on from a
   * work queue: ask early (the accepted socket inherits it), let it act. */
  if (setsockopt(ls, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)))
    die("SO_TIMESTAMPNS");
  sleep_ms(200);
  int pipefd[2];
  if (pipe(pipefd))
    die("pipe");
  pid_t child = fork();
  if (child < 0)
    die("fork");
  if (child == 0) {
    close(pipefd[1]);
    sender(addr, port, n_before, n_after, n_late, pipefd[0], lag_ms);
  }
  close(pipefd[0]);
  int c = accept(ls, NULL, NULL);
  if (c < 0)
    die("accept");
  struct timeval tmo = {30, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));

  unsigned long want = (unsigned long)(n_before + 1 + n_after + n_late) * MSG;
  unsigned long got = 0;
  bool witness_ok = true;
  int reads = 0, fast = 0, slow = 0, unstamped = 0;
  int before = 0, hole = 0, behind = 0, late = 0;
  /* Per read, for the classification by arrival at the end: where its
   * data ends in the stream, its kernel receive time, its latency. */
  struct rd {
    unsigned long end;
    struct timespec ts;
    double ms;
  } *rds = calloc(want, sizeof(*rds));
  if (!rds)
    die("calloc");
  double max_ms = 0;
  static char buf[1 << 16];
  if (lag_ms) {
    /* Until everything up to the late messages is in order in the
     * receive queue: the hole is filled and the queue merged. */
    int inq = 0, want_inq = (n_before + 1 + n_after) * MSG;
    for (int i = 0; i < 30000 && inq < want_inq; i++) {
      if (ioctl(c, FIONREAD, &inq))
        die("FIONREAD");
      if (inq < want_inq)
        sleep_ms(1);
    }
  }
  while (got < want) {
    char ctrl[256];
    struct iovec iov = {buf, MSG};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctrl,
                       .msg_controllen = sizeof(ctrl)};
    ssize_t n = recvmsg(c, &m, 0);
    double t = now_real();
    if (n <= 0)
      break;
    reads++;
    got += (unsigned long)n;
    double ms = -1;
    struct timespec ts = {-2, 0};
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
        memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
        ms = (t - (ts.tv_sec + ts.tv_nsec / 1e9)) * 1e3;
      }
    if ((unsigned long)reads <= want)
      rds[reads - 1] = (struct rd){got, ts, ms};
    if (ms < 0)
      unstamped++;
    else if (ms >= hold_ms / 2.0)
      slow++;
    else
      fast++;
    if (ms > max_ms)
      max_ms = ms;
    switch (buf[n - 1]) {
    case 'b':
      before++;
      break;
    case 'h':
      hole++;
      break;
    case 'a':
      behind++;
      break;
    default:
      late++;
    }
    if (getenv("HOL_VERBOSE"))
      fprintf(stderr, "read %d: %zd bytes ending '%c' at %.3f, latency %.3f ms\n",
              reads, n, buf[n - 1], t, ms);
    if (write(pipefd[1], &got, sizeof(got)) != sizeof(got))
      die("pipe write");
  }
  /* The data that arrived out of order, in stream offsets: the segments
   * let through from the loss on, replayed in their order from the lost
   * one's offset as TCP reassembles them. A read (or skb) waited behind a
   * hole when its data ends in such a range: (start, end]. */
  const struct hol_drop_bpf__bss *wb = skel->bss;
  struct {
    unsigned long start, end;
  } ofo[HOL_SEGS];
  int nofo = 0;
  unsigned long ofo_bytes = 0;
  unsigned long nxt = (__u32)(wb->lost_seq - wb->isn - 1);
  if (wb->lost_segs) {
    fprintf(stderr, "holtraffic: %llu segments after the loss not kept: no witness\n",
            (unsigned long long)wb->lost_segs);
    witness_ok = false;
  }
  struct {
    __u32 seq, len;
  } sg;
  while (wb->first_drop_ns &&
         !bpf_map_lookup_and_delete_elem(bpf_map__fd(skel->maps.segs), NULL, &sg)) {
    unsigned long s0 = (__u32)(sg.seq - wb->isn - 1), e0 = s0 + sg.len;
    if (s0 > nxt) {
      ofo[nofo].start = s0;
      ofo[nofo++].end = e0;
      ofo_bytes += e0 - s0;
      continue;
    }
    if (e0 > nxt)
      nxt = e0;
    for (bool more = true; more;) { /* what waited beyond it is in order now */
      more = false;
      for (int j = 0; j < nofo; j++)
        if (ofo[j].start <= nxt && ofo[j].end > nxt) {
          nxt = ofo[j].end;
          more = true;
        }
    }
  }
  if (getenv("HOL_VERBOSE"))
    for (int j = 0; j < nofo; j++)
      fprintf(stderr, "arrived out of order: stream bytes [%lu, %lu)\n",
              ofo[j].start, ofo[j].end);
  int waited = 0, skbs = 0, skbs_behind = 0;
  double behind_min = -1, behind_max = -1, kept_max = 0;
  int nr = reads < (int)want ? reads : (int)want;
  for (int i = 0; i < nr; i++) {
    const struct rd *r = &rds[i];
    bool w = false;
    for (int j = 0; j < nofo; j++)
      w |= r->end > ofo[j].start && r->end <= ofo[j].end;
    waited += w;
    if (w) {
      if (behind_min < 0 || r->ms < behind_min)
        behind_min = r->ms;
      if (r->ms > behind_max)
        behind_max = r->ms;
    } else if (r->ms > kept_max) {
      kept_max = r->ms;
    }
    /* The last read of an skb: the next read has another receive time. */
    if (i + 1 == nr || rds[i + 1].ts.tv_sec != r->ts.tv_sec ||
        rds[i + 1].ts.tv_nsec != r->ts.tv_nsec) {
      skbs++;
      skbs_behind += w;
    }
  }
  free(rds);
  int st = 0;
  waitpid(child, &st, 0);
  close(c);
  close(ls);

  sysctl_set(SACK, old_sack, NULL, 0);
  sysctl_set(REORD, old_reord, NULL, 0);
  sysctl_set(COLL, old_coll, NULL, 0);
  bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, NULL);

  long long ofo1 = kcounter("/proc/net/netstat", "TcpExt:", "TCPOFOQueue");
  long long rtx1 = kcounter("/proc/net/snmp", "Tcp:", "RetransSegs");
  printf("reads=%d fast=%d slow=%d unstamped=%d max_ms=%.1f drops=%llu "
         "ofo=%lld retrans=%lld bytes=%lu before=%d hole=%d behind=%d "
         "late=%d waited=%d behind_min_ms=%.1f behind_max_ms=%.1f "
         "kept_max_ms=%.1f ofo_bytes=%lu",
         reads, fast, slow, unstamped, max_ms,
         (unsigned long long)skel->bss->dropped, ofo1 - ofo0, rtx1 - rtx0,
         got, before, hole, behind, late, waited, behind_min, behind_max,
         kept_max, ofo_bytes);
  printf(" skbs=%d skbs_behind=%d\n", skbs, skbs_behind);
  hol_drop_bpf__destroy(skel);
  return got == want && witness_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0
             ? 0
             : 1;
}
