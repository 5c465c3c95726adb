# Sourced by tests/vm/guest-check: the main run of a mode, one collectd
# with netstacklat, tcp_window (and pressure in the auto and nobtf runs),
# its checks one after the other, each timed (timed, common.sh), and at
# the end that collectd left no program behind.

run_mode() { # auto | kprobe | tracepoint | nobtf
  mode=$1
  amode=$mode
  extra=""
  [ "$mode" = auto ] && extra="  <Pressure>
    Host true
  </Pressure>"
  if [ "$mode" = nobtf ]; then
    CELL_TAG=nobtf
    # The kernel keeps its BTF; only user space loses sight of it. A
    # copy stays readable for BTFPath.
    cp /sys/kernel/btf/vmlinux /tmp/vmlinux.btf || { cell nobtf.report - no - FAIL "no /sys/kernel/btf/vmlinux to hide"; return; }
    mount -t tmpfs -o size=1m nobtf /sys/kernel/btf
    timed nobtf.report check_nobtf_report
    amode=auto
    extra="  BTFPath \"/tmp/vmlinux.btf\"
  <Pressure>
    Host true
  </Pressure>"
  fi
  timed selftest loader_selftest "$mode"
  timed collectd.start main_start || return
  timed netstacklat.traffic nsl_traffic
  case " $ATTACHED " in *" tcp_socket_read "*)
    timed netstacklat.delay nsl_delay
    timed netstacklat.quantiles nsl_quantiles
    ;;
  esac
  timed netstacklat.cells nsl_cells
  timed tcp_window check_tcp_window "$mode"
  timed flavour.gauges check_flavour_gauges "$mode"
  timed conc check_concurrency "$mode"

  timed collectd.stop stop_collectd
  if [ "$mode" = auto ] || [ "$mode" = nobtf ]; then
    timed pressure check_pressure
  fi
  timed collectd.leak check_leak
}

# collectd with every feature of the mode; which hooks attached, with which
# flavour: a cell for every hook whose wanted flavour did not attach.
main_start() {
  ids0=$(prog_ids)
  psi0=""
  for r in cpu memory io; do psi0="$psi0 $(psi_total $r some 2>/dev/null)"; done
  CD_BUCKETS=true
  start_collectd "$amode" "$extra"
  started=$?
  CD_BUCKETS=false
  if [ "$started" != 0 ]; then
    cell "collectd.$mode" - no - FAIL "collectd did not initialize"
    logx . 60
    stop_collectd
    return 1
  fi
  t_init=$(date +%s)

  # Which hooks attached, with which flavour; a cell for every hook whose
  # wanted flavour did not attach.
  ATTACHED=""
  VLOG=0
  check_clock "$mode"
  load_flavours
  for h in $NSL_HOOKS; do
    eval "f=\${CH_netstacklat_$h-}"
    want=$(want_of "$mode")
    if ! has_flavour "$h" "$want"; then
      continue
    fi
    if [ "$f" = "$want" ]; then
      ATTACHED="$ATTACHED $h"
      eval "FL_$h=$f"
      continue
    fi
    why=$(unavail "$h")
    if [ "$want" = fentry ] && fentry_refused "$why $(grep "hook $h attached" "$LOG" | tail -n 1)"; then
      cell "$h" "$want" no - n/a "$FENTRY_NA"
    elif [ -n "$f" ]; then
      cell "$h" "$want" no - FAIL "AttachMode $mode chose $f instead: $(grep "hook $h attached" "$LOG" | tail -n 1 | sed 's/.*flavour//')"
      VLOG=1
    elif [ "$want" = tracepoint ] && echo "$why" | grep -q "tracepoint: the kernel has no tracepoint"; then
      cell "$h" "$want" no - n/a "unavailable as expected: $(echo "$why" | sed 's/.*\(tracepoint: the kernel has no tracepoint [a-z_]*\).*/\1/')"
    else
      cell "$h" "$want" no - FAIL "unavailable: ${why:-no INFO or WARNING line}"
      VLOG=1
    fi
  done

  [ $VLOG = 1 ] && verifier_logs
  # The plugin's log keeps only the start of libbpf's messages: get the
  # verifier's verdict per program by loading each one alone (once).
  if [ $VLOG = 1 ] && [ -z "${VERIFY_DONE:-}" ]; then
    VERIFY_DONE=1
    /opt/vm/bpfverify /opt/vm/rx.bpf.o 40 | sed 's/^/LOG /'
  fi
  [ -z "$ATTACHED" ] && logx "ebpf plugin: [a-z]*:" 20

  # The programs collectd holds now, for the leak check after it exits.
  held=$(held_ids $CD_PID)
  return 0
}

# After collectd exits, none of its programs may be left in the kernel.
check_leak() {
  left=x
  i=0
  while [ $i -lt 50 ]; do
    live=$(prog_ids)
    left=""
    for id in $held; do echo "$live" | grep -qx "$id" && left="$left $id"; done
    [ -z "$left" ] && break
    nap 0.1
    i=$((i + 1))
  done
  nheld=$(echo $held | wc -w)
  if [ -z "$held" ] && [ -z "$ATTACHED" ]; then
    cell "collectd.$mode" - no - - "no hook attached, so no program to check (exit status $CD_RC)"
  elif [ -z "$held" ]; then
    cell "collectd.$mode" - - - FAIL "hooks attached but collectd held no BPF program (exit status $CD_RC)"
  elif [ -n "$left" ] || [ "$CD_RC" -ne 0 ]; then
    cell "collectd.$mode" - yes "$nheld" FAIL "programs left after exit:${left:- none}; exit status $CD_RC"
  else
    cell "collectd.$mode" - yes "$nheld" ok "$nheld programs held, none left after exit; ids before start: $(echo $ids0 | wc -w)"
  fi
}
