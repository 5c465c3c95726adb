// SPDX-License-Identifier: GPL-2.0-only
/* tcp_window's sock_diag socket (NETLINK_SOCK_DIAG, opened in the
 * namespace the stalled receivers are read in) and the whole walk through
 * it: a dump of every TCP socket, walked by parse.c's sockdiag_walk. The
 * fallback when the BPF iterator (iter.c) does not load; the marked scans
 * (marks.c) send their exact requests on the same socket. */
#include "tcp_window/internal.h"

#include "tcp_window/parse.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct tcpw_diag tcpw_diag = {.fd = -1};

/* Longest wait for one reply datagram: the kernel answers a dump of 10,000
 * sockets in ~15 ms, so a second means it will not answer; collectd's read
 * thread must not hang on it. */
#define DIAG_RECV_TIMEOUT_S 1

/* States in which unread data can sit in the receive queue; LISTEN (whose
 * rqueue is the accept backlog), TIME_WAIT and request sockets are left
 * out by the kernel. */
#define DIAG_STATES                                                            \
  ((1u << 1) /* ESTABLISHED */ | (1u << 4) /* FIN_WAIT1 */ |                   \
   (1u << 5) /* FIN_WAIT2 */ | (1u << 8) /* CLOSE_WAIT */ |                    \
   (1u << 9) /* LAST_ACK */ | (1u << 11) /* CLOSING */)

/* Send one dump request (its nlmsg_seq is `seq`) and walk the replies;
 * replies to other requests are ignored by the walk. The socket is
 * connected to the kernel (tcpw_diag_open), hence send(). */
static int diag_request(const void *req, size_t len, uint32_t seq,
                        uint32_t stalled_ms, struct stall_acc *acc) {
  if (send(tcpw_diag.fd, req, len, 0) < 0)
    return -errno;
  for (;;) {
    ssize_t n = recv(tcpw_diag.fd, tcpw_diag.buf, DIAG_BUF_SIZE, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      /* SO_RCVTIMEO expired */
      return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
    }
    if (n == 0)
      return -EPIPE;
    int st = sockdiag_walk(tcpw_diag.buf, (size_t)n, seq, stalled_ms, acc);
    if (st < 0)
      return st;
    if (st == 1)
      return 0;
  }
}

static int diag_dump(int family, uint32_t stalled_ms, struct stall_acc *acc) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } req = {
      .nlh = {.nlmsg_len = sizeof(req),
              .nlmsg_type = SOCK_DIAG_BY_FAMILY,
              .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
              .nlmsg_seq = ++tcpw_diag.seq},
      .r = {.sdiag_family = (uint8_t)family,
            .sdiag_protocol = IPPROTO_TCP,
            .idiag_ext = 1u << (INET_DIAG_INFO - 1),
            .idiag_states = DIAG_STATES},
  };
  return diag_request(&req, sizeof(req), req.nlh.nlmsg_seq, stalled_ms, acc);
}

/* The kernel's cost of a dump is the walk of the whole TCP established
 * hash (sized by RAM, not by the sockets in it), once per request. IPv4
 * and IPv6 sockets share that hash, and the older TCPDIAG_GETSOCK request
 * dumps both families in one walk: half the cost of two SOCK_DIAG_BY_FAMILY
 * dumps (0.89 -> 0.51 ms per read here with a handful of sockets). */
static int diag_dump_both(uint32_t stalled_ms, struct stall_acc *acc) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req r;
  } req = {
      .nlh = {.nlmsg_len = sizeof(req),
              .nlmsg_type = TCPDIAG_GETSOCK,
              .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
              .nlmsg_seq = ++tcpw_diag.seq},
      .r = {.idiag_family = AF_UNSPEC,
            .idiag_ext = 1u << (INET_DIAG_INFO - 1),
            .idiag_states = DIAG_STATES},
  };
  return diag_request(&req, sizeof(req), req.nlh.nlmsg_seq, stalled_ms, acc);
}

/* Drain whatever a failed dump left in the socket. */
void tcpw_diag_drain(void) {
  while (recv(tcpw_diag.fd, tcpw_diag.buf, DIAG_BUF_SIZE, MSG_DONTWAIT) > 0)
    ;
}

static bool diag_one_walk = true; /* until the kernel refuses it */

/* The whole walk by sock_diag: one dump of both families while the
 * kernel takes it, else one per family. */
int tcpw_diag_walk(uint32_t ms, struct stall_acc *acc) {
  if (diag_one_walk) {
    tcpw_acc_reset(acc);
    int err = diag_dump_both(ms, acc);
    if (err == 0)
      return 0;
    tcpw_diag_drain();
    if (err == -ETIMEDOUT) {
      E_WARNING(FEATURE ": no sock_diag reply within %d s; stalled receivers "
                "are not reported for this interval.",
                DIAG_RECV_TIMEOUT_S);
      return err;
    }
    diag_one_walk = false;
    E_INFO(FEATURE ": the one-walk sock_diag dump failed (%s); using one "
           "dump per address family.",
           ERRSTR(err));
  }
  tcpw_acc_reset(acc);
  static const int fams[] = {AF_INET, AF_INET6};
  for (size_t i = 0; i < 2; i++) {
    int err = diag_dump(fams[i], ms, acc);
    if (err == -ENOENT && fams[i] == AF_INET6)
      continue; /* kernel without IPv6 */
    if (err) {
      E_WARNING(FEATURE ": sock_diag dump (%s) failed: %s",
                fams[i] == AF_INET ? "IPv4" : "IPv6", ERRSTR(err));
      tcpw_diag_drain();
      return err;
    }
  }
  return 0;
}

/* The socket options every sock_diag socket gets (separate so that the
 * unit test can give them to its stand-in for the kernel). */
static int diag_socket_setup(int fd) {
  struct timeval tv = {.tv_sec = DIAG_RECV_TIMEOUT_S};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
    return -errno;
  return 0;
}

/* The sock_diag socket, connected to the kernel, in the namespace of the
 * calling thread. 0 or a negative errno (then tcpw_diag.fd stays -1). */
int tcpw_diag_open(void) {
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  int err = 0;
  tcpw_diag.fd =
      socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (tcpw_diag.fd < 0 ||
      connect(tcpw_diag.fd, (struct sockaddr *)&kernel, sizeof(kernel)) != 0)
    err = -errno;
  if (!err)
    err = diag_socket_setup(tcpw_diag.fd);
  if (err && tcpw_diag.fd >= 0)
    close(tcpw_diag.fd);
  if (err)
    tcpw_diag.fd = -1;
  return err;
}

void tcpw_diag_close(void) {
  diag_one_walk = true;
  if (tcpw_diag.fd >= 0)
    close(tcpw_diag.fd);
  tcpw_diag.fd = -1;
}
