# Sourced by tests/vm/guest-check: IncludeHOLBlocked false (cells
# tcp_socket_read.hol and tcp_socket_read.hol_lagged), a collectd of its own.

# ---- IncludeHOLBlocked false: a connection over lo with a real hole
# (tests/helpers/holtraffic: one segment lost for 300 ms, 5 behind it
# wait out of order). The reads in order are counted exactly, the ones
# behind the hole are skipped-hol_blocked, none of them is in the latency:
# they waited >= 150 ms (the receiver's witness), so one counted would put
# latency-max (a bucket's upper bound) at 0.268 s or more; reads in order
# may take tens of ms under TCG. Which reads waited behind the hole is the
# drop program's witness (the segments that got through beyond the hole
# before it was filled): not always all 5, as a sender descheduled for
# longer than the hold sends the rest after, in order (seen in a loaded
# arm64 TCG guest). A run where no data waited (the sender late from the
# lost message on) tests nothing: it is made again, up to 3 times.
check_hol() { # mode
  mode=$1
  want=$(want_of "$mode")
  if ! start_collectd "$mode" "" '    Hooks "tcp_socket_read"
    IncludeHOLBlocked false'; then
    cell tcp_socket_read.hol "$want" no - FAIL "collectd did not initialize"
    logx . 40
    stop_collectd
    return
  fi
  f=$(chosen tcp_socket_read)
  if [ "$mode" = kprobe ]; then
    why=$(unavail tcp_socket_read)
    if [ -z "$f" ] && echo "$why" | grep -q "kprobe: not with IncludeHOLBlocked false"; then
      cell tcp_socket_read.hol kprobe no - ok "refused with IncludeHOLBlocked false, as designed (kprobe programs have no socket storage)"
    else
      cell tcp_socket_read.hol kprobe "${f:-no}" - FAIL "not refused with IncludeHOLBlocked false: ${f:-$why}"
    fi
    stop_collectd
    return
  fi
  # Socket storage from fentry and tracepoint programs came in 5.11: before
  # it the hook is unavailable with IncludeHOLBlocked false, said in the log.
  kv=$(uname -r | awk -F'[.-]' '{ print $1 * 1000 + $2 }')
  if [ -z "$f" ] && [ "$kv" -lt 5011 ]; then
    cell tcp_socket_read.hol "$want" no - n/a "kernel $(uname -r) < 5.11: no socket storage in fentry/tracepoint programs; the hook is unavailable with IncludeHOLBlocked false: $(unavail tcp_socket_read | cut -c1-160)"
    stop_collectd
    return
  fi
  # auto on a kernel that refuses every fentry attach (arm64 before 6.4)
  # falls back: check the flavour it took
  if [ "$want" = fentry ] && [ -n "$f" ] &&
    fentry_refused "$(grep "hook tcp_socket_read attached" "$LOG" | tail -n 1)"; then
    want=$f
  fi
  if [ "$f" != "$want" ]; then
    cell tcp_socket_read.hol "$want" no - FAIL "IncludeHOLBlocked false: chose ${f:-none}: $(unavail tcp_socket_read)"
    verifier_logs
    stop_collectd
    return
  fi
  ATTACHED=tcp_socket_read
  i=0
  while [ -z "$(val netstacklat-tcp_socket_read operations)" ] && [ $i -lt 100 ]; do
    nap 0.2
    i=$((i + 1))
  done
  # Two runs: a reader that keeps up, and one that lags 2 s so that the
  # data before the hole waits with the data behind it (issue 21, item 13).
  for lag in 0 2000; do
    cellname=tcp_socket_read.hol
    [ "$lag" = 0 ] || cellname=tcp_socket_read.hol_lagged
    # holtraffic's "key=value" words as H_key (integer part), in one awk;
    # the keys of the run before are unset first.
    hol_parse() {
      [ -n "${H_KEYS:-}" ] && unset $H_KEYS
      eval "$(echo "$out" | awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[1] ~ /^[a-z_]+$/) {
          v = kv[2]; sub(/[^0-9].*/, "", v); print "H_" kv[1] "=" v; keys = keys " H_" kv[1] } }
        END { print "H_KEYS=\"" keys "\"" }')"
    }
    try=1
    while :; do
      settle
      b=$(ops tcp_socket_read)
      s0=$(val netstacklat-tcp_socket_read operations-skipped-hol_blocked)
      t0=$(after_last_read)
      tp=$(date +%s)
      # (a port in 20000-31999, below the ephemeral ports, which
      # guest-check keeps at 51000-60999: a client socket there, or its
      # TIME_WAIT, made the listener's bind fail once)
      out=$(/opt/vm/holtraffic lo 127.0.0.1 $((20000 + (tp + lag + try) % 12000)) 10 5 10 300 $lag) || echo "NOTE hol traffic incomplete: $out"
      settle
      a=$(ops tcp_socket_read)
      s1=$(val netstacklat-tcp_socket_read operations-skipped-hol_blocked)
      maxl=$(max_since netstacklat-tcp_socket_read latency-max "$t0")
      echo "HOL mode=$mode lag=$lag $out"
      hol_parse
      # again when nothing waited (the sender was late), or when the
      # traffic did not run at all (no "reads=": holtraffic died early)
      { [ "${H_waited-}" = 0 ] || [ -z "${H_reads-}" ]; } && [ $try -lt 3 ] || break
      echo "NOTE no data waited behind the hole, or no traffic: again"
      try=$((try + 1))
    done
    # What must be counted and left out: per read in the fentry flavour,
    # per skb in the tracepoint one (holtraffic tells them apart by the
    # bytes read and the kernel's receive timestamps); only the data that
    # arrived out of order waited behind the hole.
    if [ "$f" = tracepoint ]; then
      wc=$((${H_skbs:-0} - ${H_skbs_behind:-0})) ws=${H_skbs_behind:-0}
    else
      wc=$((${H_reads:-0} - ${H_waited:-0})) ws=${H_waited:-0}
    fi
    drops=${H_drops-} ofo=${H_ofo-} behind=${H_behind-} waited=${H_waited-}
    d=$((a - b))
    sk=$((${s1:-0} - ${s0:-0}))
    note="lag $lag ms: counted $d, skipped-hol_blocked $sk, latency-max $maxl s; want $wc and $ws; receiver: ${H_before-} reads before the hole, ${H_hole-} of the lost one, ${behind:-?} behind it (${waited:-?} of them waited there: ${H_ofo_bytes-} bytes arrived out of order), ${H_late-} late, in ${H_skbs-} skbs (${H_skbs_behind-} behind); drops ${drops:-?}, TCPOFOQueue +${ofo:-?}"
    # Reads behind the hole waited >= 150 ms: one counted would put
    # latency-max at 0.268 s or more (only without lag: with it, the data
    # before the hole waited 2 s, for the reader, and is counted; and only
    # when no read to be counted carried such a wait by the kernel's own
    # timestamp: kept_max_ms, see holtraffic).
    if [ "${drops:-0}" -ge 1 ] && [ "${ofo:-0}" -ge 1 ] && [ "${behind:-0}" -eq 5 ] && [ "${waited:-0}" -ge 1 ] &&
      [ "$d" -eq "$wc" ] && [ -n "$s1" ] && [ "$sk" -eq "$ws" ] &&
      { [ "$lag" != 0 ] || awk -v m="$maxl" -v k="${H_kept_max_ms-}" 'BEGIN { exit !(m < 0.25 || k >= 125) }'; }; then
      cell "$cellname" "$f" yes "$d" ok "$note"
    else
      cell "$cellname" "$f" yes "$d" FAIL "$note"
    fi
  done
  stop_collectd
}
