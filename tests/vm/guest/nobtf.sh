# Sourced by tests/vm/guest-check: mode nobtf without BTFPath (cell
# nobtf.report), before its main run.

# nobtf, first half: without BTF and without BTFPath, the BPF features say
# what is missing and are disabled; pressure runs on.
check_nobtf_report() {
  start_collectd auto "  <Pressure>
    Host true
  </Pressure>" || { cell nobtf.report - no - FAIL "collectd did not initialize"; logx . 40; stop_collectd; return; }
  i=0
  while [ -z "$(val pressure-cpu total_time_in_ms-some)" ] && [ $i -lt 50 ]; do nap 0.2; i=$((i + 1)); done
  stop_collectd
  btf=$(grep -c 'BTF file /sys/kernel/btf/vmlinux: .*set BTFPath' "$LOG")
  nsl=$(grep -c 'netstacklat: no hook could be attached; netstacklat is disabled' "$LOG")
  tcpw=$(grep -c 'tcp_window: .*disabled\|tcp_window: hook clamps is unavailable' "$LOG")
  attached=$(grep -c 'attached with the' "$LOG")
  psi=$(nvals pressure-cpu total_time_in_ms-some)
  if [ "$btf" -ge 1 ] && [ "$nsl" -ge 1 ] && [ "$tcpw" -ge 1 ] && [ "$attached" -eq 0 ] && [ "$psi" -ge 1 ]; then
    cell nobtf.report - yes "$psi" ok "no BTF: the WARNING names /sys/kernel/btf/vmlinux and BTFPath; netstacklat and tcp_window disabled; pressure dispatched $psi values"
  else
    cell nobtf.report - yes "${psi:-0}" FAIL "no BTF: BTF warning $btf, netstacklat disabled $nsl, tcp_window disabled $tcpw, hooks attached $attached, pressure values $psi"
    logx 'BTF|disabled|unavailable|libbpf' 20
  fi
}
