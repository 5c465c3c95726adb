# Sourced by tests/vm/guest-check: receiving on every CPU at once (cells
# conc.<hook>, conc.tcp_window.clamps), in the main run (main.sh).

# ---- concurrency: receive on every guest CPU at once (issue 11, item 3).
# The entry/return pairs (kprobe+kretprobe, fentry+fexit) must count exactly
# when calls run on both CPUs at the same time, also under the idle task
# (pid 0 on every CPU: a key of pid_tgid is then shared). RPS on lo steers
# each flow's receive to a CPU by its hash; the other CPU is interrupted
# and receives in softirq under whatever it was running, mostly the idle
# task (the senders block between bursts; each flow's source port is chosen
# so that RPS steers it to the other CPU). Then a reader spinning on the
# other CPU takes each datagram the moment it is queued (the race of the
# tracepoint flavour). Meanwhile two clamp connections, one pinned per CPU,
# make the kernel prune and clamp on both CPUs.
#
# Exact counts, except for runs the kernel never gave the programs: a
# kprobe that fires while another kprobe handler runs on the same CPU (a
# softirq on the return from an interrupt that came during a process-context
# handler such as skb_consume_udp's) is skipped and only counted as missed.
# So: sent = measured (+ skipped-raced for the tracepoint) + lost, with
# 0 <= lost <= what the kernel reports missed for the hook's programs
# (bpfverify --missed: from 6.7; on older kernels it reports 0, so there
# lost must be 0).
CONC_FLOWS=${CONC_FLOWS:-3}  # UDP flows per CPU (block) ...
CONC_N=${CONC_N:-300}        # ... datagrams each
CONC_SPIN_N=${CONC_SPIN_N:-150} # datagrams per CPU taken by a spinning reader

missed_delta() { # program name prefix -> missed runs between M0 and M1
  { echo "$M0" | sed 's/^MISSED/BEFORE/'; echo "$M1"; } |
    awk -v p="$1" 'index($2, p) == 1 { if ($1 == "BEFORE") b += $3; else a += $3 }
                   END { print a - b + 0 }'
}

# Two clamp connections pinned to CPUs 0 and 1 at once (lo at MTU 1500, so
# that the receive path prunes): start them; clamp_pair_wait ends them.
clamp_pair_start() { # first port (the second is the next)
  ip link set lo mtu 1500
  /opt/vm/vmtraffic clamp "$1" 6 0 >/dev/null &
  CP0=$!
  /opt/vm/vmtraffic clamp $(($1 + 1)) 6 1 >/dev/null &
  CP1=$!
}
clamp_pair_wait() {
  wait $CP0 $CP1
  ip link set lo mtu 65536
}

check_concurrency() { # mode
  mode=$1
  rps=/sys/class/net/lo/queues/rx-0/rps_cpus
  ncpu=$(grep -c '^processor' /proc/cpuinfo)
  if [ -w $rps ]; then echo 3 >$rps; else echo "NOTE no $rps: no RPS on lo"; fi
  settle
  K0=$(snmp)
  M0=$(/opt/vm/bpfverify --missed)
  for h in udp_start udp_socket_enqueued udp_socket_read; do
    eval "CB_$h=$(ops "$h"); CR_$h=$(val "netstacklat-$h" operations-skipped-raced)"
  done
  # The clamp counter of the flavour (check_tcp_window): clamps from
  # fexit/kprobe, clamped_wakeups from the tracepoint flavour.
  cname=clamps
  [ "$mode" = tracepoint ] && cname=clamped_wakeups
  cw=$(val tcp_window "operations-$cname")
  cp0=$(prune_called)
  cport=$((30000 + $(date +%s) % 5000))
  # Phase 1: nothing else runs, so the CPUs are idle when they receive.
  out=$(/opt/vm/vmtraffic conc "$cport" "$CONC_FLOWS" "$CONC_N" block) || echo "NOTE concurrent udp (block): $out"
  sent=$(echo "$out" | awk '{ print $3 }')
  rcvd=$(echo "$out" | awk '{ print $5 }')
  # Phase 2: clamp connections on both CPUs and spinning UDP readers. RPS
  # off: each datagram is received on its sender's CPU, not from an
  # interrupt that could land in a reader's kprobe handler.
  [ -w $rps ] && echo 0 >$rps
  clamp_pair_start $((cport + 100))
  nap 0.5
  out=$(/opt/vm/vmtraffic conc $((cport + 50)) 1 "$CONC_SPIN_N" spin) || echo "NOTE concurrent udp (spin): $out"
  sent=$((${sent:-0} + $(echo "$out" | awk '{ print $3 }')))
  rcvd=$((${rcvd:-0} + $(echo "$out" | awk '{ print $5 }')))
  clamp_pair_wait
  next_read
  next_read
  settle
  K1=$(snmp)
  M1=$(/opt/vm/bpfverify --missed)
  udp_in=$(($(kdelta Udp.InDatagrams) + $(kdelta Udp6InDatagrams)))
  echo "CONC mode=$mode cpus=$ncpu sent=$sent Udp(6)InDatagrams=$udp_in missed:$(
    { echo "$M0" | sed 's/^MISSED/BEFORE/'; echo "$M1"; } |
      awk '{ if ($1 == "BEFORE") v[$2] -= $3; else v[$2] += $3 }
           END { for (k in v) if (v[k]) printf " %s=%d", k, v[k] }')"
  lost_udp_start=
  for h in udp_start udp_socket_enqueued udp_socket_read; do
    case " $ATTACHED " in *" $h "*) ;; *) continue ;; esac
    eval "f=\$FL_$h; d=\$(( \$(ops $h) - CB_$h )); r0=\${CR_$h:-0}"
    r1=$(val "netstacklat-$h" operations-skipped-raced)
    raced=$((${r1:-0} - ${r0:-0}))
    # The tracepoint flavour of both enqueue hooks is one program, enqueued_tp.
    case $h in udp_start) p=udp_start_ ;; udp_socket_enqueued) p=udp_enqueued_
      [ "$f" = tracepoint ] && p=enqueued_tp ;; *) p=udp_read_ ;; esac
    missed=$(missed_delta "$p")
    # The witness is what the kernel delivered (Udp(6)InDatagrams): a
    # loaded TCG host can drop datagrams before UDP sees them (seen: 300
    # of 2110 on 6.12 cloud, every hook's count equal to the kernel's).
    # The kernel counts a datagram there when recvmsg takes it, so vmtraffic
    # reads every queued datagram before it closes a socket, also after a
    # reader gave up (a slow CI run, 6.1 cloud: 136 of 2111 were left
    # queued, every hook but the read counting them; most likely a spinning
    # reader's old deadline, 30 s for the whole run, had passed).
    lost=$((udp_in - d - raced))
    note="measured $d, skipped-raced $raced, lost $lost, kernel-reported missed runs $missed; sent $sent datagrams on $ncpu CPUs at once (the test read $rcvd), kernel UdpInDatagrams $udp_in"
    ok=ok
    # Only the tracepoint flavour of udp_socket_enqueued may skip as raced.
    if [ "$raced" -ne 0 ] && ! { [ "$h" = udp_socket_enqueued ] && [ "$f" = tracepoint ]; }; then
      ok=FAIL
    fi
    # A kprobe hit while another kprobe handler runs on the same CPU is
    # skipped by the kernel (docs/vm-matrix.md): a receive softirq run from
    # an interrupt's exit during a handler (a spinning reader's, in process
    # context) loses every UDP kprobe of the packets it takes, at udp_start
    # and udp_socket_enqueued alike. Kernels before 6.7 do not report those
    # misses, so there a loss of at most what one softirq run can take is
    # taken as such a miss, if both hooks lost the same packets: __do_softirq
    # runs NET_RX again up to 10 times (MAX_SOFTIRQ_RESTART, within 2 ms),
    # each run polling the backlog net.core.dev_weight (64) packets at a
    # time, so 10 x dev_weight (seen on 5.10: 1 of 2119, 21 of 2116, and 84
    # of 2118 in a guest starved by the host's load, more than the one
    # dev_weight batch this allowed before); it is said in the note.
    allowed=$missed
    kv=$(uname -r | awk -F'[.-]' '{ print $1 * 1000 + $2 }')
    [ "$h" = udp_start ] && lost_udp_start=$lost
    if [ "$f" = kprobe ] && [ "$kv" -lt 6007 ] && [ "$lost" -gt "$missed" ]; then
      batch=$((10 * $(cat /proc/sys/net/core/dev_weight 2>/dev/null || echo 64)))
      if [ "$lost" -le "$batch" ] && { [ "$h" != udp_socket_enqueued ] ||
        [ "$lost" = "${lost_udp_start:-$lost}" ]; }; then
        allowed=$lost
        note="$note (kprobe misses are not reported before 6.7: $lost, at most one softirq run's $batch packets, taken as such)"
      fi
    fi
    [ "$lost" -ge 0 ] && [ "$lost" -le "$allowed" ] || ok=FAIL
    # Most of them delivered, or the test says little about concurrency.
    [ "$sent" -gt 0 ] && [ "$((udp_in * 10))" -ge "$((sent * 9))" ] &&
      [ "$udp_in" -le "$sent" ] || ok=FAIL
    cell "conc.$h" "$f" yes "$d" "$ok" "$note"
  done
  want=$(want_of "$mode")
  f=$(sed -n "s/.*tcp_window: hook clamps attached with the \([a-z]*\) flavour.*/\1/p" "$LOG" | tail -n 1)
  if [ "$f" = "$want" ]; then
    # The kernel pruned nothing (seen once, arm64 TCG, a loaded host):
    # the pinned pair again, twice at most, as the main run's check does.
    r=0
    while [ "$(( $(prune_called) - cp0 ))" -le 0 ] && [ $r -lt 2 ]; do
      r=$((r + 1))
      echo "NOTE conc.tcp_window.clamps: PruneCalled +0, clamp workload again ($r)"
      clamp_pair_start $((cport + 100 + 2 * r))
      clamp_pair_wait
      next_read
      next_read
    done
    dc=$(( $(val tcp_window "operations-$cname") - ${cw:-0} ))
    dp=$(( $(prune_called) - cp0 ))
    if [ "$dp" -gt 0 ] && [ "$dc" -ge "$dp" ]; then
      cell conc.tcp_window.clamps "$f" yes "$dc" ok "two clamp connections pinned to CPUs 0 and 1 at once: $cname +$dc >= TcpExt PruneCalled +$dp > 0"
    else
      cell conc.tcp_window.clamps "$f" yes "$dc" FAIL "two clamp connections pinned to CPUs 0 and 1 at once: $cname +$dc, TcpExt PruneCalled +$dp (want $cname >= prunes > 0)"
    fi
  fi
}
