# make check-vm: the plugin on Debian's stock kernels under qemu
# (tests/vm/run-matrix, docs/vm-matrix.md).
#   VM_KERNELS="pkg ..."  kernel packages (default: the newest 5.10 of
#                         Debian 11, 6.1 and 6.12 of Debian 12, 6.12 of
#                         Debian 13 and the newest of trixie-backports,
#                         generic and cloud; and the arm64 kernels of
#                         bookworm, trixie and trixie-backports)
#   VM_JOBS=2             guests at once; VM_NICE=10 qemu's nice level
#   VM_ARCHES="x86_64 aarch64"  architectures of the default kernels
#   VM_NOBTF=generic|all|none  kernels where a run with their BTF hidden
#                         (and BTFPath) replaces the forced-kprobe run
#   VM_KVM=1              use -enable-kvm instead of TCG
#   VM_SELINUX=pkg|none   the kernel of the SELinux cell (default: the
#                         bookworm 6.1 generic one among VM_KERNELS)
CHECK_PKGS += qemu-system-x86 qemu-system-data busybox-static cpio xz-utils \
	zstd lz4 apt qemu-system-arm

VM_KERNELS ?=
VM_KVM     ?= 0
VM_NOBTF   ?= generic
VM_SELINUX ?=

.PHONY: check-vm
# vmtraffic: a file per command in tests/vm/vmtraffic/ (main.c lists them).
$(BUILD)/vm/vmtraffic: $(wildcard tests/vm/vmtraffic/*.c) tests/vm/vmtraffic/vmtraffic.h
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) $(filter %.c,$^) -o $@ -lm

$(BUILD)/vm/bpfverify: tests/vm/bpfverify.c
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) $< -o $@ -lm -lbpf -lelf -lz

VM_TOOLS := $(BUILD)/vm/vmtraffic $(BUILD)/vm/bpfverify

# The SELinux cell installs the RPM's collectd-ebpf-selinux in its guest
# (tests/vm/selinux-check): built by `make rpm` into $(BUILD)/vm/rpm, apart
# from the one test_package builds and removes beside it.
VM_SE_RPM := $(if $(filter x86_64,$(HOST_ARCH)),$(if $(filter none,$(VM_SELINUX)),,$(BUILD)/vm/rpm/RPMS/noarch/collectd-ebpf-selinux-$(PKG_VERSION)-1.noarch.rpm))
$(BUILD)/vm/rpm/RPMS/noarch/collectd-ebpf-selinux-$(PKG_VERSION)-1.noarch.rpm: packaging/rpm/collectd-ebpf.spec $(SELINUX_SRC)
	$(Q)$(MAKE) --no-print-directory rpm RPM_OUT=$(BUILD)/vm/rpm

# The arm64 guests run the plugin and the helpers cross-built into
# $(BUILD)/aarch64 (mk/cross.mk).
VM_ARCHES ?= x86_64 aarch64
VM_CROSS := $(if $(filter x86_64,$(HOST_ARCH)),$(if $(or $(filter aarch64,$(VM_ARCHES)),$(filter %-arm64,$(VM_KERNELS))),aarch64))
.PHONY: vm-tools $(VM_CROSS:%=vm-tools-%)
vm-tools: $(PLUGIN_SO) $(BUILD)/tests/loader_check $(BUILD)/tests/holtraffic $(BUILD)/tests/owners_test $(BUILD)/tests/read_cost $(VM_TOOLS) $(VM_CROSS:%=vm-tools-%) $(VM_SE_RPM)
$(VM_CROSS:%=vm-tools-%): vm-tools-%:
	$(Q)$(MAKE) --no-print-directory ARCH=$* BUILD=$(BUILD)/$* $(addprefix $(BUILD)/$*/,ebpf.so \
		tests/loader_check tests/holtraffic tests/owners_test vm/vmtraffic vm/bpfverify bpf/rx.bpf.o)

check-vm: deps vm-tools
	$(Q)BUILD=$(BUILD) VM_KERNELS="$(VM_KERNELS)" VM_ARCHES="$(VM_ARCHES)" VM_KVM=$(VM_KVM) VM_NOBTF=$(VM_NOBTF) VM_SELINUX="$(VM_SELINUX)" tests/vm/run-matrix
