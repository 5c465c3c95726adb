// SPDX-License-Identifier: GPL-2.0-only
/* Traffic with known counts for the VM matrix (tests/vm/guest-check), over
 * loopback inside a guest that has nothing else on the network.
 *
 *   vmtraffic udp ADDR PORT N [peek]
 *       A receiver bound to ADDR:PORT and a sender in this process: N
 *       datagrams of 64 bytes, each received (one recv; with "peek", a
 *       recv(MSG_PEEK) before it) before the next one is sent. Prints
 *       "udp N" with the count received.
 *   vmtraffic tcp ADDR PORT M DELAY_MS GAP_MS [peek]
 *       A child connects and sends M messages of 100 bytes with
 *       TCP_NODELAY; nothing flows back over TCP but ACKs. The parent
 *       accepts and, M times: waits until data is readable, sleeps
 *       DELAY_MS, (with "peek": recv(MSG_PEEK) of it first,) reads exactly
 *       one message. So M reads happen in this
 *       network namespace, all by the receiver. The child sends a message
 *       only after the parent has read the previous one (told over a pipe,
 *       which is no network traffic) and GAP_MS more: one message in flight
 *       at a time, so the kernel never coalesces two into one skb (the
 *       merged skb would carry the later message's receive timestamp).
 *       Prints "tcp M waits LO HI": the reads made, and of their waits by
 *       the kernel's receive timestamp (SO_TIMESTAMPNS) the shortest to
 *       just before recvmsg() and the longest to just after it, in ns
 *       (-1 -1 without timestamps): the witness of the plugin's
 *       tcp_socket_read latencies.
 *   vmtraffic tcp ADDR PORT M SHAPE GAP_MS
 *       The same with a wait before each read that follows SHAPE (a fixed
 *       pseudo-random order): mix, 18 ms before 7 reads in 10 and 30 ms
 *       before 3; bimodal, none or 2 ms, half each; tail, 0.2 ms, and
 *       40 ms before 1 read in 100. Also prints "w LO HI" for every read,
 *       in order: its wait to just before and to just after recvmsg().
 *   vmtraffic drops udp|tcp|rcvbuf PORT N
 *       Drops the kernel makes and counts itself, from every CPU at once
 *       (a child pinned to each sends N) to 127.0.0.1:PORT: udp, datagrams
 *       to a port nobody listens on (Udp NoPorts); tcp, connections to a
 *       closed port (Tcp OutRsts); rcvbuf, datagrams to a receiver with
 *       the smallest SO_RCVBUF that never reads (Udp RcvbufErrors). Prints
 *       "drops KIND sent S": the datagrams sent, or the connections
 *       refused.
 *   vmtraffic groups N CGDIR SECONDS
 *       N processes, each in a new cgroup CGDIR/g<i> ("-": none) and a
 *       network namespace of its own with lo up, each sending itself a
 *       UDP datagram and a TCP message every second (groups.c). Prints
 *       "groups N" once all are started.
 *   vmtraffic stall PORT BYTES IDLE SECONDS
 *       A stalled receiver and idle sockets over 127.0.0.1: IDLE idle
 *       connections to PORT, then one more whose peer sends BYTES that
 *       the accepting side never reads; all are held SECONDS, then
 *       closed. Prints "stall BYTES unread U" once the data has arrived
 *       (U: the accepted socket's unread bytes, FIONREAD) and "closed" at
 *       the end.
 *   vmtraffic qcheck DIR READS T0 BASE
 *       Checks the quantiles the plugin dispatched (the csv files of
 *       DIR, netstacklat-tcp_socket_read's directory) against the "w"
 *       lines of READS (the output of a shape run that started at unix
 *       time T0, when the hook's operations counter was BASE, and the
 *       only reads of TCP data meanwhile). The reads are in order, so each
 *       interval's reads are the next ones in READS, as many as its
 *       operations grew: for each interval of 5 reads or more, every
 *       latency-pNN within 5% of the exact quantile of those reads' waits
 *       (rank max(1, ceil(q n)); the shortest to just before recvmsg(),
 *       the longest to just after) and latency-max from the longest wait
 *       to 6.25% above it, each +-500 ns (the csv has 6 decimals); an
 *       end of an interval may be one read off (an event's count is
 *       added before its bucket, and a read of the map can fall between),
 *       so the exact quantiles are also taken with each end one read
 *       earlier or later, and the range of them all is allowed. Prints
 *       a line per interval and "qcheck intervals I checked C reads R of
 *       N worst P%"; exit status 0 only if every check held, C >= 1 and R
 *       = N; 2 if they held but a checked interval has a quantile with no
 *       row yet (collectd's write threads write a read's values in
 *       parallel: run it again after the next read); 1 otherwise.
 *
 *   vmtraffic clamp PORT SECONDS
 *       TCP bulk over 127.0.0.1: a reader thread reads (8 MiB, or for the
 *       first half at most), then stops and shrinks its SO_RCVBUF while
 *       the sender keeps sending, so the kernel prunes the receive queue
 *       and clamps the window (with lo's MTU at 1500: run `ip link set lo
 *       mtu 1500`). The sender stops 0.3 s after TcpExt PruneCalled rose
 *       (the kernel pruned: the witness the checks compare with), or
 *       after SECONDS.
 *   vmtraffic clamp PORT SECONDS CPU
 *       The same, the whole process pinned to CPU.
 *
 *   vmtraffic conc PORT FLOWS N block|spin
 *       UDP on every online CPU at once. For each CPU, FLOWS flows (ports
 *       PORT, PORT+1, ...; 127.0.0.1 and ::1 alternately), each sending N
 *       datagrams of 64 bytes from a sender pinned to that CPU (over
 *       loopback the receive softirq runs on the sending CPU, or where RPS
 *       steers it). block: the flow's receiver is in the sender's process
 *       and reads in rounds on a common clock (every 100 ms: send 32, sleep
 *       60 ms, read the 32), so the CPUs receive at the same time, idle (with RPS on lo, each flow's source port
 *       is chosen so that another CPU receives it, from an interrupt: by
 *       the idle task when that CPU has nothing else to run). spin: the receiver is a thread
 *       pinned to the next CPU that spins on recv(MSG_DONTWAIT), and the
 *       sender sends the next datagram only when the previous one was read:
 *       a reader ready to take each datagram the moment it is queued.
 *       A flow whose datagram is not read within 10 s sends no more; every
 *       flow reads what is still queued before it closes its socket (the
 *       kernel's Udp(6)InDatagrams counts reads).
 *       Prints "conc sent S received R" (S: sent, probes included);
 *       exit status 0 only if R = S.
 *
 *   vmtraffic vlan PORT N TAGS
 *       N UDP datagrams to 127.0.0.1:PORT in VLAN tags that stay in the
 *       packet, as without VLAN offload: Ethernet frames written on lo by
 *       a packet socket, the tags' protocols from the outside in TAGS
 *       (8100: 802.1Q; 88a8,8100: QinQ), each VLAN 0 (taken out without
 *       a VLAN device: no 8021q module needed), from 127.0.0.2, each
 *       received before the next is sent (lo's route_localnet set to 1
 *       meanwhile: the frames come with no route). Prints "vlan TAGS sent
 *       N received R".
 *
 * Exit status 0 only if every datagram/message arrived. */
#include "vmtraffic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc == 6 && !strcmp(argv[1], "conc"))
    return conc(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                !strcmp(argv[5], "spin"));
  if (argc == 5 && !strcmp(argv[1], "clamp"))
    pin(atoi(argv[4]));
  if ((argc == 4 || argc == 5) && !strcmp(argv[1], "clamp"))
    return clamp(atoi(argv[2]), atof(argv[3]));
  if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "peek"))) &&
      !strcmp(argv[1], "udp"))
    return udp(argv[2], atoi(argv[3]), atoi(argv[4]), argc == 6);
  if ((argc == 7 || (argc == 8 && !strcmp(argv[7], "peek"))) &&
      !strcmp(argv[1], "tcp"))
    return tcp(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5], atoi(argv[6]),
               argc == 8);
  if (argc == 5 && !strcmp(argv[1], "drops"))
    return drops(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (argc == 6 && !strcmp(argv[1], "stall"))
    return stall(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
  if (argc == 5 && !strcmp(argv[1], "vlan"))
    return vlan(atoi(argv[2]), atoi(argv[3]), argv[4]);
  if (argc == 5 && !strcmp(argv[1], "groups"))
    return groups(atoi(argv[2]), argv[3], atoi(argv[4]));
  if (argc == 6 && !strcmp(argv[1], "qcheck"))
    return qcheck(argv[2], argv[3], atof(argv[4]), atoll(argv[5]));
  fprintf(stderr, "usage: vmtraffic udp ADDR PORT N | "
                  "tcp ADDR PORT M DELAY_MS|SHAPE GAP_MS | qcheck DIR READS T0 BASE | clamp PORT SECONDS [CPU] | "
                  "conc PORT FLOWS N block|spin | drops udp|tcp|rcvbuf PORT N | "
                  "stall PORT BYTES IDLE SECONDS | vlan PORT N TAGS | groups N CGDIR SECONDS\n");
  return 2;
}
