#!/usr/bin/env python3
"""Reproducer of finding F5 (docs/reliability.md): netstacklat's
read_grouped() can spin for ever when a batched map lookup returns ENOSPC
while n < cap. N (default 260) UDP sockets, each created in a cgroup of its
own, each get one datagram; netstacklat groups by cgroup (MaxGroups 64:
448 entries, 512 hash buckets). When the first batch of 256 stops short at
a bucket that does not fit in the room left, every later call returns
ENOSPC with count 0 and the loop retries with the same room: the read
callback never returns and nothing of the plugin is dispatched any more.
It depends on the hash layout, so it takes a few attempts: loop until it
prints STALLED. Needs root. Not part of make check."""
import os, sys, time, subprocess, socket
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from ebpftest import *
N = int(sys.argv[1]) if len(sys.argv) > 1 else 260
tag = "hmg%d" % os.getpid()
root = cgroup2_root()
with Netns(tag) as ns:
    conf = ('<Netstacklat>\n NetworkNamespace "%s"\n Hooks "udp_socket_enqueued"\n Buckets false\n'
            ' GroupBy cgroup\n MaxGroups 64\n</Netstacklat>\n<Pressure>\n Host true\n Resources "cpu"\n</Pressure>' % ns.name)
    with Collectd(conf) as cd:
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "f5_sockets.py"), root, tag, str(N), "30000", ns.name],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print(p.stdout.readline().strip())
        p.stdin.write("go\n"); p.stdin.flush()
        ns.run("%s -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b'x', ('127.0.0.1', 30000+i)) for i in range(%d)]\"" % (sys.executable, N))
        print(p.stdout.readline().strip())
        n0 = len(cd.series("pressure-cpu/total_time_in_ms-some"))
        time.sleep(6)
        n1 = len(cd.series("pressure-cpu/total_time_in_ms-some"))
        cpu = subprocess.run(["ps", "-o", "pcpu=,stat=", "-p", str(cd.proc.pid)], stdout=subprocess.PIPE, text=True).stdout
        print("pressure values in 6 s:", n1 - n0, "collectd cpu:", cpu.strip(), "groups:", len([i for i in cd.idents("netstacklat") if i.endswith("/operations")]))
        print("\n".join(cd.log().splitlines()[-5:]))
        if n1 == n0:
            print("STALLED")
            print(subprocess.run("timeout 3 strace -f -c -p %d 2>&1 | head -12" % cd.proc.pid, shell=True, stdout=subprocess.PIPE, text=True).stdout)
            print(subprocess.run("gdb -p %d -batch -ex 'thread apply all bt 8' 2>/dev/null | grep -A8 -i 'read_grouped\|netstacklat' | head -30" % cd.proc.pid, shell=True, stdout=subprocess.PIPE, text=True).stdout)
        p.stdin.write("end\n"); p.stdin.flush(); p.wait()
    for i in range(N):
        try: os.rmdir(os.path.join(root, "%s-%d" % (tag, i)))
        except OSError: pass
