# Alerts (issue 14): the example thresholds for collectd's threshold plugin
# and the Prometheus alerting rules. Both are installed as examples, never
# into the snippet directory: limits are each site's choice, so nothing
# alerts until someone copies a file into place. promtool (Debian package
# prometheus) checks the rules in tests/integration/test_alerts.

CHECK_PKGS += prometheus python3-yaml

EXAMPLESDIR ?= $(DOCDIR)/examples

.PHONY: install-alerts uninstall-alerts
install: install-alerts
uninstall: uninstall-alerts

install-alerts:
	install -d $(DESTDIR)$(EXAMPLESDIR)
	install -m 0644 collectd.conf.d/ebpf-thresholds.conf.example \
		$(DESTDIR)$(EXAMPLESDIR)/ebpf-thresholds.conf
	install -m 0644 contrib/prometheus/collectd-ebpf.rules.yml $(DESTDIR)$(EXAMPLESDIR)/

uninstall-alerts:
	rm -f $(DESTDIR)$(EXAMPLESDIR)/ebpf-thresholds.conf \
		$(DESTDIR)$(EXAMPLESDIR)/collectd-ebpf.rules.yml
