#!/usr/bin/env python3
"""A tenant that makes cgroups and removes them, for the tests of the
series and tables a tenant can fill (run inside the test's namespace).

  churn PARENT N PERIOD LIFE SECONDS TRAFFIC
      The process moves into the cgroup directory PARENT; every PERIOD
      seconds it makes a cgroup PARENT/c<i> (N of them, or until SECONDS
      passed when N is 0), and with TRAFFIC 1 a UDP socket made in it
      receives one datagram over loopback (the process goes back to PARENT
      right after making the socket). Each cgroup is removed LIFE seconds
      after it was made. Prints the datagrams received, then "cgroups <n>".
  trickle CGDIR
      The process moves into CGDIR and makes a UDP socket there; each line
      k read from stdin: k datagrams sent to it over loopback and received,
      then "done <k>" printed."""
import os
import socket
import sys
import time


def move(cg):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def rmdir(d):
    for _ in range(100):
        try:
            os.rmdir(d)
            return
        except OSError:
            time.sleep(0.01)
    raise SystemExit("cannot remove " + d)


def churn(parent, n, period, life, seconds, traffic):
    move(parent)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    got, made, kept = 0, 0, []
    end = time.time() + seconds if seconds else None
    while (n == 0 or made < n) and (end is None or time.time() < end):
        d = os.path.join(parent, "c%d" % made)
        os.mkdir(d)
        made += 1
        if traffic:
            move(d)
            r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            r.bind(("127.0.0.1", 0))
            move(parent)
            tx.sendto(b"x" * 32, r.getsockname())
            r.settimeout(5)
            r.recv(64)
            r.close()
            got += 1
        kept.append((time.time() + life, d))
        while kept and kept[0][0] <= time.time():
            rmdir(kept.pop(0)[1])
        if period:
            time.sleep(period)
    for t, d in kept:
        time.sleep(max(0.0, t - time.time()))
        rmdir(d)
    print(got, flush=True)
    print("cgroups %d" % made, flush=True)


def trickle(cg):
    move(cg)
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r.bind(("127.0.0.1", 0))
    r.settimeout(5)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    print("ready", flush=True)
    for line in sys.stdin:
        k = int(line)
        for _ in range(k):
            tx.sendto(b"q" * 32, r.getsockname())
            r.recv(64)
        print("done %d" % k, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "churn":
        churn(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
              float(sys.argv[6]), sys.argv[7] == "1")
    elif sys.argv[1] == "trickle":
        trickle(sys.argv[2])
    else:
        sys.exit("unknown command " + sys.argv[1])
