# make check-vm: the plugin on Debian 12's stock kernels under qemu
# (tests/vm/run-matrix, docs/vm-matrix.md).
#   VM_KERNELS="pkg ..."  kernel packages (default: newest 6.1 and 6.12,
#                         generic and cloud)
#   VM_KVM=1              use -enable-kvm instead of TCG
DEB_PKGS += qemu-system-x86 qemu-system-data busybox-static cpio xz-utils \
	zstd lz4 apt

VM_KERNELS ?=
VM_KVM     ?= 0

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
check-vm: deps $(PLUGIN_SO) $(BUILD)/tests/loader_check $(BUILD)/tests/holtraffic $(VM_TOOLS)
	$(Q)BUILD=$(BUILD) VM_KERNELS="$(VM_KERNELS)" VM_KVM=$(VM_KVM) tests/vm/run-matrix
