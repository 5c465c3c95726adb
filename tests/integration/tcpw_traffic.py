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
  tcpw_traffic.py send PORT BYTES      sender: connects, sends BYTES, prints
                                       "sent LOCALPORT", holds the
                                       connection until stdin ends
  tcpw_traffic.py many PORT N          N connections to PORT, none read
                                       (raises its RLIMIT_NOFILE for the
                                       2N + 1 descriptors); prints
                                       "connected"; on "send" one small
                                       write to each, in a burst ("sent
                                       T0 T1", its wall times); on "close"
                                       closes every receiver ("closed");
                                       exits on EOF
"""
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


def recv(port, comm):
    import os
    import select
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
            got = 0
            while select.select([c], [], [], 0.2)[0]:
                n = len(c.recv(1 << 16))
                if not n:
                    break
                got += n
            print("drained %d" % got, flush=True)
        elif cmd == "close":
            c.close()
            print("closed", flush=True)


def send(port, nbytes):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"s" * nbytes)
    print("sent %d" % s.getsockname()[1], flush=True)
    sys.stdin.read()
    s.close()


def many(port, n):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * n + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)
    senders, receivers = [], []
    for _ in range(n):
        senders.append(socket.create_connection(("127.0.0.1", port)))
        receivers.append(ls.accept()[0])
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


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "recv":
        recv(port, sys.argv[3])
    elif mode == "send":
        send(port, int(sys.argv[3]))
    elif mode == "many":
        many(port, int(sys.argv[3]))
    elif mode == "stall":
        stall(port, int(sys.argv[3]))
    else:
        bulk(port, float(sys.argv[3]), mode == "clamp")
