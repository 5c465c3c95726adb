# Packages and the collectd ecosystem (issue 7): man page, .deb, .rpm,
# graphs, and the build against the project's own declarations of the
# collectd 5.x plugin ABI.
#
#   make deb        build/deb/collectd-ebpf_<v>_amd64.deb (dpkg-buildpackage)
#   make lintian    lintian on it
#   make rpm        build/rpm/RPMS/<arch>/collectd-ebpf-<v>-1.<arch>.rpm
#   make rpmlint    rpmlint on the spec and the RPMs
#   make graphs     PNGs from GRAPH_RRD (default: $(RUN_DIR)/rrd/<host>)
#   make abi-check  own ABI declarations against Debian's collectd-dev
#   COLLECTD_ABI=own  build without collectd's headers (packaging/abi)

.PHONY: man install-extras deb lintian rpm rpmlint graphs abi-check

CHECK_PKGS += debhelper dpkg-dev fakeroot lintian rpm rpmlint perl \
	libmicrohttpd12 libprotobuf-c1

PKG_VERSION := $(shell head -n1 packaging/debian/changelog | cut -d' ' -f2 | tr -d '()')
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/collectd-ebpf
DATADIR ?= $(PREFIX)/share/collectd-ebpf

# ------------------------------------------------------------- own ABI
# COLLECTD_ABI=own puts packaging/abi/shim first on the include path: its
# collectd/core/daemon/{collectd,plugin}.h stand in for collectd-dev's, so
# plugin/core/collectd_api.h is the same in both builds.
COLLECTD_ABI ?= system
ifeq ($(COLLECTD_ABI),own)
PLUGIN_CFLAGS := -Ipackaging/abi/shim -Ipackaging/abi $(filter-out -I$(COLLECTD_INC),$(PLUGIN_CFLAGS))
UNIT_CFLAGS   := -Ipackaging/abi/shim -Ipackaging/abi $(filter-out -I$(COLLECTD_INC),$(UNIT_CFLAGS))
endif

ABI_CHECK := $(BUILD)/tests/abi_test
check: $(ABI_CHECK)
$(ABI_CHECK): packaging/abi/abi_check.c packaging/abi/collectd_abi.h | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O0 $(WARN) -DHAVE_CONFIG_H -I/usr/include/collectd \
		-Ipackaging/abi packaging/abi/abi_check.c -o $@ \
		-Wl,--unresolved-symbols=ignore-all
abi-check: $(ABI_CHECK)
	$(Q)$(ABI_CHECK)

# ---------------------------------------------------------------- docs
MAN5 := $(BUILD)/collectd-ebpf.5
$(MAN5): docs/collectd-ebpf.pod
	$(call msg,POD2MAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)podchecker -warnings -warnings $< 2>&1 | grep -v 'pod syntax OK' >&2 || true
	$(Q)pod2man --utf8 --section=5 --center=collectd-ebpf --release="collectd-ebpf $(PKG_VERSION)" \
		--name=COLLECTD-EBPF --date="$(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)} +%F)" \
		$< > $@
MAN1 := $(BUILD)/collectd-ebpf-graphs.1
$(MAN1): docs/collectd-ebpf-graphs.pod
	$(call msg,POD2MAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)pod2man --utf8 --section=1 --center=collectd-ebpf --release="collectd-ebpf $(PKG_VERSION)" \
		--name=COLLECTD-EBPF-GRAPHS --date="$(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)} +%F)" \
		$< > $@
man: $(MAN5) $(MAN1)

# What the packages add to `make install`: man page, graph script,
# documentation, systemd drop-in sample, Grafana dashboards.
# The documentation goes flat into DOCDIR (docs/x.md as x.md, docs/img/ as
# img/, the alert examples in examples/ by mk/alerts.mk): the installed
# README gets its links rewritten to match, and so do the documents'
# links back to ../README.md, so that every relative link in them resolves
# there (tests/integration/test_package checks this).
EXTRA_DOCS := $(wildcard docs/*.md)
DOC_IMAGES := $(wildcard docs/img/*.png)
README_INSTALLED_LINKS := -e 's,](docs/,](,g' \
	-e 's,](collectd\.conf\.d/ebpf-thresholds\.conf\.example),](examples/ebpf-thresholds.conf),g' \
	-e 's,](contrib/prometheus/collectd-ebpf\.rules\.yml),](examples/collectd-ebpf.rules.yml),g'
DOCS_INSTALLED_LINKS := -e 's,](\.\./README\.md,](README.md,g'
install-extras: $(MAN5) $(MAN1)
	install -d $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(DOCDIR)/img \
		$(DESTDIR)$(DATADIR)/systemd $(DESTDIR)$(DATADIR)/grafana
	install -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/collectd-ebpf.5
	install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/collectd-ebpf-graphs.1
	install -m 0755 packaging/graphs/collectd-ebpf-graphs $(DESTDIR)$(BINDIR)/collectd-ebpf-graphs
	sed $(README_INSTALLED_LINKS) README.md > $(DESTDIR)$(DOCDIR)/README.md
	chmod 0644 $(DESTDIR)$(DOCDIR)/README.md
	for d in $(EXTRA_DOCS); do \
		sed $(DOCS_INSTALLED_LINKS) $$d > $(DESTDIR)$(DOCDIR)/$${d##*/} && \
		chmod 0644 $(DESTDIR)$(DOCDIR)/$${d##*/} || exit 1; \
	done
	$(if $(DOC_IMAGES),install -m 0644 $(DOC_IMAGES) $(DESTDIR)$(DOCDIR)/img/)
	install -m 0644 packaging/systemd/collectd-ebpf.conf $(DESTDIR)$(DATADIR)/systemd/
	install -m 0644 contrib/grafana/*.json $(DESTDIR)$(DATADIR)/grafana/

# ----------------------------------------------------------------- .deb
# The package build runs make again in a staged tree: it must not inherit
# our command line (BUILD=/abs/path would make its `make clean` remove ours).
NO_MAKEFLAGS := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u BUILD
# dpkg-buildpackage wants debian/ at the top of a source tree: stage the
# files git knows (tracked or not ignored) with packaging/debian as debian/.
DEB_OUT := $(BUILD)/deb
DEB_SRC := $(DEB_OUT)/collectd-ebpf-$(PKG_VERSION)
DEB_FILE := $(DEB_OUT)/collectd-ebpf_$(PKG_VERSION)_$(shell dpkg --print-architecture 2>/dev/null || echo amd64).deb
define stage_deb_source # $(1): directory to stage the source tree in
	$(Q)rm -rf $(1) && mkdir -p $(1)
	$(Q)git ls-files -z -co --exclude-standard | grep -zv '^packaging/debian/' | \
		xargs -0 cp --parents -t $(1)
	$(Q)cp -r packaging/debian $(1)/debian
endef
deb:
	$(Q)rm -rf $(DEB_OUT)
	$(call stage_deb_source,$(DEB_SRC))
	$(call msg,DPKG-BP,$(DEB_FILE))
	$(Q)cd $(DEB_SRC) && $(NO_MAKEFLAGS) dpkg-buildpackage -b -us -uc -j2 > ../build.log 2>&1 || \
		{ tail -n 40 ../build.log; exit 1; }
	$(Q)ls $(DEB_FILE) >/dev/null

lintian: deb
	lintian --info --display-info --pedantic --fail-on error,warning $(DEB_OUT)/*.changes

# `make debs`: bookworm and trixie, amd64 and arm64, each in a build root
# of its release (packaging/debs; DEBS_RELEASES, DEBS_ARCHES). The roots
# are cached in $(DEBS_OUT)/root-<release> (~1 GB each).
DEBS_OUT := $(BUILD)/debs
.PHONY: debs
debs:
	$(call stage_deb_source,$(DEBS_OUT)/src/collectd-ebpf-$(PKG_VERSION))
	$(Q)packaging/debs build $(DEBS_OUT)/src/collectd-ebpf-$(PKG_VERSION) $(DEBS_OUT)

# ----------------------------------------------------------------- .rpm
RPM_OUT := $(BUILD)/rpm
rpm:
	$(Q)rm -rf $(RPM_OUT) && mkdir -p $(RPM_OUT)/SOURCES $(RPM_OUT)/SPECS
	$(Q)git ls-files -z -co --exclude-standard | \
		tar --null -T - --transform 's,^,collectd-ebpf-$(PKG_VERSION)/,' \
		-czf $(RPM_OUT)/SOURCES/collectd-ebpf-$(PKG_VERSION).tar.gz
	$(Q)sed 's/^Version:.*/Version:        $(PKG_VERSION)/' packaging/rpm/collectd-ebpf.spec \
		> $(RPM_OUT)/SPECS/collectd-ebpf.spec
	$(call msg,RPMBUILD,$(RPM_OUT))
	$(Q)$(NO_MAKEFLAGS) rpmbuild --define "_topdir $(abspath $(RPM_OUT))" --nodeps \
		-ba $(RPM_OUT)/SPECS/collectd-ebpf.spec > $(RPM_OUT)/build.log 2>&1 || \
		{ tail -n 40 $(RPM_OUT)/build.log; exit 1; }
	$(Q)ls $(RPM_OUT)/RPMS/*/collectd-ebpf-$(PKG_VERSION)-*.rpm

rpmlint: rpm
	rpmlint -r packaging/rpm/rpmlintrc $(RPM_OUT)/SPECS/collectd-ebpf.spec \
		$(RPM_OUT)/RPMS/*/*.rpm $(RPM_OUT)/SRPMS/*.rpm

# --------------------------------------------------------------- graphs
GRAPH_RRD ?= $(firstword $(wildcard $(RUN_DIR)/rrd/*))
GRAPH_OUT ?= $(BUILD)/graphs
GRAPH_SECONDS ?= 3600
graphs:
	@test -n "$(GRAPH_RRD)" || { echo "make graphs: no RRD files; run \`make run' first or set GRAPH_RRD=<rrd host dir>" >&2; exit 1; }
	packaging/graphs/collectd-ebpf-graphs -s $(GRAPH_SECONDS) "$(GRAPH_RRD)" "$(GRAPH_OUT)"
