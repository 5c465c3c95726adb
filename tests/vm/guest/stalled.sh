# Sourced by tests/vm/guest-check: tcp_window's stalled receivers (cell
# tcp_window.stalled), in the auto run, a collectd of its own.

# Stalled receivers (tcp_window alone, no netstacklat) with the receive
# path's tcp_socket_enqueued program, which tcp_window's StalledReceivers
# wants itself, announcing the sockets given data (marked scans), in the
# flavour the run gives that hook; where the hook cannot attach (no
# sk_data_ready tracepoint before 6.6 in the tracepoint mode), the whole
# walk: the same counts either way. The
# witness: vmtraffic's one receiver that never reads its 3000 bytes, among
# 200 idle connections; then none once it closed.
stalled_reads() { # wait for N more reads of the stalled count (6 s at most)
  sr_want=$(($(nvals tcp_window count-stalled_receivers) + $1))
  sr_i=0
  while [ "$(nvals tcp_window count-stalled_receivers)" -lt $sr_want ] && [ $sr_i -lt 60 ]; do
    nap 0.1
    sr_i=$((sr_i + 1))
  done
}
stalled_check() { # mode
  smode=$1
  : >"$LOG"
  CD_ONLY='  <WindowClamp>
    Clamps false
    TcpMemory false
    StalledAfter 1
    StalledNotifications false
  </WindowClamp>'
  if ! start_collectd "$smode"; then
    CD_ONLY=""
    cell tcp_window.stalled "$smode" no - FAIL "collectd did not start"
    logx "tcp_window|ERROR" 20
    stop_collectd
    return
  fi
  CD_ONLY=""
  f=$(sed -n "s/.*tcp_window: hook tcp_socket_enqueued attached with the \([a-z]*\) flavour.*/\1/p" "$LOG" | tail -n 1)
  way=walk
  grep -q "each scan asks sock_diag about" "$LOG" && way=marks
  stalled_reads 1
  port=$((41000 + $(date +%s) % 10000))
  /opt/vm/vmtraffic stall $port 3000 200 8 >"$CD/stall.out" &
  spid=$!
  i=0
  while [ $i -lt 100 ] && ! grep -q "^stall" "$CD/stall.out"; do
    nap 0.1
    i=$((i + 1))
  done
  nap 1.5
  # The receiver stays stalled until vmtraffic closes it (8 s at most): the count
  # must show it meanwhile. Read after read while it lasts, not only two
  # reads on: on a starved guest, collectd's csv writer (threads of its
  # own) may lag the scans, and the values just read may be of scans less
  # than StalledAfter after the data, which rightly count 0.
  sr_n=0
  while :; do
    stalled_reads 1
    n=$(val tcp_window count-stalled_receivers)
    b=$(val tcp_window bytes-stalled_receivers)
    sr_n=$((sr_n + 1))
    { [ "${n%.*}" = 1 ] && [ "${b%.*}" = 3000 ]; } || [ $sr_n -ge 6 ] ||
      ! kill -0 $spid 2>/dev/null && break
  done
  # Seen (or not): vmtraffic's exit closes the receiver, as its own close
  # after 8 s would, without waiting for it.
  kill $spid 2>/dev/null
  wait $spid
  # Closed: 0 from a scan after the close on (the same lag as above).
  sr_n=0
  while :; do
    stalled_reads 1
    n2=$(val tcp_window count-stalled_receivers)
    sr_n=$((sr_n + 1))
    [ "${n2%.*}" = 0 ] || [ $sr_n -ge 6 ] && break
  done
  stop_collectd
  got="stalled ${n:-none} (${b:-none} bytes), after the close ${n2:-none}; $(head -n 1 "$CD/stall.out")"
  if [ -n "$f" ] && [ "$way" != marks ]; then
    cell tcp_window.stalled "${f:-none}" yes - FAIL "tcp_socket_enqueued attached ($f) but the scans are whole walks: $got"
    logx "tcp_window" 20
  elif [ -z "$f" ] && [ "$way" = marks ]; then
    cell tcp_window.stalled none no - FAIL "marked scans without tcp_socket_enqueued: $got"
  elif [ "${n%.*}" = 1 ] && [ "${b%.*}" = 3000 ] && [ "${n2%.*}" = 0 ]; then
    cell tcp_window.stalled "${f:-none}" yes - ok "by $way: $got"
  else
    cell tcp_window.stalled "${f:-none}" yes - FAIL "by $way: $got"
    logx "tcp_window|WARN" 20
  fi
}
