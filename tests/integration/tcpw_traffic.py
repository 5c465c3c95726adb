"""Traffic for test_tcp_window, run inside a network namespace with
`ip netns exec`. Not a test program itself (tests/run runs test_* only).

  tcpw_traffic.py clamp PORT SECONDS   reader reads for the first half, then
                                       stops and shrinks SO_RCVBUF while the
                                       sender keeps sending: prunes, clamps
  tcpw_traffic.py read PORT SECONDS    reader keeps reading: no clamps
  tcpw_traffic.py stall PORT BYTES     sender sends BYTES and stops, reader
                                       does not read; on "read" from stdin the
                                       reader drains them; exits on EOF
  tcpw_traffic.py recv PORT COMM       receiver alone, named COMM (its comm,
                                       as with prctl(PR_SET_NAME)): prints
                                       "listening PID", accepts one
                                       connection without reading, prints
                                       "accepted INODE PEERPORT"; then on
                                       stdin "read" drains what is queued
                                       ("drained N"), "close" closes the
                                       socket unread ("closed"); exits on EOF
  tcpw_traffic.py send PORT BYTES [HOST]
                                       sender: connects (to 127.0.0.1, or
                                       HOST: "fe80::1%veth0" names the
                                       scope), sends BYTES, prints "sent
                                       LOCALPORT", holds the connection
                                       until stdin ends
  tcpw_traffic.py bound PORT DEV       receivers bound to a device: an IPv4
                                       listener on PORT with SO_BINDTODEVICE
                                       DEV and an IPv6 one on [::]:PORT (its
                                       link-local children are bound by the
                                       kernel); prints "listening", then
                                       "accepted FAMILY PEERPORT" for each
                                       connection, never reading; on "read"
                                       drains them all ("drained N"); exits
                                       on EOF
  tcpw_traffic.py many PORT N          N connections to PORT, none read
                                       (raises its RLIMIT_NOFILE for the
                                       2N + 1 descriptors); prints
                                       "connected"; on "send" one small
                                       write to each, in a burst ("sent
                                       T0 T1", its wall times); on "close"
                                       closes every receiver ("closed");
                                       exits on EOF
  tcpw_traffic.py busy PORT N RATE     a busy host: N connections, each
                                       receiving one 16-byte heartbeat a
                                       second (spread over the second), read
                                       at once by an epoll loop, plus RATE new
                                       connections a second that send one
                                       message, are read and closed (RST, no
                                       TIME_WAIT); prints "connected"; on
                                       "stall" the first receiver stops
                                       reading and is sent 3,000 bytes, no
                                       more heartbeats ("stalled LPORT
                                       RPORT"); on "read" it drains them
                                       ("drained N"); on "count" prints
                                       "count HEARTBEATS NEW" so far; exits
                                       on EOF
"""
import os
import select
import socket
import sys
import threading
import time


def pair(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    s = socket.create_connection(("127.0.0.1", port))
    c, _ = ls.accept()
    ls.close()
    return s, c


def bulk(port, secs, shrink):
    s, c = pair(port)
    half = time.time() + secs / 2
    end = time.time() + secs

    def reader():
        c.settimeout(0.1)
        while time.time() < (half if shrink else end):
            try:
                c.recv(1 << 16)
            except socket.timeout:
                pass
        if shrink:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

    t = threading.Thread(target=reader)
    t.start()
    s.settimeout(0.05)
    buf = b"x" * 65536
    while time.time() < end:
        try:
            s.send(buf)
        except socket.timeout:
            pass
    t.join()
    s.close()
    c.close()


def stall(port, nbytes):
    s, c = pair(port)
    s.sendall(b"y" * nbytes)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "read":
            got = 0
            while got < nbytes:
                got += len(c.recv(1 << 16))
            print("drained %d" % got, flush=True)
    s.close()
    c.close()


def drain(socks):
    got = 0
    for c in socks:
        while select.select([c], [], [], 0.2)[0]:
            n = len(c.recv(1 << 16))
            if not n:
                break
            got += n
    return got


def recv(port, comm):
    with open("/proc/self/comm", "w") as f:
        f.write(comm)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    print("listening %d" % os.getpid(), flush=True)
    c, peer = ls.accept()
    ls.close()
    print("accepted %d %d" % (os.fstat(c.fileno()).st_ino, peer[1]), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "read":
            print("drained %d" % drain([c]), flush=True)
        elif cmd == "close":
            c.close()
            print("closed", flush=True)


def send(port, nbytes, host="127.0.0.1"):
    s = socket.create_connection((host, port))
    s.sendall(b"s" * nbytes)
    print("sent %d" % s.getsockname()[1], flush=True)
    sys.stdin.read()
    s.close()


def bound(port, dev):
    l4 = socket.socket()
    l4.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
    l6 = socket.socket(socket.AF_INET6)
    l6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    for ls, addr in ((l4, "0.0.0.0"), (l6, "::")):
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((addr, port))
        ls.listen(8)
    print("listening", flush=True)
    conns, line = [], b""
    while True:
        for r in select.select([0, l4, l6], [], [])[0]:
            if r != 0:
                c, peer = r.accept()
                conns.append(c)
                print("accepted %d %d" % (4 if r is l4 else 6, peer[1]), flush=True)
                continue
            chunk = os.read(0, 4096)
            if not chunk:
                return
            line += chunk
            while b"\n" in line:
                cmd, line = line.split(b"\n", 1)
                if cmd.strip() == b"read":
                    print("drained %d" % drain(conns), flush=True)


def connections(port, n, fds, backlog):
    """A listener on PORT and n connections to it, after raising
    RLIMIT_NOFILE for fds descriptors (up to the hard limit): (listener,
    senders, receivers)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < fds:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(fds, hard), hard))
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(backlog)
    senders, receivers = [], []
    for _ in range(n):
        senders.append(socket.create_connection(("127.0.0.1", port)))
        receivers.append(ls.accept()[0])
    return ls, senders, receivers


def many(port, n):
    ls, senders, receivers = connections(port, n, 2 * n + 64, 128)
    ls.close()
    print("connected", flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "send":
            t0 = time.time()
            for s in senders:
                s.send(b"z" * 100)
            print("sent %.6f %.6f" % (t0, time.time()), flush=True)
        elif cmd == "close":
            for c in receivers:
                c.close()
            print("closed", flush=True)


def busy(port, n, rate):
    import struct
    ls, senders, receivers = connections(port, n, 2 * n + 20 * rate + 1024, 4096)
    ls.setblocking(False)
    ep = select.epoll()
    kind = {}  # fd: "hb" (a heartbeat receiver), "new", "listen", "stdin"
    for c in receivers:
        c.setblocking(False)
        ep.register(c.fileno(), select.EPOLLIN)
        kind[c.fileno()] = ("hb", c)
    ep.register(ls.fileno(), select.EPOLLIN)
    kind[ls.fileno()] = ("listen", ls)
    ep.register(sys.stdin.fileno(), select.EPOLLIN)
    rst = struct.pack("ii", 1, 0)
    print("connected", flush=True)
    stalled = None
    beats = news = 0
    start = time.time()
    hb_at = nw_at = 0  # heartbeats and new connections made so far
    clients = []
    while True:
        now = time.time() - start
        # Keep to the schedule, N heartbeats and RATE connections a second
        # spread evenly, without making up for more than 0.1 s that a busy
        # machine held the loop back (that would double the rate).
        hb_at = max(hb_at, int((now - 0.1) * n))
        nw_at = max(nw_at, int((now - 0.1) * rate))
        due = min(int(now * n), hb_at + n)
        while hb_at < due:
            s = senders[hb_at % n]
            if s is not stalled:
                s.send(b"h" * 16)
                beats += 1
            hb_at += 1
        due = min(int(now * rate), nw_at + rate)
        while nw_at < due:
            c = socket.create_connection(("127.0.0.1", port))
            c.send(b"n" * 16)
            clients.append(c)
            nw_at += 1
        while len(clients) > rate:
            clients.pop(0).close()
        for fd, _ in ep.poll(0.002):
            what, obj = kind.get(fd, (None, None))
            if what == "hb":
                if obj.recv(65536) == b"":
                    ep.unregister(fd)
                    del kind[fd]
            elif what == "new":
                obj.recv(65536)
                obj.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, rst)
                ep.unregister(fd)
                del kind[fd]
                obj.close()
                news += 1
            elif what == "listen":
                while True:
                    try:
                        a = ls.accept()[0]
                    except BlockingIOError:
                        break
                    a.setblocking(False)
                    ep.register(a.fileno(), select.EPOLLIN)
                    kind[a.fileno()] = ("new", a)
            elif fd == sys.stdin.fileno():
                line = sys.stdin.readline()
                if not line:
                    return
                cmd = line.strip()
                if cmd == "stall":
                    stalled, r = senders[0], receivers[0]
                    ep.unregister(r.fileno())
                    stalled.sendall(b"s" * 3000)
                    print("stalled %d %d" % (r.getsockname()[1],
                                             r.getpeername()[1]), flush=True)
                elif cmd == "read":
                    r, got = receivers[0], 0
                    while got < 3000:
                        try:
                            got += len(r.recv(65536))
                        except BlockingIOError:
                            time.sleep(0.01)
                    print("drained %d" % got, flush=True)
                elif cmd == "count":
                    print("count %d %d" % (beats, news), flush=True)


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "recv":
        recv(port, sys.argv[3])
    elif mode == "send":
        send(port, int(sys.argv[3]), *sys.argv[4:5])
    elif mode == "bound":
        bound(port, sys.argv[3])
    elif mode == "many":
        many(port, int(sys.argv[3]))
    elif mode == "busy":
        busy(port, int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "stall":
        stall(port, int(sys.argv[3]))
    else:
        bulk(port, float(sys.argv[3]), mode == "clamp")
