#!/usr/bin/env python3
"""Traffic for the netstacklat tests, run inside the test's namespaces.

  recv-udp ADDR PORT N [DELAY_MS [peek]]
                                 receive N datagrams, print the count; with
                                 DELAY_MS: before each, wait until one is
                                 readable and sleep DELAY_MS; with peek:
                                 recv(MSG_PEEK) before each read, as a
                                 reader sizing its buffer does
  send-udp ADDR PORT N           send N datagrams of 64 bytes, print the
                                 sending port after the first
  recv-udp-after ADDR PORT N     recv-udp that reads nothing until a line
                                 comes on stdin (the sender is done): no
                                 read races an enqueue, so the tracepoint
                                 flavour of udp_socket_enqueued measures
                                 every datagram (a reader that takes one
                                 before the handler looks makes it
                                 skipped-raced, and GroupBy interface cannot
                                 count it at all)
  recv-udp-many ADDR JSON        recv-udp-after for several sockets: JSON
                                 is [[PORT, N, CGDIR], ...]; each socket is
                                 made with the process in cgroup directory
                                 CGDIR ("": where it started; a socket's
                                 cgroup is its maker's at socket(2)), then
                                 the process goes back; after the line on
                                 stdin receives N on each, prints the
                                 counts (JSON)
  send-udp-many ADDR JSON        send-udp to each [PORT, N] of JSON in turn
  spin-udp ADDR PORT N CPU       receive N datagrams pinned to CPU, spinning
                                 on non-blocking reads (a reader that takes
                                 each datagram the moment it is queued)
  pace-udp ADDR PORT N CPU       send N datagrams of 64 bytes pinned to CPU,
                                 0.2 ms apart
  recv-tcp ADDR PORT M DELAY_MS [peek]
                                 accept one connection; M times: wait until
                                 a message is readable, sleep DELAY_MS,
                                 (with peek: recv(MSG_PEEK) it first,) read
                                 it, answer one byte
  send-tcp ADDR PORT M           connect, print the local port, send M
                                 messages of 100 bytes, each after the
                                 previous one was answered
  count-udp ADDR PORT N          receive until N datagrams came or none for
                                 5 s, with a 4 MiB buffer (no drops while
                                 several senders burst); print the count
  recv-tcp-jitter ADDR PORT M    recv-tcp with a random wait before each
                                 read (log-uniform, 4 us to 1 ms, fixed
                                 seed): queueing delays over many buckets
  sink-udp ADDR PORT SECONDS     receive datagrams for SECONDS, with receive
                                 timestamps on (SO_TIMESTAMPNS), print the count
  send-vlan ADDR PORT N IFACE DSTMAC TAGS
                                 send N UDP datagrams over IPv4 as Ethernet
                                 frames written on IFACE (a packet socket),
                                 to DSTMAC, in VLAN tags that stay in the
                                 packet: TAGS is the tags' protocols from
                                 the outside in (8100: 802.1Q, 88a8:
                                 802.1ad), each with VLAN ID 0, which the
                                 receiver takes out without a VLAN device
  stream-udp ADDR PORT SECONDS   send datagrams for SECONDS, 15,000 a
                                 second by the clock (caught up after a
                                 late wake-up, at most 0.1 s behind): the
                                 same rate whatever the machine's load
  blast-udp ADDR PORT N CPU      send N datagrams of 64 bytes pinned to CPU,
                                 back to back (two CPUs on one group at once)
  proxy-tcp ADDR PORT M DELAY_MS CPU
                                 a proxy's loop pinned to CPU: accept two
                                 connections; M times: read the first's
                                 message at once, the second's DELAY_MS
                                 after it is readable; answer each
  send-tcp2 ADDR PORT M          connect twice; M times: a message of 100
                                 bytes on each, then wait for both answers
  recv-tcp-waits ADDR PORT M SHAPE
                                 recv-tcp whose wait before each read
                                 follows SHAPE (mix: 18 ms before 7 reads
                                 in 10, 30 ms before 3; bimodal: none or
                                 2 ms, half each; tail: 0.2 ms, and 40 ms
                                 before 1% of the reads), with receive
                                 timestamps on (SO_TIMESTAMPNS): prints
                                 each read's wait as the kernel's receive
                                 time to just before and to just after
                                 recvmsg(), in ns (JSON {"lo": [..],
                                 "hi": [..]}): the witness of the plugin's
                                 tcp_socket_read latency
A line "ready" on stdout tells that a receiver listens. With NSL_COMM in
the environment, the program first names itself so (prctl(PR_SET_NAME),
its bytes as they are: a tenant's choice of comm)."""
import json
import os
import random
import struct
import select
import socket
import sys
import time


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def listen(fam, addr, port, backlog):
    """A listening TCP socket; says "ready"."""
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(backlog)
    print("ready", flush=True)
    return ls


def ip_checksum(b):
    total = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def vlan_frame(src_mac, dst_mac, tags, src, dst, sport, dport, payload):
    """An Ethernet frame: the tags (protocol, TCI 0: VLAN 0) and an IPv4
    UDP datagram (no UDP checksum: allowed over IPv4)."""
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    l2 = dst_mac + src_mac
    for t in tags:
        l2 += struct.pack("!H", t) + b"\0\0"
    return l2 + struct.pack("!H", 0x0800) + ip + udp


def send_vlan(addr, port, n, iface, dst_mac, tags):
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect((addr, port))
    src = probe.getsockname()[0]
    with open("/sys/class/net/%s/address" % iface) as f:
        src_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    frame = vlan_frame(src_mac, bytes.fromhex(dst_mac.replace(":", "")),
                       [int(t, 16) for t in tags.split(",")], src, addr,
                       probe.getsockname()[1], port, b"v" * 64)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for _ in range(n):
        s.send(frame)
        time.sleep(0.0005)


def move_to(cgdir):
    with open(os.path.join(cgdir, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def home_cgroup():
    """The cgroup v2 directory this process is in."""
    with open("/proc/self/mountinfo") as f:
        root = next(l.split(" - ")[0].split()[4] for l in f
                    if l.split(" - ")[1].split()[0] == "cgroup2")
    with open("/proc/self/cgroup") as f:
        rel = next(l for l in f if l.startswith("0::")).strip()[3:]
    return root + rel


def recv_udp_many(addr, specs):
    fam, home, socks = family(addr), home_cgroup(), []
    for port, n, cgdir in specs:
        if cgdir:
            move_to(cgdir)
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if cgdir:
            move_to(home)
        s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        s.bind((addr, port))
        socks.append([s, n, 0])
    print("ready", flush=True)
    sys.stdin.readline()  # the sender is done
    end = time.monotonic() + 20
    while any(got < n for _, n, got in socks):
        left = end - time.monotonic()
        if left <= 0:
            break
        for s in select.select([s for s, n, got in socks if got < n], [], [], left)[0]:
            s.recv(2048)
            next(x for x in socks if x[0] is s)[2] += 1
    print(json.dumps([got for _, _, got in socks]), flush=True)
    if any(got < n for _, n, got in socks):
        sys.exit("recv-udp-many: timed out")


def main():
    if sys.argv[1] == "recv-udp-many":
        return recv_udp_many(sys.argv[2], json.loads(sys.argv[3]))
    if sys.argv[1] == "send-udp-many":
        s = socket.socket(family(sys.argv[2]), socket.SOCK_DGRAM)
        for port, n in json.loads(sys.argv[3]):
            for _ in range(n):
                s.sendto(b"u" * 64, (sys.argv[2], port))
                time.sleep(0.0005)
        return
    cmd, addr, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    fam = family(addr)
    if cmd in ("recv-udp", "recv-udp-after"):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if cmd == "recv-udp-after":
            s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        s.bind((addr, port))
        print("ready", flush=True)
        if cmd == "recv-udp-after":
            sys.stdin.readline()  # the sender is done
        s.settimeout(20)
        delay = float(sys.argv[5]) / 1000.0 if len(sys.argv) > 5 else 0
        peek = len(sys.argv) > 6 and sys.argv[6] == "peek"
        got = 0
        while got < n:
            if delay:
                select.select([s], [], [], 20)
                time.sleep(delay)
            if peek:
                s.recv(2048, socket.MSG_PEEK)
            s.recv(2048)
            got += 1
        print(got, flush=True)
    elif cmd == "spin-udp":
        os.sched_setaffinity(0, {int(sys.argv[5])})
        s = socket.socket(fam, socket.SOCK_DGRAM)
        # Room for what arrives while this reader is not running (a loaded
        # host): no drops, so every datagram is queued.
        s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        s.bind((addr, port))
        print("ready", flush=True)
        got, end = 0, time.monotonic() + 30
        last = time.monotonic()
        while got < n and time.monotonic() < end:
            try:
                s.recv(2048, socket.MSG_DONTWAIT)
                got += 1
                last = time.monotonic()
            except BlockingIOError:
                if got and time.monotonic() - last > 3:
                    break  # the sender is done; the rest was dropped
        print(got, flush=True)
    elif cmd == "count-udp":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        s.bind((addr, port))
        print("ready", flush=True)
        s.settimeout(5)
        got = 0
        try:
            while got < n:
                s.recv(2048)
                got += 1
        except socket.timeout:
            pass
        print(got, flush=True)
    elif cmd == "sink-udp":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        # Timestamps on from now, not only once the plugin holds its socket.
        s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS (asm-generic, x86)
        s.bind((addr, port))
        s.settimeout(0.2)
        print("ready", flush=True)
        got, end = 0, time.time() + n
        while time.time() < end:
            try:
                s.recv(2048)
                got += 1
            except socket.timeout:
                pass
        print(got, flush=True)
    elif cmd == "send-vlan":
        send_vlan(addr, port, n, sys.argv[5], sys.argv[6], sys.argv[7])
    elif cmd == "stream-udp":
        # Paced by the clock, not by sleep(): 20 datagrams a sleep of 1 ms
        # sent 15-20k a second on a quiet machine and fewer under load, and
        # sample_every_auto_keeps_the_cost_budget compares two streams.
        rate = 15000
        s = socket.socket(fam, socket.SOCK_DGRAM)
        t0 = time.time()
        end, sent = t0 + n, 0
        while True:
            now = time.time()
            if now >= end:
                break
            due = int((now - t0) * rate)
            if due - sent > rate // 10:  # more than 0.1 s behind: let it go
                t0 += (due - sent - rate // 10) / rate
                due = sent + rate // 10
            while sent < due:
                s.sendto(b"s" * 64, (addr, port))
                sent += 1
            time.sleep(0.001)
    elif cmd == "blast-udp":
        os.sched_setaffinity(0, {int(sys.argv[5])})
        s = socket.socket(fam, socket.SOCK_DGRAM)
        for _ in range(n):
            s.sendto(b"b" * 64, (addr, port))
    elif cmd in ("send-udp", "pace-udp"):
        if cmd == "pace-udp":
            os.sched_setaffinity(0, {int(sys.argv[5])})
        gap = 0.0002 if cmd == "pace-udp" else 0.0005
        s = socket.socket(fam, socket.SOCK_DGRAM)
        for i in range(n):
            s.sendto(b"u" * 64, (addr, port))
            if i == 0:
                print(s.getsockname()[1], flush=True)
            time.sleep(gap)
    elif cmd in ("recv-tcp", "recv-tcp-jitter"):
        rng = random.Random(13)
        delay = float(sys.argv[5]) / 1000.0 if cmd == "recv-tcp" else 0
        peek = cmd == "recv-tcp" and len(sys.argv) > 6 and sys.argv[6] == "peek"
        c, _ = listen(fam, addr, port, 1).accept()
        for _ in range(n):
            if cmd == "recv-tcp-jitter":
                time.sleep(2 ** rng.uniform(-18, -10))  # 3.8 us .. 0.98 ms
            select.select([c], [], [], 20)
            if delay:
                time.sleep(delay)
            if peek:
                c.recv(100, socket.MSG_PEEK)
            data = c.recv(100)
            if not data:
                break
            c.send(b"k")
        # Wait for the peer's FIN, then close.
        c.settimeout(20)
        c.recv(1)
        c.close()
        print(n, flush=True)
    elif cmd == "recv-tcp-waits":
        shape, rng = sys.argv[5], random.Random(29)
        if shape == "mix":
            waits = [0.018 if i % 10 < 7 else 0.030 for i in range(n)]
            for b in range(0, n, 10):  # 7 and 3 in each 10, in any order
                part = waits[b:b + 10]
                rng.shuffle(part)
                waits[b:b + 10] = part
        elif shape == "bimodal":
            waits = [rng.choice((0, 0.002)) for _ in range(n)]
        elif shape == "tail":
            slow = set(rng.sample(range(n), max(1, n // 100)))
            waits = [0.040 if i in slow else 0.0002 for i in range(n)]
        else:
            raise SystemExit("recv-tcp-waits: unknown shape %s" % shape)
        so_timestampns = 35  # SO_TIMESTAMPNS(_OLD), also SCM_TIMESTAMPNS
        c, _ = listen(fam, addr, port, 1).accept()
        c.setsockopt(socket.SOL_SOCKET, so_timestampns, 1)
        lo, hi = [], []
        for w in waits:
            select.select([c], [], [], 20)
            if w:
                time.sleep(w)
            t0 = time.clock_gettime_ns(time.CLOCK_REALTIME)
            data, anc, _, _ = c.recvmsg(100, 64)
            t1 = time.clock_gettime_ns(time.CLOCK_REALTIME)
            if not data:
                raise SystemExit("recv-tcp-waits: the sender closed early")
            rx = [struct.unpack("qq", d[:16]) for lvl, typ, d in anc
                  if lvl == socket.SOL_SOCKET and typ == so_timestampns]
            if not rx:
                raise SystemExit("recv-tcp-waits: no receive timestamp")
            ts = rx[0][0] * 1000000000 + rx[0][1]
            lo.append(t0 - ts)
            hi.append(t1 - ts)
            c.send(b"k")
        c.settimeout(20)
        c.recv(1)
        c.close()
        print(json.dumps({"lo": lo, "hi": hi}), flush=True)
    elif cmd == "proxy-tcp":
        # A proxy's loop on one CPU: two connections (the client's, accepted
        # first, and the backend's) read in turn, the first at once, the
        # second DELAY ms after its data is there.
        delay, cpu = float(sys.argv[5]) / 1000.0, int(sys.argv[6])
        os.sched_setaffinity(0, {cpu})
        ls = listen(fam, addr, port, 2)
        a, _ = ls.accept()
        b, _ = ls.accept()
        for _ in range(n):
            select.select([a], [], [], 20)
            a.recv(100)
            a.send(b"k")
            select.select([b], [], [], 20)
            time.sleep(delay)
            b.recv(100)
            b.send(b"k")
        for c in (a, b):
            c.settimeout(20)
            c.recv(1)
            c.close()
        print(n, flush=True)
    elif cmd == "send-tcp2":
        a = socket.create_connection((addr, port), timeout=20)
        b = socket.create_connection((addr, port), timeout=20)
        print(a.getsockname()[1], flush=True)
        for _ in range(n):
            a.send(b"t" * 100)
            b.send(b"t" * 100)
            a.recv(1)
            b.recv(1)
        a.close()
        b.close()
    elif cmd == "send-tcp":
        c = socket.create_connection((addr, port), timeout=20)
        print(c.getsockname()[1], flush=True)
        for _ in range(n):
            c.send(b"t" * 100)
            c.recv(1)
        c.close()
    else:
        sys.exit("unknown command " + cmd)


def set_comm():
    name = os.environb.get(b"NSL_COMM")
    if name:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(15, ctypes.c_char_p(name), 0, 0, 0):  # PR_SET_NAME
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NAME)")


if __name__ == "__main__":
    set_comm()
    main()
