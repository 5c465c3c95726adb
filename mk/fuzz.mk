# Fuzzing (libFuzzer, clang): `make fuzz FUZZ_SECONDS=60` runs every target
# for that long with ASan+UBSan, growing tests/fuzz/corpus/<target>/;
# `make check` replays the corpus (and any crash-* files kept there) with
# the ordinary compiler as regression tests.
FUZZ_TARGETS := psi_parse config tcp_window_parse
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -DHAVE_CONFIG_H \
	-I/usr/include/collectd -Iplugin -Ibpf -I$(BUILD)/bpf -Itests/unit
FUZZ_PLUGIN_SRCS := $(filter-out plugin/core/ebpf.c,$(PLUGIN_SRCS))
CHECK_PKGS += libclang-rt-14-dev

$(BUILD)/fuzz/psi_parse_fuzz: tests/fuzz/psi_parse_fuzz.c plugin/pressure/psi_parse.c
	@mkdir -p $(@D)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $^ -o $@

$(BUILD)/fuzz/tcp_window_parse_fuzz: tests/fuzz/tcp_window_parse_fuzz.c plugin/tcp_window/parse.c
	@mkdir -p $(@D)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $^ -o $@

$(BUILD)/fuzz/config_fuzz: tests/fuzz/config_fuzz.c tests/unit/mock_collectd.c $(FUZZ_PLUGIN_SRCS) $(SKELS)
	@mkdir -p $(@D)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -D_GNU_SOURCE tests/fuzz/config_fuzz.c tests/unit/mock_collectd.c \
		$(FUZZ_PLUGIN_SRCS) -o $@ -lbpf -lelf -lz -lm

.PHONY: fuzz
fuzz: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%_fuzz)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p tests/fuzz/corpus/$$t; \
		echo "  FUZZ     $$t for $(FUZZ_SECONDS)s"; \
		$(BUILD)/fuzz/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=tests/fuzz/corpus/$$t/crash- tests/fuzz/corpus/$$t 2>&1 \
			| grep -E 'stat::number_of_executed_units|ERROR|crash-' ; \
	done

# Replay binaries: the target plus tests/fuzz/replay.c, built with $(CC).
$(BUILD)/tests/fuzz_psi_parse_test: tests/fuzz/replay.c tests/fuzz/psi_parse_fuzz.c plugin/pressure/psi_parse.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -DTARGET='"psi_parse"' -DCORPUS='"tests/fuzz/corpus/psi_parse"' $^ -o $@

$(BUILD)/tests/fuzz_config_test: tests/fuzz/replay.c tests/fuzz/config_fuzz.c tests/unit/mock_collectd.c \
		$(filter-out $(BUILD)/plugin/core/ebpf.o,$(PLUGIN_OBJS)) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -DTARGET='"config"' -DCORPUS='"tests/fuzz/corpus/config"' $^ -o $@ -lbpf -lelf -lz -lm

$(BUILD)/tests/fuzz_tcp_window_parse_test: tests/fuzz/replay.c tests/fuzz/tcp_window_parse_fuzz.c plugin/tcp_window/parse.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -DTARGET='"tcp_window_parse"' -DCORPUS='"tests/fuzz/corpus/tcp_window_parse"' $^ -o $@

TEST_HELPERS += $(BUILD)/tests/fuzz_psi_parse_test $(BUILD)/tests/fuzz_config_test \
	$(BUILD)/tests/fuzz_tcp_window_parse_test
