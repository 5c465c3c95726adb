"""Real Graphite and Prometheus servers for test_backends, run as the test's
own processes on free loopback ports with files in a temporary directory
(never the Debian packages' system services, nor their default ports):

  Carbon      Debian's graphite-carbon: carbon-cache receiving write_graphite's
              plaintext and writing whisper files (1 s resolution)
  GraphiteWeb Debian's graphite-web: its Django WSGI application under
              wsgiref, reading those whisper files (the render and find
              APIs Grafana's Graphite data source uses)
  Prometheus  Debian's prometheus: scraping write_prometheus every second,
              optionally with rule files, queried through its HTTP API

Not a test program itself (tests/run runs test_* only). Every wait is
bounded; stop() ends only the process it started."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from ebpftest import Fail, check

# Carbon, whisper and graphite-web are Debian's python3 modules: run them
# with Debian's interpreter, whatever python3 comes first in PATH.
DEBIAN_PY = "/usr/bin/python3"
CARBON = "/usr/bin/carbon-cache"
WHISPER_FETCH = "/usr/bin/whisper-fetch"
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
GRAPHITE_WEB = "/usr/lib/python3/dist-packages/graphite"


def need(*paths):
    for p in paths:
        if not os.path.exists(p):
            raise Fail("no %s (make check installs it)" % p)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=5):
    """(status, body) of a GET; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError:
        return 0, ""


class Server:
    """One process of the test's own, its output in <dir>/<name>.log."""

    def __init__(self, name, argv, tmp, env=None):
        self.name = name
        self.logfile = os.path.join(tmp, name + ".log")
        with open(self.logfile, "w") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=tmp, env=env)

    def log(self):
        try:
            with open(self.logfile, errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def wait_ready(self, ready, timeout):
        """Wait until ready(); on failure stop the process (the caller may
        hold no reference to stop it with) and fail."""
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise Fail("%s exited (%s):\n%s" % (self.name, self.proc.returncode,
                                                      self.log()))
            if ready():
                return
            time.sleep(0.1)
        Server.stop(self)
        raise Fail("%s not ready after %ss:\n%s" % (self.name, timeout, self.log()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Carbon(Server):
    def __init__(self, tmp):
        need(CARBON, WHISPER_FETCH)
        self.root = os.path.join(tmp, "carbon")
        conf = os.path.join(self.root, "conf")
        self.whisper = os.path.join(self.root, "whisper")
        for d in (conf, self.whisper):
            os.makedirs(d)
        self.port = free_port()
        with open(os.path.join(conf, "carbon.conf"), "w") as f:
            f.write("""[cache]
STORAGE_DIR = {r}/
LOCAL_DATA_DIR = {r}/whisper/
WHITELISTS_DIR = {r}/lists/
CONF_DIR = {r}/conf/
LOG_DIR = {r}/log/
PID_DIR = {r}/
DATABASE = whisper
ENABLE_LOGROTATION = False
USER =
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = inf
MAX_CREATES_PER_MINUTE = inf
CARBON_METRIC_INTERVAL = 0
ENABLE_TAGS = False
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = {line}
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = {pickle}
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = {query}
""".format(r=self.root, line=self.port, pickle=free_port(), query=free_port()))
        # collectd sends every second: keep every point for an hour.
        with open(os.path.join(conf, "storage-schemas.conf"), "w") as f:
            f.write("[all]\npattern = .*\nretentions = 1s:1h\n")
        super().__init__("carbon-cache", [DEBIAN_PY, CARBON, "--config=%s/carbon.conf" % conf,
                                          "--nodaemon", "start"], tmp)
        self.wait_ready(self.listening, 30)

    def listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def wsp(self, metric):
        return os.path.join(self.whisper, *metric.split(".")) + ".wsp"

    def fetch(self, metric, seconds=300):
        """[(time, value)] of a whisper file, read with whisper's own tool;
        empty slots left out."""
        path = self.wsp(metric)
        if not os.path.exists(path):
            return []
        r = subprocess.run([DEBIAN_PY, WHISPER_FETCH, "--from=%d" % (time.time() - seconds),
                            path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=30)
        check(r.returncode == 0, "whisper-fetch %s:\n%s" % (path, r.stdout))
        out = []
        for line in r.stdout.splitlines():
            t, v = line.split()
            if v != "None":
                out.append((int(t), float(v)))
        return out


GRAPHITE_SETTINGS = """import os
_d = os.environ["GRAPHITE_TEST_DIR"]
SECRET_KEY = "collectd-ebpf-test"
STORAGE_DIR = _d
WHISPER_DIR = os.environ["GRAPHITE_TEST_WHISPER"]
STANDARD_DIRS = [WHISPER_DIR]
LOG_DIR = os.path.join(_d, "log")
INDEX_FILE = os.path.join(_d, "index")
CARBONLINK_HOSTS = []
TAGDB = ""
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         "NAME": os.path.join(_d, "graphite.db")}}
"""

GRAPHITE_SERVE = """import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server
from graphite.wsgi import application


class Quiet(WSGIRequestHandler):
    def log_message(self, *a):
        pass


make_server("127.0.0.1", int(sys.argv[1]), application,
            handler_class=Quiet).serve_forever()
"""


class GraphiteWeb(Server):
    """graphite-web on whisper files. Its find API (Grafana's variable
    queries) needs Django's tables: prepare() creates them in the
    background (a few seconds), start() waits for that."""

    def __init__(self, tmp, whisper_dir):
        need(GRAPHITE_WEB)
        self.tmp = tmp
        self.root = os.path.join(tmp, "graphite-web")
        os.makedirs(os.path.join(self.root, "log"))
        with open(os.path.join(self.root, "test_graphite_settings.py"), "w") as f:
            f.write(GRAPHITE_SETTINGS)
        with open(os.path.join(self.root, "serve.py"), "w") as f:
            f.write(GRAPHITE_SERVE)
        self.env = dict(os.environ, PYTHONPATH=self.root, GRAPHITE_TEST_DIR=self.root,
                        GRAPHITE_TEST_WHISPER=whisper_dir,
                        DJANGO_SETTINGS_MODULE="graphite.settings",
                        GRAPHITE_SETTINGS_MODULE="test_graphite_settings")
        self.migrate = Server("graphite-migrate", [DEBIAN_PY, "-m", "django", "migrate",
                                                   "-v0"], self.root, self.env)

    def start(self):
        try:
            self.migrate.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.migrate.stop()
            raise Fail("graphite-web's migrate took over 90 s")
        check(self.migrate.proc.returncode == 0, "graphite-web migrate failed:\n"
              + self.migrate.log())
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        super().__init__("graphite-web", [DEBIAN_PY, os.path.join(self.root, "serve.py"),
                                          str(self.port)], self.tmp, self.env)
        self.wait_ready(lambda: http_get(self.url + "/metrics/find?query=*")[0] == 200, 30)
        return self

    def stop(self):
        self.migrate.stop()
        if hasattr(self, "proc"):
            super().stop()

    def get(self, path, **params):
        st, body = http_get("%s%s?%s" % (self.url, path, urllib.parse.urlencode(params)), 30)
        check(st == 200, "graphite-web %s %s: HTTP %s\n%s" % (path, params, st, body[-2000:]))
        return json.loads(body)

    def find(self, query):
        """The nodes a Grafana variable query gives: [(text, id)]."""
        return [(n["text"], n["id"]) for n in self.get("/metrics/find", query=query)]

    def render(self, target, since):
        """[(name, [(time, value)])] of one target, empty slots left out."""
        out = []
        for s in self.get("/render", target=target, format="json",
                          **{"from": int(since), "until": "now"}):
            out.append((s["target"], [(t, v) for v, t in s["datapoints"] if v is not None]))
        return out


class Prometheus(Server):
    def __init__(self, tmp, targets, rule_files=()):
        need(PROMETHEUS)
        self.root = os.path.join(tmp, "prometheus")
        os.makedirs(self.root)
        conf = os.path.join(self.root, "prometheus.yml")
        # What a new user writes: a job scraping collectd, defaults apart
        # from the interval (collectd's Interval in the test is 1 s).
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n")
            if rule_files:
                f.write("rule_files:\n%s" % "".join("  - %s\n" % json.dumps(r)
                                                    for r in rule_files))
            f.write("scrape_configs:\n  - job_name: collectd\n    static_configs:\n"
                    "      - targets: %s\n" % json.dumps(list(targets)))
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        super().__init__("prometheus", [PROMETHEUS, "--config.file=" + conf,
                                        "--storage.tsdb.path=" + os.path.join(self.root, "data"),
                                        "--web.listen-address=127.0.0.1:%d" % self.port],
                         tmp)
        self.wait_ready(lambda: http_get(self.url + "/-/ready")[0] == 200, 30)

    def api(self, path, **params):
        st, body = http_get("%s/api/v1/%s?%s" % (self.url, path,
                                                 urllib.parse.urlencode(params, doseq=True)), 30)
        check(st == 200, "prometheus %s %s: HTTP %s\n%s" % (path, params, st, body[-2000:]))
        d = json.loads(body)
        check(d.get("status") == "success", "prometheus %s %s: %s" % (path, params, d))
        return d["data"]

    def query_range(self, expr, since, step=1):
        """[(labels, [(time, value)])] as Grafana's time series panels ask."""
        d = self.api("query_range", query=expr, start="%.3f" % since,
                     end="%.3f" % time.time(), step=step)
        return [(s["metric"], [(float(t), float(v)) for t, v in s["values"]])
                for s in d["result"]]

    def label_values(self, match, label):
        """Grafana's label_values(match, label) variable query."""
        params = {"match[]": match} if match else {}
        return sorted(self.api("label/%s/values" % label, **params))


def cleanup_dir(tmp):
    if not os.environ.get("KEEP"):
        shutil.rmtree(tmp, ignore_errors=True)
