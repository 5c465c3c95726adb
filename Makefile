# collectd-ebpf. `make help` lists the targets.
#
# Objects, skeletons and test binaries go to $(BUILD); nothing reads the
# build host's kernel BTF (packages are built in chroots): the BPF side is
# compiled against the checked-in bpf/vmlinux/$(ARCH)/vmlinux.h.

.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDARY:

# ARCH: the target CPU, by the kernel's uname name (x86_64, aarch64; the
# Debian names amd64 and arm64 are accepted). A target other than the build
# host's is a cross build (`make ARCH=arm64`): $(CROSS_COMPILE)gcc against
# SYSROOT, a root file system unpacked from that architecture's .debs
# (made on first use, see "cross builds" below), into build/<arch>.
HOST_ARCH := $(shell uname -m)
ARCH      ?= $(HOST_ARCH)
override ARCH := $(patsubst amd64,x86_64,$(patsubst arm64,aarch64,$(ARCH)))
CROSS     := $(filter-out $(HOST_ARCH),$(ARCH))
ifneq ($(CROSS),)
BUILD     ?= build/$(ARCH)
CROSS_COMPILE ?= $(ARCH)-linux-gnu-
SYSROOT   ?= build/sysroot-$(ARCH)
ifeq ($(origin CC),default)
CC        := $(CROSS_COMPILE)gcc
endif
endif
BUILD     ?= build
SYSROOT   ?=
PREFIX    ?= /usr
LIBDIR    ?= $(PREFIX)/lib
PLUGINDIR ?= $(LIBDIR)/collectd
SYSCONFDIR ?= /etc
CONFDIR   ?= $(SYSCONFDIR)/collectd/collectd.conf.d
DESTDIR   ?=

CC        ?= cc
CLANG     ?= clang
BPFTOOL   ?= bpftool
COLLECTD  ?= /usr/sbin/collectd

BPF_ARCH_x86_64  := x86
BPF_ARCH_aarch64 := arm64
BPF_ARCH := $(or $(BPF_ARCH_$(ARCH)),$(ARCH))
DEB_ARCH_x86_64  := amd64
DEB_ARCH_aarch64 := arm64
DEB_ARCH := $(or $(DEB_ARCH_$(ARCH)),$(ARCH))

# collectd's headers (and, for a cross build, every library) come from the
# sysroot when there is one.
ifneq ($(SYSROOT),)
override CC += --sysroot=$(SYSROOT)
endif
COLLECTD_INC := $(SYSROOT)/usr/include/collectd

CFLAGS    ?= -O2 -g
WARN      := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
PLUGIN_CFLAGS := -std=gnu11 -fPIC -fvisibility=hidden $(WARN) -MMD -MP \
	-DHAVE_CONFIG_H -I$(COLLECTD_INC) -Iplugin -Ibpf -I$(BUILD)/bpf
PLUGIN_LDLIBS := -lbpf -lelf -lz -lm -pthread
BPF_CFLAGS := -target bpf -g -O2 -Wall -Werror -D__TARGET_ARCH_$(BPF_ARCH) \
	-Ibpf -Ibpf/vmlinux/$(ARCH) -MMD -MP

ifeq ($(V),1)
Q :=
msg := @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2);
endif

# A folder per part on each side (docs/development.md has the map). A BPF
# object is named after its folder and file, the folder's name alone for
# its main object and for common/: bpf/rx/rx.bpf.c is rx,
# bpf/rx/sampled.bpf.c rx_sampled,
# bpf/common/probe.bpf.c probe. The name is the skeleton's
# (rx_sampled.skel.h, struct rx_sampled_bpf) and the
# object's in $(BUILD)/bpf, flat.
BPF_SRCS    := $(wildcard bpf/*/*.bpf.c)
bpf_dir      = $(patsubst bpf/%/,%,$(dir $(1)))
bpf_stem     = $(patsubst %.bpf.c,%,$(notdir $(1)))
bpf_name     = $(if $(filter common $(call bpf_stem,$(1)),$(call bpf_dir,$(1))),$(call bpf_stem,$(1)),$(call bpf_dir,$(1))_$(call bpf_stem,$(1)))
BPF_NAMES   := $(foreach s,$(BPF_SRCS),$(call bpf_name,$(s)))
BPF_OBJS    := $(BPF_NAMES:%=$(BUILD)/bpf/%.bpf.o)
SKELS       := $(BPF_NAMES:%=$(BUILD)/bpf/%.skel.h)
PLUGIN_SRCS := $(wildcard plugin/*/*.c)
PLUGIN_OBJS := $(PLUGIN_SRCS:plugin/%.c=$(BUILD)/plugin/%.o)
PLUGIN_SO   := $(BUILD)/ebpf.so
UNIT_SRCS   := $(wildcard tests/unit/*_test.c)
UNIT_BINS   := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPERS := $(BUILD)/tests/loader_check $(BUILD)/tests/read_cost

.DEFAULT_GOAL := all
.PHONY: all help deps deps-run run check unit integration install uninstall clean vmlinux

# Debian packages. RUN_PKGS: what building the plugin and `make run` need
# (`make deps-run`, the only install step of `make run`); CHECK_PKGS: what
# the test suite and the other targets add (the mk/ fragments append to it).
# `make deps`, a step of `make check`, installs both.
RUN_PKGS := make gcc libc6-dev clang llvm bpftool libbpf-dev libelf-dev \
	zlib1g-dev pkg-config collectd-core collectd-dev collectd-utils librrd8 \
	rrdtool iproute2 procps
CHECK_PKGS := python3 util-linux

# Further targets (check-vm, bench, fuzz, packages...) each in a fragment of
# its own, included before the rules that use TEST_HELPERS and CHECK_PKGS.
include $(wildcard mk/*.mk)

all: $(PLUGIN_SO)

help:
	@echo "make            build $(PLUGIN_SO)"
	@echo "make run        build, install missing Debian packages, run collectd with the shipped snippet and loopback traffic in the foreground (RUN_SECONDS=N to stop)"
	@echo "make check      the whole test suite (unit tests, then integration tests as root)"
	@echo "make deps       install the Debian packages that are missing (build, run, the test suite and every target)"
	@echo "make deps-run   only those that building and make run need"
	@echo "make install    install into DESTDIR/PREFIX (plugin) and SYSCONFDIR (snippet)"
	@echo "make vmlinux    regenerate bpf/vmlinux/\$$ARCH/vmlinux.h from VMLINUX_BTF"
	@echo "make check-vm   every attach flavour on Debian 11-13's kernels and trixie-backports' newest under qemu, x86_64 and arm64 (VM_KERNELS, VM_ARCHES, VM_JOBS, VM_NOBTF, VM_KVM=1)"
	@echo "make ARCH=arm64 cross-build build/aarch64/ebpf.so (sysroot from Debian's arm64 .debs)"
	@echo "make debs       .debs for bookworm and trixie, amd64 and arm64 (DEBS_RELEASES, DEBS_ARCHES)"
	@echo "make bench      per-event, system and plugin costs, issue 13 targets (BENCH_ROUNDS, BENCH_ONLY); docs/development.md"
	@echo "make fuzz       libFuzzer targets for FUZZ_SECONDS each"
	@echo "make check-asan / check-valgrind / check-lifecycle / soak   docs/reliability.md"
	@echo "make deb / rpm / lintian / rpmlint / man / graphs            packages and graphs"
	@echo "make selinux    the SELinux policy module build/selinux/collectd_ebpf.pp (docs/selinux.md)"
	@echo "V=1             show full commands"

# ------------------------------------------------------------------ BPF side
define bpf_object
$(BUILD)/bpf/$(call bpf_name,$(1)).bpf.o: $(1) | $(BUILD)/bpf
	$$(call msg,BPF,$$@)
	$$(Q)$$(CLANG) $$(BPF_CFLAGS) -c $$< -o $$@
endef
$(foreach s,$(BPF_SRCS),$(eval $(call bpf_object,$(s))))

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# ------------------------------------------------------------- plugin side
# A loader that includes a skeleton needs it first: the skeleton is a real
# prerequisite of the object built from the file of the same feature name.
# The skeletons are order-only prerequisites of every object: the first
# build makes them all before any loader that includes one, and the
# objects' .d files (-MMD) name the ones each really includes from then on.
$(BUILD)/plugin/%.o: plugin/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(PLUGIN_CFLAGS) -c $< -o $@

$(PLUGIN_SO): $(PLUGIN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared \
		-Wl,-z,relro -Wl,-z,now -o $@ $^ $(PLUGIN_LDLIBS)

$(BUILD)/bpf $(BUILD)/tests:
	$(Q)mkdir -p $@

# ------------------------------------------------------------------- tests
# A unit test #includes the source under test and links the collectd mock.
# With several sources in one command, -MMD keeps the dependencies of the
# last one only: the test's own source goes last, so that the plugin source
# it includes is a dependency.
UNIT_CFLAGS := -std=gnu11 -O1 -g $(WARN) -MMD -MP -DHAVE_CONFIG_H \
	-I$(COLLECTD_INC) -Iplugin -Ibpf -I$(BUILD)/bpf -Itests/unit
$(BUILD)/tests/%_test: tests/unit/%_test.c tests/unit/mock_collectd.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) tests/unit/mock_collectd.c $(filter %.o,$^) $< -o $@ -lbpf -lelf -lz -lm

# The config test and the read-cost probe include the core and link the
# features' objects.
$(BUILD)/tests/read_cost: tests/helpers/read_cost.c tests/unit/mock_collectd.c \
		$(filter-out $(BUILD)/plugin/core/ebpf.o,$(PLUGIN_OBJS)) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) tests/unit/mock_collectd.c $(filter %.o,$^) $< -o $@ -lbpf -lelf -lz -lm

$(BUILD)/tests/config_test $(BUILD)/tests/keys_test: $(BUILD)/tests/%: tests/unit/%.c tests/unit/mock_collectd.c \
		$(filter-out $(BUILD)/plugin/core/ebpf.o,$(PLUGIN_OBJS)) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) tests/unit/mock_collectd.c $(filter %.o,$^) $< -o $@ -lbpf -lelf -lz -lm

# These include one plugin source (test:source) or several joined by '+'
# (test:a/x+a/y; tcp_window's sockdiag.c, stalled.c, owners.c and
# marks.c: the sock_diag reader and the marked scans against a stand-in
# kernel; netstacklat's parts: its config, dispatch and the groups'
# names), and link the other objects: none of the included sources'.
UNIT_WITH_SRC := tcp_window_diag_test:tcp_window/sockdiag+tcp_window/stalled+tcp_window/owners+tcp_window/marks \
	netstacklat_test:netstacklat/config+netstacklat/read+netstacklat/groups \
	nsl_outliers_test:netstacklat/outliers owners_test:common/owners nsl_slots_test:netstacklat/slots \
	nsl_cgfilter_test:netstacklat/cgfilter nsl_ifaces_test:netstacklat/ifaces pressure_test:pressure/pressure \
	drops_test:drops/names series_test:core/series
define unit_with_src
$(BUILD)/tests/$(1): tests/unit/$(1).c tests/unit/mock_collectd.c \
		$(filter-out $(BUILD)/plugin/core/ebpf.o $(patsubst %,$(BUILD)/plugin/%.o,$(subst +, ,$(2))),$(PLUGIN_OBJS)) | $(BUILD)/tests
	$$(call msg,CC,$$@)
	$$(Q)$$(CC) $$(UNIT_CFLAGS) tests/unit/mock_collectd.c $$(filter %.o,$$^) $$< -o $$@ -lbpf -lelf -lz -lm
endef
$(foreach t,$(UNIT_WITH_SRC),$(eval $(call unit_with_src,$(word 1,$(subst :, ,$(t))),$(word 2,$(subst :, ,$(t))))))
# The atomics' test reads the built BPF objects (not linked).
$(BUILD)/tests/bpf_atomics_test: | $(BPF_OBJS)

# The Cgroup filter's test loads the maps of the receive path's object.
$(BUILD)/tests/nsl_cgfilter_test: $(BUILD)/bpf/rx.skel.h

# The loader's objects: the choice (loader.c), the flavours' probes
# (probe.c) and libbpf's log (libbpf_log.c); the core's helpers below
# them (util.c, its new series' zeros series.c, the escaping esc.c).
LOADER_OBJS := $(addprefix $(BUILD)/plugin/common/,loader.o probe.o libbpf_log.o)
CORE_OBJS := $(addprefix $(BUILD)/plugin/core/,util.o series.o esc.o)
$(BUILD)/tests/loader_check: tests/helpers/loader_check.c tests/unit/mock_collectd.c \
		$(LOADER_OBJS) $(CORE_OBJS) $(BUILD)/bpf/selftest.skel.h | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) tests/helpers/loader_check.c tests/unit/mock_collectd.c \
		$(LOADER_OBJS) $(CORE_OBJS) -o $@ -lbpf -lelf -lz -lm

# notify_test and newnames_test include util.c: its dispatch helpers need
# series.c.
$(BUILD)/tests/notify_test $(BUILD)/tests/newnames_test: $(BUILD)/plugin/core/series.o

# Reads behind a hole (IncludeHOLBlocked): a tc program that loses chosen
# TCP segments and the traffic around it.
$(BUILD)/tests/hol_drop.bpf.o: tests/helpers/hol_drop.bpf.c | $(BUILD)/tests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/tests/hol_drop.skel.h: $(BUILD)/tests/hol_drop.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name hol_drop_bpf > $@

$(BUILD)/tests/holtraffic: tests/helpers/holtraffic.c $(BUILD)/tests/hol_drop.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 $(WARN) -I$(BUILD)/tests $< -o $@ -lbpf -lelf -lz

TEST_HELPERS += $(BUILD)/tests/holtraffic

# Drops the test makes and counts itself (test_drops): generic XDP,
# attached with ip(8), and a tcx program, attached by tcx_drop.
$(BUILD)/tests/xdp_drop.bpf.o: tests/helpers/xdp_drop.bpf.c | $(BUILD)/tests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/tests/tcx_drop: tests/helpers/tcx_drop.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 $(WARN) $< -o $@ -lbpf -lelf -lz

TEST_HELPERS += $(BUILD)/tests/xdp_drop.bpf.o $(BUILD)/tests/tcx_drop

# A command with adjtimex() refused by a seccomp filter (ProtectClock=).
$(BUILD)/tests/noclockadj: tests/helpers/noclockadj.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 $(WARN) $< -o $@

TEST_HELPERS += $(BUILD)/tests/noclockadj

# A notification plugin that sleeps per notification
# (test_slow_consumers): a collectd plugin of the test's own.
$(BUILD)/tests/slow_notify.so: tests/helpers/slow_notify.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 $(WARN) -fPIC -shared -DHAVE_CONFIG_H \
		-I$(COLLECTD_INC) $< -o $@

TEST_HELPERS += $(BUILD)/tests/slow_notify.so

# `make run`'s loopback traffic and drops (tests/run-collectd; test_run).
RUN_TRAFFIC := $(BUILD)/tests/run_traffic
$(RUN_TRAFFIC): tests/helpers/run_traffic.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 $(WARN) $< -o $@

TEST_HELPERS += $(RUN_TRAFFIC)

$(UNIT_BINS): $(SKELS)

unit: $(UNIT_BINS)
	$(Q)tests/run --unit-only

# make check's summary line gives its wall time from here on (deps and
# the build included).
ifneq ($(filter check,$(MAKECMDGOALS)),)
export CHECK_T0 := $(shell date +%s)
endif
check: deps $(PLUGIN_SO) $(UNIT_BINS) $(TEST_HELPERS)
	$(Q)tests/run

# ------------------------------------------------------------------ running
RUN_DIR     ?= $(CURDIR)/run
RUN_SECONDS ?= 0
run: deps-run $(PLUGIN_SO) $(RUN_TRAFFIC)
	$(Q)tests/run-collectd "$(RUN_DIR)" "$(RUN_SECONDS)" "$(CURDIR)/$(PLUGIN_SO)" "$(abspath $(RUN_TRAFFIC))"

# ------------------------------------------------------------- dependencies
# $(call install_missing,PACKAGES): apt-get install those not installed
# (apt-get update first: a fresh machine's lists are empty).
define install_missing
$(Q)missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${db:Status-Status}\n' $$p 2>/dev/null | grep -qx installed || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "  DEPS     installing:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root to install:" $$missing >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps-run:
	$(call install_missing,$(RUN_PKGS))

deps:
	$(call install_missing,$(RUN_PKGS) $(CHECK_PKGS))

# ------------------------------------------------------------------ install
install: $(PLUGIN_SO)
	install -d $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(CONFDIR)
	install -m 0644 $(PLUGIN_SO) $(DESTDIR)$(PLUGINDIR)/ebpf.so
	install -m 0644 collectd.conf.d/ebpf.conf $(DESTDIR)$(CONFDIR)/ebpf.conf

uninstall:
	rm -f $(DESTDIR)$(PLUGINDIR)/ebpf.so $(DESTDIR)$(CONFDIR)/ebpf.conf

# The checked-in vmlinux.h: regenerate it from a kernel's BTF, e.g.
#   make vmlinux VMLINUX_BTF=/sys/kernel/btf/vmlinux
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
vmlinux:
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > bpf/vmlinux/$(ARCH)/vmlinux.h.tmp
	mv bpf/vmlinux/$(ARCH)/vmlinux.h.tmp bpf/vmlinux/$(ARCH)/vmlinux.h

clean:
	rm -rf $(BUILD)

-include $(wildcard $(BUILD)/plugin/*/*.d $(BUILD)/bpf/*.d $(BUILD)/tests/*.d)

# Measurements for docs/tcp_window.md (not part of `make check`).
# It includes tcp_window's stalled.c and links the other objects.
$(BUILD)/tests/tcp_window_bench: tests/bench/tcp_window_bench.c tests/unit/mock_collectd.c \
		$(filter-out $(BUILD)/plugin/core/ebpf.o $(BUILD)/plugin/tcp_window/stalled.o,$(PLUGIN_OBJS)) \
		$(BUILD)/bpf/tcp_window.skel.h | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) tests/unit/mock_collectd.c $(filter %.o,$^) $< -o $@ -lbpf -lelf -lz -lm
