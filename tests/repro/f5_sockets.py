import os, socket, sys, time
# In netns b: for each of N cgroups, move ourselves in, create a UDP socket
# bound to port base+i, move back; then receive one datagram per socket
# sent by the caller.
root, tag, n, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/run/netns/" + sys.argv[5], os.O_RDONLY)
assert libc.setns(fd, 0x40000000) == 0
socks = []
for i in range(n):
    d = os.path.join(root, "%s-%d" % (tag, i))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cgroup.procs"), "w") as f: f.write(str(os.getpid()))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", base + i))
    socks.append(s)
with open(os.path.join(root, "cgroup.procs"), "w") as f: f.write(str(os.getpid()))
print("ready", flush=True)
sys.stdin.readline()
got = 0
for s in socks:
    s.settimeout(5)
    try:
        s.recv(100); got += 1
    except socket.timeout:
        pass
print("got", got, flush=True)
sys.stdin.readline()
