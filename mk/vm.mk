# make check-vm: the plugin on Debian's stock kernels under qemu
# (tests/vm/run-matrix, docs/vm-matrix.md).
#   VM_KERNELS="pkg ..."  kernel packages (default: the newest 5.10 of
#                         Debian 11, 6.1 and 6.12 of Debian 12, 6.12 of
#                         Debian 13; generic and cloud)
#   VM_NOBTF=generic|all|none  kernels where a run with their BTF hidden
#                         (and BTFPath) replaces the forced-kprobe run
#   VM_KVM=1              use -enable-kvm instead of TCG
DEB_PKGS += qemu-system-x86 qemu-system-data busybox-static cpio xz-utils \
	zstd lz4 apt

VM_KERNELS ?=
VM_KVM     ?= 0
VM_NOBTF   ?= generic

.PHONY: check-vm
$(BUILD)/vm/vmtraffic: tests/vm/vmtraffic.c
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) $< -o $@

$(BUILD)/vm/bpfverify: tests/vm/bpfverify.c
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) $< -o $@ -lbpf -lelf -lz

VM_TOOLS := $(BUILD)/vm/vmtraffic $(BUILD)/vm/bpfverify
check-vm: deps $(PLUGIN_SO) $(BUILD)/tests/loader_check $(VM_TOOLS)
	$(Q)BUILD=$(BUILD) VM_KERNELS="$(VM_KERNELS)" VM_KVM=$(VM_KVM) VM_NOBTF=$(VM_NOBTF) tests/vm/run-matrix
