# Real Graphite and Prometheus servers for tests/integration/test_backends
# (issue 15): carbon-cache writing whisper files, graphite-web's render and
# find APIs, prometheus scraping write_prometheus, promtool for the alert
# rules. The test runs them as its own processes on free loopback ports with
# temporary directories (tests/integration/backend_servers.py); it never uses
# the packages' system services or their default ports. Installing the
# packages on a host with systemd enables and starts prometheus.service
# (port 9090) and carbon-cache.service; the test does not need them, stop
# them if nothing else does: systemctl disable --now prometheus carbon-cache
# (containers with a policy-rc.d that denies starts leave them stopped).

CHECK_PKGS += prometheus graphite-carbon graphite-web python3-whisper
