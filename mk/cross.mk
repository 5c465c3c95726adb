# Cross builds: `make ARCH=arm64` (or aarch64) on an x86_64 host builds
# build/aarch64/ebpf.so, the BPF objects with -D__TARGET_ARCH_arm64 against
# bpf/vmlinux/aarch64/vmlinux.h, with Debian's aarch64-linux-gnu-gcc and
# a sysroot unpacked from the target's .debs of SYSROOT_RELEASE (default
# bookworm) with mmdebstrap --variant=extract: no package is installed and
# the host's dpkg architectures stay as they are. A sysroot given on the
# command line (SYSROOT=dir) is used as it is; SYSROOT= (empty) builds with
# the compiler's own search path (a multiarch chroot, see packaging.mk).
#
#   make ARCH=arm64                    build/aarch64/ebpf.so
#   make ARCH=arm64 sysroot            only the sysroot
#   DEBIAN_MIRROR=http://...           the registry (default deb.debian.org)

DEBIAN_MIRROR   ?= http://deb.debian.org/debian
SYSROOT_RELEASE ?= bookworm
SYSROOT_PKGS    := libc6-dev linux-libc-dev libbpf-dev libelf-dev zlib1g-dev collectd-dev

# The cross compiler for the other architecture of the two the project
# supports, and mmdebstrap, are what `make check-vm` needs for its arm64
# guests (mk/vm.mk); `make deps` installs them.
ifeq ($(HOST_ARCH),x86_64)
CHECK_PKGS += gcc-aarch64-linux-gnu mmdebstrap
endif

comma := ,
empty :=
space := $(empty) $(empty)

.PHONY: sysroot
ifneq ($(CROSS),)
ifeq ($(origin SYSROOT),file)
SYSROOT_STAMP := $(SYSROOT)/.collectd-ebpf-sysroot
sysroot: $(SYSROOT_STAMP)
$(SYSROOT_STAMP):
	$(call msg,SYSROOT,$(SYSROOT):$(SYSROOT_RELEASE)/$(DEB_ARCH))
	$(Q)rm -rf $(SYSROOT) $(SYSROOT).tmp && mkdir -p $(dir $(SYSROOT))
	$(Q)mmdebstrap --quiet --variant=extract --arch=$(DEB_ARCH) \
		--include=$(subst $(space),$(comma),$(SYSROOT_PKGS)) \
		$(SYSROOT_RELEASE) $(SYSROOT).tmp $(DEBIAN_MIRROR) > $(dir $(SYSROOT))sysroot-$(ARCH).log 2>&1 || \
		{ tail -n 20 $(dir $(SYSROOT))sysroot-$(ARCH).log; exit 1; }
	$(Q)touch $(SYSROOT).tmp/.collectd-ebpf-sysroot && mv $(SYSROOT).tmp $(SYSROOT)
$(PLUGIN_OBJS) $(PLUGIN_SO) $(BUILD)/tests/loader_check $(BUILD)/tests/holtraffic $(BUILD)/tests/owners_test $(BUILD)/vm/vmtraffic $(BUILD)/vm/bpfverify: | $(SYSROOT_STAMP)
endif
endif
