# Sourced by tests/vm/guest-check: drops against the kernel's own drop
# counters (cells drops.<mode>), a collectd of its own.

# drops: the drops of each kind the kernel counts itself, made from every
# CPU at once (vmtraffic drops), against the plugin's counts. The auto run
# asks for AttachMode fentry (auto takes the tracepoint for drops, which
# sees every drop: docs/drops.md), so that every flavour is checked. By
# reason (5.17+): no_socket = Udp NoPorts, then = Tcp OutRsts;
# socket_rcvbuff = Udp RcvbufErrors. On kernels without reasons, by
# location: the at_<function> that grew the most holds the kernel's count,
# in a function of the protocol's.
dsnap() { # every drops-* instance's latest value, "name=value" per line (one awk)
  set --
  for f in "$CSV"/*/drops-*/operations-[0-9][0-9][0-9][0-9]-*; do
    [ -e "$f" ] && set -- "$@" "$f"
  done
  [ $# = 0 ] && return
  awk -F, '/^[0-9]/ { k = FILENAME; sub(/\/operations-[^\/]*$/, "", k); sub(/.*\/drops-/, "", k)
      if (!(k in v)) o[n++] = k; v[k] = $2 }
    END { for (i = 0; i < n; i++) print o[i] "=" v[o[i]] }' "$@"
}
ddelta() { # snapshot before, snapshot after -> "name=delta" of those that grew
  awk -v b="$1" -v a="$2" 'BEGIN {
    n = split(b, l, "\n")
    for (i = 1; i <= n; i++) if ((j = index(l[i], "=")) > 1) B[substr(l[i], 1, j - 1)] = substr(l[i], j + 1)
    n = split(a, l, "\n")
    for (i = 1; i <= n; i++) {
      if ((j = index(l[i], "=")) <= 1) continue
      k = substr(l[i], 1, j - 1); v = substr(l[i], j + 1); w = (k in B) ? B[k] : 0
      if (v != w) printf "%s=%.0f\n", k, v - w
    } }'
}

drops_check() { # mode
  dmode=$1 # ($1 is reused below)
  want=$(want_of "$dmode")
  : >"$LOG"
  # "all": the guest has one namespace, and before 6.11 a datagram that
  # two CPUs race into a full buffer has none the programs can read
  # (docs/drops.md); the namespace filter is checked on the host.
  CD_ONLY='  <Drops>
    NetworkNamespace "all"
    MaxLocations 32
  </Drops>'
  [ "$dmode" = nobtf ] && CD_ONLY="  BTFPath \"/tmp/vmlinux.btf\"
$CD_ONLY"
  if ! start_collectd "$want"; then
    CD_ONLY=""
    cell "drops.$dmode" "$want" no - FAIL "collectd did not start with <Drops>"
    logx "drops|ERROR" 20
    stop_collectd
    return
  fi
  CD_ONLY=""
  f=$(sed -n 's/.*drops: hook kfree_skb attached with the \([a-z]*\) flavour.*/\1/p' "$LOG" | tail -n 1)
  why=$(sed -n 's/.*drops: hook kfree_skb is unavailable on this kernel: //p' "$LOG" | tail -n 1)
  way=reason
  grep -q "counting by drop location" "$LOG" && way=location
  if [ "$f" != "$want" ]; then
    stop_collectd
    if [ "$want" = fentry ] && [ "$way" = location ] &&
      echo "$why" | grep -q "an fentry program cannot see the drop location"; then
      cell "drops.$dmode" "$want" no - n/a "no drop reasons on this kernel, and an fentry program cannot see the drop location: unavailable, as documented"
    elif [ "$want" = fentry ] && fentry_refused "$why"; then
      cell "drops.$dmode" "$want" no - n/a "$FENTRY_NA"
    else
      cell "drops.$dmode" "$want" no - FAIL "AttachMode $want chose ${f:-none}: ${why:-no INFO or WARNING line}"
      logx "drops|libbpf" 30
    fi
    return
  fi
  next_read
  next_read
  port=$((31000 + $(date +%s) % 10000))
  # Traffic without drops first (in the tracepoint run only: the events
  # do not depend on the flavour): what the kernel frees through kfree_skb
  # that was not dropped is what the programs cost on a busy host
  # (docs/performance.md, "drops").
  busy="" bev=0 bpk=0 tb=0 te=0
  if [ "$dmode" = tracepoint ]; then
    K0=$(snmp)
    S0=$(dsnap)
    read -r tb _ </proc/uptime
    /opt/vm/vmtraffic conc $port "$CONC_FLOWS" "$CONC_N" block >/dev/null || echo "NOTE drops busy udp traffic incomplete"
    /opt/vm/vmtraffic tcp 127.0.0.1 $((port + 2 * CONC_FLOWS)) "$M_TCP" 0 0 >/dev/null || echo "NOTE drops busy tcp traffic incomplete"
    read -r te _ </proc/uptime
    next_read
    next_read
    K1=$(snmp)
    S1=$(dsnap)
    port=$((port + 2 * CONC_FLOWS + 1))
    busy=$(ddelta "$S0" "$S1" | tr '\n' ' ')
    bev=$(echo "$busy" | tr ' ' '\n' | awk -F= '{ s += $2 } END { print s + 0 }')
    bpk=$(($(kdelta Ip.InReceives) + $(kdelta Ip6InReceives)))
    echo "DROPEVENTS kernel=$(uname -r) mode=$dmode flavour=$f packets=$bpk events=$bev seconds=$(awk -v a="$tb" -v b="$te" 'BEGIN { printf "%.1f", b - a }') reasons: ${busy:-none}"
  fi
  ok=ok note="by $way"
  [ "$dmode" = tracepoint ] && note="$note; traffic without drops: $bev drop events for $bpk packets received in $(awk -v a="$tb" -v b="$te" 'BEGIN { printf "%.1f", b - a }') s (${busy:-none})"
  total=0
  for kind in udp tcp rcvbuf; do
    K0=$(snmp)
    S0=$(dsnap)
    out=$(/opt/vm/vmtraffic drops $kind $port "$N_DROPS") || echo "NOTE drops $kind traffic incomplete"
    port=$((port + 1))
    next_read
    next_read
    K1=$(snmp)
    S1=$(dsnap)
    grown=$(ddelta "$S0" "$S1" | tr '\n' ' ')
    sent=$(echo "$out" | sed -n 's/^drops [a-z]* sent //p')
    case $kind in
    udp) kname=Udp.NoPorts reason=no_socket proto=udp ;;
    tcp) kname=Tcp.OutRsts reason=no_socket proto=tcp ;;
    rcvbuf) kname=Udp.RcvbufErrors reason=socket_rcvbuff proto=udp ;;
    esac
    k=$(kdelta "$kname")
    pass=0
    if [ "$way" = reason ]; then
      got=$(echo "$grown" | tr ' ' '\n' | sed -n "s/^$reason=//p")
      got=${got:-0}
      [ "$got" = "$k" ] && [ "$k" -gt 0 ] && pass=1
    else
      # The location that grew the most must hold them all.
      set -- $(echo "$grown" | tr ' ' '\n' | awk -F= '$1 ~ /^at_/ && $2 > m { m = $2; n = $1 } END { if (n) print n, m }')
      got=${2:-0}
      [ "$got" = "$k" ] && [ "$k" -gt 0 ] && case ${1:-} in *"$proto"*) pass=1 ;; esac
    fi
    # Every datagram sent, or connection refused, is one the kernel counted
    # (the rcvbuf receiver keeps a datagram or two).
    [ "$kind" != rcvbuf ] && [ "$k" != "${sent:-x}" ] && pass=0
    [ $pass = 1 ] || ok=FAIL
    total=$((total + got))
    note="$note; $kind: sent ${sent:-?}, kernel $kname +$k, grown: ${grown:-nothing}"
  done
  stop_collectd
  cell "drops.$dmode" "$f" yes "$total" "$ok" "$note"
  [ $ok = FAIL ] && logx "drops|libbpf" 20
}
