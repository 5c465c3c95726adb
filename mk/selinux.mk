# The SELinux policy module collectd_ebpf (packaging/selinux,
# docs/selinux.md), built with the policy headers' own Makefile: Debian's
# selinux-policy-dev and the RPM distributions' selinux-policy-devel both
# install it as /usr/share/selinux/devel/Makefile.
#   make selinux          $(BUILD)/selinux/collectd_ebpf.pp
#   make install-selinux  into $(DESTDIR)$(SELINUXDIR), not loaded
#                         (/usr/share/selinux/packages, as the packages have it)
.PHONY: selinux install-selinux

CHECK_PKGS += selinux-policy-dev checkpolicy semodule-utils policycoreutils \
	selinux-utils selinux-policy-default

SELINUX_DEVEL ?= /usr/share/selinux/devel/Makefile
SELINUXDIR    ?= $(PREFIX)/share/selinux/packages
SELINUX_PP    := $(BUILD)/selinux/collectd_ebpf.pp
SELINUX_SRC   := $(wildcard packaging/selinux/collectd_ebpf.*)

selinux: $(SELINUX_PP)
# The headers' Makefile builds every .te of its directory and writes
# empty .if/.fc files there: it runs in a copy, without our command line.
$(SELINUX_PP): $(SELINUX_SRC)
	@test -r $(SELINUX_DEVEL) || { echo "make selinux: no $(SELINUX_DEVEL) (apt-get install selinux-policy-dev, or dnf install selinux-policy-devel)" >&2; exit 1; }
	$(Q)rm -rf $(@D) && mkdir -p $(@D)
	$(Q)cp $(SELINUX_SRC) $(@D)/
	$(call msg,SEMOD,$@)
	$(Q)env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
		$(MAKE) -s -C $(@D) -f $(SELINUX_DEVEL) collectd_ebpf.pp >$(@D)/build.log 2>&1 || \
		{ cat $(@D)/build.log >&2; exit 1; }

install-selinux: $(SELINUX_PP)
	install -d $(DESTDIR)$(SELINUXDIR)
	install -m 0644 $(SELINUX_PP) $(DESTDIR)$(SELINUXDIR)/collectd_ebpf.pp
