"""Traffic for test_tcp_window, run inside a network namespace with
`ip netns exec`. Not a test program itself (tests/run runs test_* only).

  tcpw_traffic.py clamp PORT SECONDS   reader reads for the first half, then
                                       stops and shrinks SO_RCVBUF while the
                                       sender keeps sending: prunes, clamps
  tcpw_traffic.py read PORT SECONDS    reader keeps reading: no clamps
  tcpw_traffic.py stall PORT BYTES     sender sends BYTES and stops, reader
                                       does not read; on "read" from stdin the
                                       reader drains them; exits on EOF
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


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "stall":
        stall(port, int(sys.argv[3]))
    else:
        bulk(port, float(sys.argv[3]), mode == "clamp")
