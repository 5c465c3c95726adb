# Sourced by tests/vm/guest-check: GroupBy interface with NetworkNamespace
# "all" (cells groupby_interface_all.<mode>), collectd -T.

# GroupBy interface and the Interface filter with NetworkNamespace "all" read
# the namespace of the device or socket in every hook: each flavour must
# still pass the verifier. With one stripe for all CPUs
# (EBPF_TEST_STRIPES=1, as past 16 CPUs), so that the CPUs' ways
# (netstacklat_fronts) beside the shared stripes' atomic adds are what the
# verifier sees, on every kernel and not only in the guest of 256 possible
# CPUs; the other GroupBy cells load the ways with a stripe per CPU.
groupby_all_loads() { # mode
  want=$(want_of "$1")
  sed -n '1,/^LoadPlugin ebpf/p' "$CD/collectd.conf" >"$CD/groupby.conf"
  cat >>"$CD/groupby.conf" <<EOF
<Plugin ebpf>
  AttachMode "$1"
  <Netstacklat>
    GroupBy "interface"
    NetworkNamespace "all"
    Interface "lo"
  </Netstacklat>
</Plugin>
EOF
  : >"$LOG"
  EBPF_TEST_STRIPES=1 collectd -T -C "$CD/groupby.conf" >/dev/null 2>&1
  rc=$?
  ways=$(grep -c "each CPU counts the first 4 groups of a hook" "$LOG")
  # auto on a kernel that refuses every fentry attach falls back
  [ "$want" = fentry ] && fentry_refused "$(grep "netstacklat: hook .* attached" "$LOG" | head -n 1)" &&
    want="[a-z]*"
  n=$(grep -c "netstacklat: hook .* attached with the $want flavour" "$LOG")
  rej=$(grep -c "rejected by the kernel" "$LOG")
  if [ "$rc" = 0 ] && [ "$n" -gt 0 ] && [ "$rej" = 0 ] && [ "$ways" -gt 0 ]; then
    cell "groupby_interface_all.$1" "$want" yes "$n" ok "$n hooks loaded with GroupBy interface, Interface lo, NetworkNamespace all and the CPUs' ways (one shared stripe)"
  else
    cell "groupby_interface_all.$1" "$want" no "$n" FAIL "collectd -T exit $rc, $n hooks with $want, $rej programs rejected, ways INFO line $ways"
    logx "rejected|unavailable|ERROR" 20
  fi
}
