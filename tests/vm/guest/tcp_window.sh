# Sourced by tests/vm/guest-check: tcp_window's provoked window clamps
# (cell tcp_window.clamps), in the main run (main.sh).

# ---- tcp_window: provoked window clamps against the kernel's PruneCalled.
prune_called() {
  awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) k[i] = $i; h = 1 }
                    else for (i = 1; i <= NF; i++) if (k[i] == "PruneCalled") print $i }' /proc/net/netstat
}

check_tcp_window() { # mode
  want=$(want_of "$1")
  f=$(sed -n "s/.*tcp_window: hook clamps attached with the \([a-z]*\) flavour.*/\1/p" "$LOG" | tail -n 1)
  if [ "$f" != "$want" ]; then
    why=$(sed -n "s/.*tcp_window: hook clamps is unavailable on this kernel: //p" "$LOG" | tail -n 1)
    if [ "$want" = tracepoint ] && echo "$why" | grep -q "no tracepoint sk_data_ready"; then
      cell tcp_window.clamps "$want" no - n/a "unavailable as expected: no sk_data_ready tracepoint"
    elif [ "$want" = fentry ] && fentry_refused "$why $(grep "tcp_window: hook clamps attached" "$LOG" | tail -n 1)"; then
      cell tcp_window.clamps "$want" no - n/a "$FENTRY_NA"
    else
      cell tcp_window.clamps "$want" no - FAIL "chose ${f:-none}: ${why:-no INFO or WARNING line}"
    fi
    return
  fi
  # One meaning per name: only fexit and kprobe count the reference
  # (operations-clamps); the tracepoint flavour counts sk_data_ready events
  # of clamped sockets (operations-clamped_wakeups) and never the former.
  name=clamps other=clamped_wakeups
  [ "$want" = tracepoint ] && name=clamped_wakeups other=clamps
  c0=$(val tcp_window operations-$name)
  p0=$(prune_called)
  # A receiver that stops reading and shrinks its buffer under a fast
  # sender: the kernel prunes and clamps (lo's 64 KiB MTU hides it). Under
  # emulation the sender can be too slow to fill the queue in one round
  # (seen once: arm64 TCG, kprobe mode, PruneCalled +0): another round, up to
  # three, while the kernel has pruned nothing. The comparison is the same.
  ip link set lo mtu 1500
  rounds=0
  while [ "$rounds" -lt 3 ]; do
    rounds=$((rounds + 1))
    /opt/vm/vmtraffic clamp $((25000 + rounds)) $((2 + 2 * rounds)) >/dev/null
    [ "$(( $(prune_called) - p0 ))" -gt 0 ] && break
  done
  ip link set lo mtu 65536
  next_read
  next_read
  c1=$(val tcp_window operations-$name)
  p1=$(prune_called)
  dc=$(( ${c1:-0} - ${c0:-0} ))
  dp=$(( p1 - p0 ))
  [ "$rounds" -gt 1 ] && echo "NOTE tcp_window.clamps $want: $rounds rounds of the clamp workload"
  no=$(nvals tcp_window operations-$other 2>/dev/null)
  # The tracepoint flavour with the receive path's tcp_socket_enqueued
  # there too (netstacklat's here): one program on sk_data_ready, the
  # path's, counts both (docs/tcp_window.md); it must say so.
  one=""
  if [ "$want" = tracepoint ] && grep -q "netstacklat: hook tcp_socket_enqueued attached with the tracepoint flavour" "$LOG"; then
    if grep -q "tcp_window: clamped wakeups are counted by the receive path's sk_data_ready program" "$LOG"; then
      one="; counted by the receive path's sk_data_ready program (one program there)"
    else
      one=MISSING
    fi
  fi
  if [ "$no" -ne 0 ]; then
    cell tcp_window.clamps "$want" yes "$dc" FAIL "operations-$other dispatched $no times by the $want flavour"
  elif [ "$one" = MISSING ]; then
    cell tcp_window.clamps "$want" yes "$dc" FAIL "tcp_socket_enqueued runs in the tracepoint flavour, but no INFO line says the receive path's program counts the clamped wakeups"
  elif [ "$dp" -gt 0 ] && [ "$dc" -ge "$dp" ]; then
    cell tcp_window.clamps "$want" yes "$dc" ok "$name +$dc >= TcpExt PruneCalled +$dp > 0; no $other$one"
  else
    cell tcp_window.clamps "$want" yes "$dc" FAIL "$name +$dc, TcpExt PruneCalled +$dp (want $name >= prunes > 0)"
  fi
}
