# Hardening (issue 8): sanitizers, valgrind, lifecycle and soak runs.
# Figures and the commands that produce them: docs/reliability.md.
#
#   make check-asan         plugin + unit tests with ASan+UBSan (BUILD=build-asan),
#                           unit tests, then the integration tests with real
#                           collectd and the ASan runtime preloaded
#   make check-valgrind     real collectd + plugin under memcheck, every feature,
#                           VALGRIND_SECONDS of traffic (default 180)
#   make check-lifecycle    LIFECYCLE_RUNS start/stop cycles (default 100)
#   make soak               SOAK_MINUTES of every feature and mixed traffic
#
# `make check` runs tests/integration/test_lifecycle (10 cycles) and
# tests/integration/test_soak (120 s) like every other test_* program.

CHECK_PKGS += valgrind

ASAN_BUILD   ?= build-asan
ASAN_CC      ?= gcc -fsanitize=address,undefined -fno-omit-frame-pointer
ASAN_TESTS   ?= test_pressure test_netstacklat test_tcp_window test_degradation \
	test_loader test_lifecycle test_soak test_badconfig
VALGRIND_SECONDS ?= 180
LIFECYCLE_RUNS   ?= 100
SOAK_MINUTES     ?= 30

.PHONY: check-asan check-valgrind check-lifecycle soak

# The whole build again in $(ASAN_BUILD) with the sanitizers in $(CC): the
# plugin (linked against libasan/libubsan), the unit tests and the helpers.
check-asan: deps
	$(Q)$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CC="$(ASAN_CC)" \
		$(ASAN_BUILD)/ebpf.so $(UNIT_SRCS:tests/unit/%.c=$(ASAN_BUILD)/tests/%) \
		$(subst $(BUILD)/,$(ASAN_BUILD)/,$(TEST_HELPERS))
	$(Q)BUILD=$(ASAN_BUILD) ASAN_TESTS="$(ASAN_TESTS)" tests/sanitize/check-asan

check-valgrind: deps $(PLUGIN_SO)
	$(Q)BUILD=$(BUILD) VALGRIND_SECONDS=$(VALGRIND_SECONDS) tests/sanitize/check-valgrind

check-lifecycle: deps $(PLUGIN_SO)
	$(Q)BUILD=$(BUILD) LIFECYCLE_RUNS=$(LIFECYCLE_RUNS) tests/integration/test_lifecycle

soak: deps $(PLUGIN_SO)
	$(Q)BUILD=$(BUILD) SOAK_SECONDS=$$(( $(SOAK_MINUTES) * 60 )) \
		SOAK_REPORT=$(BUILD)/soak-report.txt tests/integration/test_soak
