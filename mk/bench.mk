# `make bench`: what the plugin costs, against empty programs on the same
# hooks (the floor) and bpftrace (what users run instead). Runs on the host,
# as root; prints a table and writes CSV to $(BUILD)/bench. It reports and
# never fails on a threshold; it ends with issue 13's targets, met or missed.
# BENCH_ROUNDS=N (default 3) rounds per arm;
# BENCH_ONLY=ladder,per_event,per_packet,drops,max_rate,system,plugin,sockets picks sections;
# BENCH_CONFIGS=filters_off,sample16,... picks per_event's (and per_packet's) configurations; BENCH_CPU=N pins the
# traffic (default: the last CPU). BENCH_ONLY also knows system_arms (not run
# by default); BENCH_SLICES / BENCH_SLICE_SECONDS size the system
# section. See docs/performance.md and docs/development.md.

CHECK_PKGS += bpftrace sockperf iperf3

BENCH_ROUNDS ?= 3
BENCH_BINS := $(BUILD)/bench/bpfload $(BUILD)/bench/readcost $(BUILD)/bench/slices $(BUILD)/bench/iter_floor.bpf.o \
	$(BUILD)/bench/empty.bpf.o $(BUILD)/bench/ladder.bpf.o $(BUILD)/bench/pkt_floor.bpf.o \
	$(BUILD)/bench/drop_floor.bpf.o

# bench/socketscan: the stalled-receiver scan's cost against idle sockets.
SOCKETSCAN_BINS := $(BUILD)/bench/readcost $(BUILD)/bench/iter_floor.bpf.o \
	$(BUILD)/bench/sk_mark $(BUILD)/bench/sk_mark.bpf.o
.PHONY: socketscan-bins
socketscan-bins: $(PLUGIN_SO) $(SOCKETSCAN_BINS)

.PHONY: bench

bench: deps $(PLUGIN_SO) $(BENCH_BINS)
	$(Q)BUILD=$(abspath $(BUILD)) BENCH_ROUNDS=$(BENCH_ROUNDS) bench/run

$(BUILD)/bench:
	$(Q)mkdir -p $@

$(BUILD)/bench/%.bpf.o: bench/%.bpf.c | $(BUILD)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/sk_mark: bench/sk_mark.c | $(BUILD)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -o $@ -lbpf

$(BUILD)/bench/bpfload: bench/bpfload.c | $(BUILD)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -o $@ -lbpf

# -rdynamic: the plugin, dlopened, finds collectd's functions in it.
$(BUILD)/bench/readcost: bench/readcost.c | $(BUILD)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -DHAVE_CONFIG_H -I/usr/include/collectd \
		-rdynamic $< -o $@ -ldl

# readcost's collectd stand-ins, plus the plugin's programs re-attached here.
$(BUILD)/bench/slices: bench/slices.c bench/readcost.c | $(BUILD)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -DHAVE_CONFIG_H -I/usr/include/collectd \
		-rdynamic $< -o $@ -ldl -lbpf -lpthread
