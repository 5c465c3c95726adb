"""Helpers for the integration tests: run Debian's real collectd with the
built plugin, read back what it dispatched (csv plugin), make network
namespaces, cgroups and traffic. Test programs print one line per case:
PASS: / FAIL: / SKIP: (see tests/run)."""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))
PLUGIN_SO = os.path.join(BUILD, "ebpf.so")
COLLECTD = os.environ.get("COLLECTD", "/usr/sbin/collectd")
STOCK = os.environ.get("COLLECTD_PLUGIN_DIR", "/usr/lib/collectd")


class Skip(Exception):
    pass


class Fail(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Suite:
    """Runs the cases registered with @suite.case, printing one line each."""

    def __init__(self, name, need_root=True):
        self.name = name
        self.cases = []
        self.need_root = need_root

    def case(self, fn):
        self.cases.append(fn)
        return fn

    def run(self):
        failed = 0
        only = os.environ.get("CASE")
        for fn in self.cases:
            cname = "%s.%s" % (self.name, fn.__name__)
            if only and only not in cname:
                continue
            if self.need_root and os.geteuid() != 0:
                print("SKIP: %s (needs root)" % cname, flush=True)
                continue
            t0 = time.time()
            try:
                fn()
                print("PASS: %s (%.1fs)" % (cname, time.time() - t0), flush=True)
            except Skip as e:
                print("SKIP: %s (%s)" % (cname, e), flush=True)
            except Exception as e:  # noqa: BLE001 - report every failure
                failed += 1
                traceback.print_exc(file=sys.stdout)
                print("FAIL: %s: %s" % (cname, e), flush=True)
        sys.exit(1 if failed else 0)


# --------------------------------------------------------------- collectd

class Collectd:
    """One collectd process with the plugin; `ebpf_conf` is the body of
    <Plugin ebpf>. Values are read back from the csv plugin's files."""

    def __init__(self, ebpf_conf, interval=1, extra="", load_ebpf=True, wrapper=(),
                 stock=(), env=None):
        self.wrapper = list(wrapper)  # e.g. setpriv with fewer capabilities
        self.env = dict(os.environ, **env) if env else None  # added variables
        self.dir = tempfile.mkdtemp(prefix="ebpf-test-")
        self.interval = interval
        self.proc = None
        self.logfile = os.path.join(self.dir, "collectd.log")
        self.csvdir = os.path.join(self.dir, "csv")
        plugins = os.path.join(self.dir, "plugins")
        os.makedirs(plugins)
        for p in ("logfile", "csv", "unixsock") + tuple(stock):
            shutil.copy(os.path.join(STOCK, p + ".so"), plugins)
        shutil.copy(PLUGIN_SO, plugins)
        self.conf = os.path.join(self.dir, "collectd.conf")
        body = ebpf_conf if ebpf_conf is not None else ""
        with open(self.conf, "w") as f:
            f.write("""Interval %s
Hostname "test"
BaseDir "%s"
PIDFile "%s/collectd.pid"
PluginDir "%s"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin logfile
<Plugin logfile>
  LogLevel debug
  File "%s"
</Plugin>
LoadPlugin csv
<Plugin csv>
  DataDir "%s"
  StoreRates false
</Plugin>
%s
""" % (interval, self.dir, self.dir, plugins, self.logfile, self.csvdir, extra))
            if load_ebpf:
                f.write("LoadPlugin ebpf\n<Plugin ebpf>\n%s\n</Plugin>\n" % body)

    # -- process
    def start(self, wait_init=True):
        self.proc = subprocess.Popen(self.wrapper + [COLLECTD, "-f", "-C", self.conf],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT, env=self.env)
        if wait_init:
            wait_for(lambda: "Initialization complete" in self.log()
                     or self.proc.poll() is not None, 30, "collectd init")
            check(self.proc.poll() is None,
                  "collectd exited during init:\n" + self.log())
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def test_run(self):
        """collectd -T: config, init, one read. Returns (rc, log)."""
        r = subprocess.run([COLLECTD, "-T", "-C", self.conf], timeout=60,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return r.returncode, self.log() + r.stdout.decode(errors="replace")

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()
        if not os.environ.get("KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def log(self):
        try:
            with open(self.logfile, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    # -- values
    def series(self, ident):
        """All (time, value) of one identifier "plugin-inst/type-ti",
        oldest first."""
        out = []
        pat = os.path.join(self.csvdir, "*", glob.escape(ident) +
                           "-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]")
        for fn in sorted(glob.glob(pat)):
            with open(fn) as f:
                for line in f:
                    if line[0].isdigit():
                        t, v = line.strip().split(",")[:2]
                        out.append((float(t), float(v)))
        out.sort()
        return out

    def latest(self, ident):
        s = self.series(ident)
        return s[-1] if s else None

    def idents(self, prefix=""):
        """Every identifier dispatched so far, as "plugin-inst/type-ti"."""
        out = set()
        for fn in glob.glob(os.path.join(self.csvdir, "*", "*", "*")):
            m = re.search(r"([^/]+/[^/]+)-\d{4}-\d\d-\d\d$", fn)
            if m and m.group(1).startswith(prefix):
                out.add(m.group(1))
        return out

    def wait_series(self, ident, n=1, timeout=15):
        wait_for(lambda: len(self.series(ident)) >= n, timeout,
                 "%d values of %s" % (n, ident), self)
        return self.series(ident)

    def prog_ids(self):
        """IDs of the BPF programs the collectd process holds."""
        return held_prog_ids(self.proc.pid)


class NotificationSink:
    """Notifications as collectd's exec plugin hands them to a
    NotificationExec program: one file each, "Key: value" header lines
    (Severity, Time, Host, Plugin, PluginInstance, Type, TypeInstance, then
    one line per meta data field: strings as they are, integers in decimal,
    doubles as %e), an empty line, the message. exec refuses to run
    programs as root, so the program runs as `nobody` and writes into a
    directory of its own. Pass stock=("exec",) and extra=sink.conf() to
    Collectd."""

    def __init__(self, user="nobody"):
        self.user = user
        self.dir = tempfile.mkdtemp(prefix="ebpf-notif-")
        os.chmod(self.dir, 0o1777)
        self.script = os.path.join(self.dir, "catch.sh")
        with open(self.script, "w") as f:
            f.write('#!/bin/sh\ncat > "%s/.n.$$" && mv "%s/.n.$$" "%s/n.$$"\n'
                    % (self.dir, self.dir, self.dir))
        os.chmod(self.script, 0o755)

    def conf(self):
        return ('LoadPlugin exec\n<Plugin exec>\n  NotificationExec "%s" "%s"\n'
                '</Plugin>\n' % (self.user, self.script))

    def read(self):
        """Every notification so far, oldest first, as dicts of the header
        fields (values as text) with the message under "message"."""
        out = []
        for fn in glob.glob(os.path.join(self.dir, "n.*")):
            with open(fn, errors="replace") as f:
                head, _, msg = f.read().partition("\n\n")
            d = {}
            for line in head.splitlines():
                k, _, v = line.partition(": ")
                d[k] = v
            d["message"] = msg.rstrip("\n")
            out.append(d)
        out.sort(key=lambda d: float(d.get("Time", 0)))
        return out

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def name_rule(path):
    """The naming rule for a cgroup (collectd-ebpf(5), "Names of cgroups"),
    written again from its text:
    lower case, outside [a-z0-9_.] -> "_"; over 96 characters,
    <head>..<fnv1a32 of the path, 8 hex>_<leaf, at most 48>, 96 in all."""
    path = path.strip("/")

    def clean(s):
        return "".join(c if c in "abcdefghijklmnopqrstuvwxyz0123456789_." else "_"
                       for c in s.lower())
    if len(path) <= 96:
        return clean(path)
    leaf = path.rsplit("/", 1)[-1][:48]
    return clean(path[:96 - 11 - len(leaf)]) + "..%08x_" % path_hash(path) + clean(leaf)


def path_hash(path):
    """FNV-1a-32 of the path without leading and trailing "/"."""
    h = 2166136261
    for b in path.strip("/").encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def shared_name(path):
    """The name (collectd-ebpf(5), "Names of cgroups") of a source whose
    name by the rule another source in use has too: the name (cut to 87
    characters) + "_<path hash>"."""
    return name_rule(path)[:87] + "_%08x" % path_hash(path)


# A flavour's reason that is the kernel's own word that the flavour is
# absent: what the plugin's probe (an empty program on the same target)
# met, or a hook that has no such flavour by design. A real program the
# verifier rejected, or an attach that failed after the probe passed, is
# not: that is the plugin's fault.
_ABSENT = re.compile(r"^(?:(?:fentry|fexit|tp_btf|raw_tp|kprobe) program does not load: "
                     r"|cannot attach to \S+: |the kernel has no |this hook has no such flavour"
                     r"|not tried \(AttachMode\)|kernel BTF not available|none of its targets exist)")


def require_hook(cd, hook, feature="netstacklat"):
    """Returns the flavour hook attached with. Skips only when the kernel
    states that every flavour of it is absent (the plugin's WARNING gives
    each flavour's reason); fails, with the plugin's reason, when the plugin
    did not load or attach what it should have."""
    log = cd.log()
    m = re.search(r"%s: hook %s attached with the (\w+) flavour" % (feature, hook), log)
    if m:
        return m.group(1)
    m = re.search(r"%s: hook %s is unavailable on this kernel: (.*)" % (feature, hook), log)
    if not m:
        raise Fail("hook %s: the plugin said neither that it attached nor why not:\n%s"
                   % (hook, "\n".join(log.splitlines()[-30:])))
    why = m.group(1).strip()
    parts = re.split(r"; (?=(?:fentry|tracepoint|kprobe): )", why)
    reasons = [re.sub(r"^(?:fentry|tracepoint|kprobe): ", "", x) for x in parts]
    if reasons and all(_ABSENT.search(r) for r in reasons):
        raise Skip("the kernel has no flavour of %s: %s" % (hook, why))
    raise Fail("hook %s did not attach: %s\n%s" % (hook, why, "\n".join(
        l for l in log.splitlines() if "libbpf" in l or "rejected" in l or "verifier" in l)[-3000:]))


# netstacklat's skip reasons: operations-skipped-<reason>, beside operations.
NSL_SKIPS = ("no_timestamp", "not_rx_timestamp", "future", "map_full", "hol_blocked", "raced")


def nsl_ops(cd, inst):
    """The latest netstacklat-<inst>/operations (events measured), or None."""
    v = cd.latest("netstacklat-%s/operations" % inst)
    return v[1] if v else None


def nsl_seen(cd, inst):
    """Events the hook saw: measured plus skipped, whatever the reason (a
    datagram the tracepoint flavour of udp_socket_enqueued found already
    read is skipped-raced). None before the first value."""
    n = nsl_ops(cd, inst)
    if n is None:
        return None
    for r in NSL_SKIPS:
        v = cd.latest("netstacklat-%s/operations-skipped-%s" % (inst, r))
        n += v[1] if v else 0
    return n


def held_prog_ids(pid):
    ids = set()
    for fd in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(fd) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def live_prog_ids():
    ids = set()
    r = subprocess.run(["bpftool", "prog", "show"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    for line in r.stdout.splitlines():
        m = re.match(r"^(\d+): ", line)
        if m:
            ids.add(int(m.group(1)))
    return ids


def wait_for(pred, timeout, what, cd=None):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.1)
    extra = ("\ncollectd log:\n" + cd.log()[-4000:]) if cd else ""
    raise Fail("timed out after %ss waiting for %s%s" % (timeout, what, extra))


# --------------------------------------------------------------- witnesses

def read_psi(path):
    """{'some': {'avg10':..,'total':..}, 'full': {...}} of a PSI file."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            out[parts[0]] = {k: float(v) for k, v in
                             (p.split("=") for p in parts[1:])}
    return out


def cgroup2_root():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


class Cgroup:
    """A cgroup v2 group below the root that removes itself."""

    def __init__(self, name):
        root = cgroup2_root()
        if not root:
            raise Skip("no cgroup2 mount")
        self.rel = name
        self.path = os.path.join(root, name)
        os.makedirs(self.path, exist_ok=True)

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        root = os.path.dirname(self.path)
        # Move any process left back to the root, then rmdir.
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                pids = f.read().split()
            for p in pids:
                try:
                    with open(os.path.join(cgroup2_root(), "cgroup.procs"), "w") as f:
                        f.write(p)
                except OSError:
                    pass
        except OSError:
            pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


def spawn_in_cgroup(cg, argv):
    """Start argv with its process already in cgroup cg."""
    return subprocess.Popen(argv, preexec_fn=lambda: cg.add(os.getpid()))


def sh(cmd, check_rc=True):
    r = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if check_rc and r.returncode != 0:
        raise Fail("command failed (%d): %s\n%s" % (r.returncode, cmd, r.stdout))
    return r.stdout


class Netns:
    """A network namespace of the test's own, with lo up."""

    def __init__(self, name):
        self.name = name
        sh("ip netns del %s 2>/dev/null" % name, check_rc=False)
        sh("ip netns add %s" % name)
        sh("ip -n %s link set lo up" % name)

    def run(self, cmd, check_rc=True):
        return sh("ip netns exec %s %s" % (self.name, cmd), check_rc)

    def popen(self, argv, **kw):
        return subprocess.Popen(["ip", "netns", "exec", self.name] + argv, **kw)

    def delete(self):
        sh("ip netns del %s" % self.name, check_rc=False)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.delete()


class NetnsPair:
    """Two network namespaces of the test's own ("<tag>a" sends, "<tag>b"
    receives) joined by a veth pair, with IPv4 and IPv6 addresses that exist
    only inside them. IPv6 duplicate address detection and router
    solicitations are off, so no stray packets arrive once set up."""

    A4, B4 = "10.251.0.1", "10.251.0.2"
    A6, B6 = "fd51::1", "fd51::2"

    def __init__(self, tag):
        self.a = Netns(tag + "a")
        self.b = Netns(tag + "b")
        self.va, self.vb = tag[:8] + "va", tag[:8] + "vb"
        for ns in (self.a, self.b):
            for k in ("all", "default"):
                ns.run("sysctl -qw net.ipv6.conf.%s.accept_dad=0 "
                       "net.ipv6.conf.%s.router_solicitations=0" % (k, k))
        sh("ip -n %s link add %s type veth peer name %s netns %s"
           % (self.a.name, self.va, self.vb, self.b.name))
        for ns, dev, a4, a6 in ((self.a, self.va, self.A4, self.A6),
                                (self.b, self.vb, self.B4, self.B6)):
            sh("ip -n %s addr add %s/24 dev %s" % (ns.name, a4, dev))
            sh("ip -n %s addr add %s/64 dev %s nodad" % (ns.name, a6, dev))
            sh("ip -n %s link set %s up" % (ns.name, dev))
        # Resolve neighbours now, so no ARP/ND happens during a measurement.
        self.a.run("ping -c1 -W2 %s" % self.B4, check_rc=False)
        self.a.run("ping -6 -c1 -W2 %s" % self.B6, check_rc=False)
        time.sleep(0.3)

    def snmp(self, ns=None):
        """The kernel's own counters of namespace b: {"Ip.InReceives": n,
        "Tcp.InSegs": n, "Udp.InDatagrams": n, "Ip6InReceives": n, ...}."""
        ns = ns or self.b
        out = {}
        lines = ns.run("cat /proc/net/snmp").splitlines()
        for i in range(0, len(lines) - 1, 2):
            keys, vals = lines[i].split(), lines[i + 1].split()
            for k, v in zip(keys[1:], vals[1:]):
                out[keys[0].rstrip(":") + "." + k] = int(v)
        for line in ns.run("cat /proc/net/snmp6").splitlines():
            k, v = line.split()
            out[k] = int(v)
        return out

    def delete(self):
        self.a.delete()
        self.b.delete()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.delete()
