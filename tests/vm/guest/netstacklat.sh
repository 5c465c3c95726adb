# Sourced by tests/vm/guest-check: netstacklat's cells of the main run
# (main.sh): netstacklat.clock, a cell per hook with exact counts, the
# delayed reads and tcp_socket_read.quantiles.

# The share of tcp_socket_read's reads since time $1 per bucket range, from
# the per-second bucket rates: "in_target below total" (sums of rates).
delay_buckets() {
  db_t0=$1
  set --
  for f in "$CSV"/*/netstacklat-tcp_socket_read/bucket-*-[0-9][0-9][0-9][0-9]-*; do
    [ -e "$f" ] && set -- "$@" "$f"
  done
  [ $# = 0 ] && { echo "0 0 0"; return; }
  # (one awk for every bucket's file: the bucket's lower bound from its name)
  awk -F, -v t0="$db_t0" -v tlo=16777216 'FNR == 1 { lo = FILENAME; sub(/.*\/bucket-/, "", lo); sub(/_.*/, "", lo); lo += 0 }
      /^[0-9]/ && $1 >= t0 && $2 == $2 { tot += $2; if (lo == tlo || lo == 2 * tlo) hit += $2; else if (lo < tlo) low += $2 }
      END { printf "%g %g %g\n", hit, low, tot }' "$@"
}

# Which clock netstacklat reads "now" from: TAI where the kernel has
# bpf_ktime_get_tai_ns (6.1 and later), MONOTONIC plus an offset before.
check_clock() { # mode
  c=$(sed -n 's/.*netstacklat: "now" is CLOCK_\([A-Z]*\) .*/\1/p' "$LOG" | tail -n 1)
  why=$(sed -n 's/.*netstacklat: "now" is CLOCK_[A-Z]* plus its offset to REALTIME (\(.*\))\..*/\1/p' "$LOG" | tail -n 1)
  set -- $(uname -r | tr '.-' '  ')
  want=MONOTONIC
  [ "$1" -gt 6 ] || { [ "$1" -eq 6 ] && [ "$2" -ge 1 ]; } && want=TAI
  # The clock goes in the "counted" column.
  if [ "$c" = "$want" ]; then
    cell netstacklat.clock - yes "$c" ok "AttachMode $mode: $why"
  else
    cell netstacklat.clock - no "${c:--}" FAIL "AttachMode $mode: clock '${c:-none}' ($why), want $want on $(uname -r)"
  fi
}

# The main run's exact counts: once the counters are still, datagrams (half
# of them in VLAN tags) and TCP messages with known counts, against the
# kernel's own counters.
nsl_traffic() {
  # Wait for the first values, then let the counters settle.
  i=0
  for h in $ATTACHED; do
    while [ -z "$(val "netstacklat-$h" operations)" ] && [ $i -lt 100 ]; do
      nap 0.2
      i=$((i + 1))
    done
  done
  settle
  for h in $ATTACHED; do eval "B_$h=$(ops "$h"); S_$h=$(seen "$h")"; done
  K0=$(snmp)

  port=$((20000 + $(date +%s) % 10000))
  # The receivers peek before every read: udp_socket_read counts the reads.
  /opt/vm/vmtraffic udp 127.0.0.1 $port "$N_UDP" peek || echo "NOTE udp v4 traffic incomplete"
  /opt/vm/vmtraffic udp ::1 $((port + 1)) "$N_UDP" peek || echo "NOTE udp v6 traffic incomplete"
  # The TCP receiver peeks before every read too: tcp_socket_read counts the reads.
  /opt/vm/vmtraffic tcp 127.0.0.1 $((port + 2)) "$M_TCP" 0 3 peek || echo "NOTE tcp v4 traffic incomplete"
  /opt/vm/vmtraffic tcp ::1 $((port + 3)) "$M_TCP" 0 3 peek || echo "NOTE tcp v6 traffic incomplete"
  # Datagrams whose VLAN tags are still in the packet (802.1Q, then
  # QinQ), as without VLAN offload: the tracepoint flavour of ip_start
  # fires before the kernel takes the tags out. Every UDP hook counts
  # them too.
  /opt/vm/vmtraffic vlan $((port + 8)) "$N_UDP" 8100 || echo "NOTE 802.1Q traffic incomplete"
  /opt/vm/vmtraffic vlan $((port + 9)) "$N_UDP" 88a8,8100 || echo "NOTE QinQ traffic incomplete"
  settle
  K1=$(snmp)
  for h in $ATTACHED; do eval "A_$h=$(ops "$h"); AS_$h=$(seen "$h")"; done
  udp_in=$(($(kdelta Udp.InDatagrams) + $(kdelta Udp6InDatagrams)))
  ip_in=$(($(kdelta Ip.InReceives) + $(kdelta Ip6InReceives)))
  segs=$(kdelta Tcp.InSegs)
  echo "KERNEL mode=$mode Udp(6)InDatagrams=$udp_in Ip(6)InReceives=$ip_in Tcp.InSegs=$segs"
  U=$((4 * N_UDP))
  T=$((2 * M_TCP))

  # Injected read delay (nsl_delay): its values from here on.
  t_delay=$(after_last_read)
}

# Injected read delay (where tcp_socket_read attached): every read waits
# DELAY_MS after data arrived.
nsl_delay() {
  d0=$(ops tcp_socket_read)
  DOUT=$(/opt/vm/vmtraffic tcp 127.0.0.1 $((port + 4)) "$D_READS" $DELAY_MS 5) || echo "NOTE delayed tcp traffic incomplete"
  echo "$DOUT"
  # The reader's own waits by the kernel's receive timestamps: the
  # shortest to before recvmsg(), the longest to after it (ns).
  set -- $(echo "$DOUT" | sed -n 's/^tcp [0-9]* waits \(-*[0-9]*\) \(-*[0-9]*\)$/\1 \2/p')
  WLO=${1:--1} WHI=${2:--1}
  next_read
  next_read
  d1=$(ops tcp_socket_read)
  set -- $(delay_buckets "$t_delay")
  DHIT=$1 DLOW=$2 DTOT=$3
  DP50=$(min_since netstacklat-tcp_socket_read latency-p50 "$t_delay")
  # Every interval's quantiles within 5% of the reader's waits (a
  # quantile of some of the reads lies between the shortest and the
  # longest of all); max within one fine bucket (6.25%) above.
  QLO=$(min_since netstacklat-tcp_socket_read latency-p50 "$t_delay")
  QHI=$(max_since netstacklat-tcp_socket_read latency-p99 "$t_delay")
  QMAX=$(max_since netstacklat-tcp_socket_read latency-max "$t_delay")
  echo "DELAY mode=$mode reads=$((d1 - d0)) rates in [16.8,33.6) ms=$DHIT below=$DLOW total=$DTOT"
}

# Three shapes of waits (the 70/30 mix of 18 and 30 ms, none or 2 ms,
# 0.2 ms with 40 ms before 1 read in 100), each read by vmtraffic, which
# prints every read's wait by SO_TIMESTAMPNS; qcheck splits the reads
# into the plugin's intervals by its operations counter (the reads are
# the only TCP reads meanwhile, one at a time) and checks each
# interval's p50..p99.9 within 5% of the exact quantiles of its reads'
# waits and max within 6.25% above the longest.
nsl_quantiles() {
  QOK=ok QNOTE= QN=0
  qp=$((port + 5))
  for sh in mix:30 bimodal:60 tail:200; do
    shape=${sh%%:*} m=${sh#*:}
    qb=$(ops tcp_socket_read)
    qt=$(date +%s)
    /opt/vm/vmtraffic tcp 127.0.0.1 $qp "$m" "$shape" 1 >"$CD/reads-$shape" || echo "NOTE $shape traffic incomplete"
    qp=$((qp + 1))
    next_read
    next_read
    # Exit status 2: a quantile of the last read not written yet (the
    # write threads write a read's values in parallel): again after the
    # next read, 5 times at most.
    qtry=0
    while :; do
      qout=$(/opt/vm/vmtraffic qcheck "$(echo "$CSV"/*/netstacklat-tcp_socket_read)" "$CD/reads-$shape" "$qt" "$qb")
      qrc=$?
      [ $qrc = 2 ] && [ $qtry -lt 5 ] || break
      qtry=$((qtry + 1))
      next_read
    done
    [ $qrc = 0 ] || QOK=FAIL
    echo "$qout" | sed "s/^/QCHECK mode=$mode $shape: /"
    QNOTE="$QNOTE; $shape: $(echo "$qout" | tail -n 1 | sed 's/^qcheck //')"
    QN=$((QN + m))
  done
}

# A cell per attached hook: the counts of nsl_traffic, and for
# tcp_socket_read the delay and the quantiles too.
nsl_cells() {
  for h in $ATTACHED; do
    eval "f=\$FL_$h; d=\$((A_$h - B_$h)); ds=\$((AS_$h - S_$h))"
    ok=ok
    note="measured $d, seen $ds"
    case $h in
    udp_start | udp_socket_enqueued | udp_socket_read)
      note="$note; sent $U datagrams (half in VLAN tags), kernel UdpInDatagrams $udp_in"
      [ "$d" -eq "$U" ] && [ "$udp_in" -eq "$U" ] || ok=FAIL
      ;;
    ip_start)
      # TCP packets over loopback still carry the sender's delivery time
      # here and are skipped; every packet must be seen, the datagrams
      # measured, those in VLAN tags too.
      note="$note; kernel InReceives $ip_in; at least $U datagrams measured, $((U / 2)) of them in 802.1Q or QinQ tags"
      [ "$ds" -eq "$ip_in" ] && [ "$d" -ge "$U" ] || ok=FAIL
      ;;
    tcp_start)
      note="$note; kernel Tcp.InSegs $segs"
      if [ "$f" = tracepoint ]; then
        # tcp_probe sees established sockets only: handshake and
        # teardown segments (at most 8 per connection here) are not.
        [ "$ds" -le "$segs" ] && [ "$ds" -ge $((segs - 16)) ] || ok=FAIL
        note="$note (tracepoint: established sockets only, allowed $((segs - 16))..$segs)"
      else
        [ "$ds" -eq "$segs" ] || ok=FAIL
      fi
      ;;
    tcp_socket_enqueued)
      # tcp_queue_rcv also queues a FIN (it has a sequence number): one
      # each way per connection, so up to 4 on top of the messages.
      note="$note; sent $T messages (+ up to 4 FINs)"
      [ "$d" -ge "$T" ] && [ "$d" -le $((T + 4)) ] || ok=FAIL
      ;;
    tcp_socket_read)
      note="$note; made $T reads"
      [ "$d" -eq "$T" ] || ok=FAIL
      # Delay: all reads measured at >= 16.8 ms (never less than the delay),
      # most below 67.1 ms: a guest that the loaded host lets wait reads
      # late for real, and the next bucket, [33.6, 67.1) ms, holds those.
      # Where the reader's own longest wait (the witness) is 67.1 ms or
      # more, the guest was starved past that bucket too (an emulated
      # arm64 guest once had reads wait up to 839 ms, and 10.4 of 21.0
      # of the rate there): "most" is then not asked, the quantiles
      # against the reader's waits still are.
      # Every interval's p50 at least the delay less the estimate's 4%
      # (fine buckets; 16.8 ms with the log2 buckets of before).
      note="$note; ${DELAY_MS} ms delay: $((d1 - d0)) of $D_READS reads, buckets [16.8,67.1) ms rate $DHIT of $DTOT, below $DLOW, lowest p50 ${DP50:-none} s (want >= $(awk -v d=$DELAY_MS 'BEGIN { print d * 0.96 / 1000 }')); p50..p99 ${QLO:-none}..${QHI:-none} s, max ${QMAX:-none} s, the reader's waits $WLO..$WHI ns (quantiles within 5%, max within 6.25%)"
      if [ $((d1 - d0)) -ne "$D_READS" ] || ! awk -v h="$DHIT" -v l="$DLOW" -v t="$DTOT" \
        -v p="${DP50:-0}" -v d="$DELAY_MS" -v qlo="${QLO:-0}" -v qhi="${QHI:-0}" \
        -v qmax="${QMAX:-0}" -v wlo="$WLO" -v whi="$WHI" \
        'BEGIN { exit !(t > 0 && l == 0 && (h >= t / 2 || whi >= 67108864) &&
                        p >= d * 0.96 / 1000 &&
                        wlo > 0 && qlo >= 0.95 * wlo / 1e9 && qhi <= 1.05 * whi / 1e9 &&
                        qmax >= 0.999 * wlo / 1e9 && qmax <= 1.0625 * whi / 1e9) }'; then
        ok=FAIL
      fi
      ;;
    esac
    cell "$h" "$f" yes "$d" "$ok" "$note"
    [ $ok = FAIL ] && logx "hook $h|libbpf" 20
    if [ "$h" = tcp_socket_read ]; then
      cell tcp_socket_read.quantiles "$f" yes "$QN" "$QOK" "every interval's p50, p90, p99, p99.9 within 5% of the exact quantiles of its reads' waits (SO_TIMESTAMPNS), max within 6.25%$QNOTE"
    fi
  done
}
