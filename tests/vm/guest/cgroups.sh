# Sourced by tests/vm/guest-check: the Cgroup filter and GroupBy cgroup
# (cells cost.<mode>, cgfilter.<mode>, cgfilter_5000.<mode>), each with a
# collectd of its own.

# ---- the Cgroup filter's hash map with more cgroups than its old fixed
# 4096 entries (issue 21, item 6), on 6.1 (no cgroup storage: a Cgroup
# glob takes the hash way): 5,000 cgroups under the filtered path; the
# map is sized from the tree, so no WARNING says it is full, and a process
# in the last cgroup made has every datagram counted.
cgfilter_big_check() { # mode
  want=$(want_of "$1")
  case " $ATTACHED " in *" tcp_socket_read "*) ;; *)
    cell "cgfilter_5000.$1" "$want" n/a - n/a "tcp_socket_read not attached in this mode"
    return ;;
  esac
  [ -e /sys/fs/cgroup/cgroup.procs ] || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
  mkdir -p /sys/fs/cgroup/vmbig/pods
  (cd /sys/fs/cgroup/vmbig/pods && seq 1 5000 | sed 's/^/c/' | xargs mkdir -p)
  made=$(ls -d /sys/fs/cgroup/vmbig/pods/c[0-9]* | wc -l)
  : >"$LOG"
  if ! start_collectd "$1" "" '    Cgroup "/vmbig/pod?"'; then
    cell "cgfilter_5000.$1" "$want" no - FAIL "collectd did not start with a Cgroup glob"
    logx "rejected|unavailable|ERROR" 20
    return
  fi
  hash=$(grep -c "the Cgroup filter and GroupBy cgroup use hash maps" "$LOG")
  settle
  c0=$(seen tcp_socket_read)
  port=$((28000 + $(date +%s) % 10000))
  # 20 reads of one message each, one in flight at a time (one skb per
  # read: the tracepoint flavour counts per skb), by a process in the
  # last cgroup made.
  sh -c 'echo $$ >/sys/fs/cgroup/vmbig/pods/c5000/cgroup.procs && exec /opt/vm/vmtraffic tcp 127.0.0.1 '"$port"' 20 0 2' ||
    echo "NOTE cgfilter_5000 tcp traffic incomplete"
  settle
  c1=$(seen tcp_socket_read)
  full=$(grep -c "cgroup filter's map .* is full" "$LOG")
  stop_collectd
  (cd /sys/fs/cgroup/vmbig/pods && ls -d c[0-9]* | xargs rmdir)
  inside=$((${c1:-0} - ${c0:-0}))
  note="$made cgroups under the glob's path; hash way: $hash INFO line; $inside of 20 reads by a process in the last one counted; $full 'map is full' WARNINGs"
  if [ "$made" -ge 5000 ] && [ "$hash" = 1 ] && [ "$inside" = 20 ] && [ "$full" = 0 ]; then
    cell "cgfilter_5000.$1" "$want" yes "$inside" ok "$note"
  else
    cell "cgfilter_5000.$1" "$want" no "$inside" FAIL "$note"
    logx "cgroup|Cgroup|ERROR" 20
  fi
}

# SampleEvery, the Cgroup filter and GroupBy cgroup at once (cgroup storage
# on 6.2+, hash maps before: the log says which): every hook the mode's main
# run attached must load again, nothing rejected, and the datagrams a
# process in the configured cgroup sends must all be counted under that
# cgroup's group (operations is exact with SampleEvery).
cost_check() { # mode
  want=$(want_of "$1")
  case " $ATTACHED " in *" udp_socket_enqueued "*) ;; *)
    cell "cost.$1" "$want" n/a - n/a "udp_socket_enqueued not attached in this mode"
    return ;;
  esac
  [ -e /sys/fs/cgroup/cgroup.procs ] || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
  mkdir -p /sys/fs/cgroup/vmcost
  nat=$(echo $ATTACHED | wc -w)
  : >"$LOG"
  if ! start_collectd "$1" "" '    SampleEvery 16
    Cgroup "/vmcost"
    GroupBy "cgroup"'; then
    cell "cost.$1" "$want" no - FAIL "collectd did not start with SampleEvery, Cgroup and GroupBy cgroup"
    logx "rejected|unavailable|ERROR" 20
    return
  fi
  way=$(sed -n 's/.*the Cgroup filter and GroupBy cgroup use \([a-z ]*\) (.*/\1/p' "$LOG" | head -n 1)
  n=$(grep -c "netstacklat: hook .* attached with the $want flavour" "$LOG")
  rej=$(grep -c "rejected by the kernel" "$LOG")
  settle
  port=$((26000 + $(date +%s) % 10000))
  sh -c 'echo $$ >/sys/fs/cgroup/vmcost/cgroup.procs && exec /opt/vm/vmtraffic udp 127.0.0.1 '"$port $N_UDP" ||
    echo "NOTE cost udp traffic incomplete"
  settle
  got=$(seen "udp_socket_enqueued-vmcost")
  stop_collectd
  # Without the Cgroup filter the packet hooks load too: compare socket hooks.
  nsock=0
  for h in $ATTACHED; do
    case $h in ip_start | tcp_start | udp_start) ;; *) nsock=$((nsock + 1)) ;; esac
  done
  if [ "$n" = "$nsock" ] && [ "$rej" = 0 ] && [ "$got" = "$N_UDP" ]; then
    cell "cost.$1" "$want" yes "$n" ok "$n socket hooks loaded; ${way:-?}; $got of $N_UDP datagrams counted under the cgroup's group"
  else
    cell "cost.$1" "$want" no "$n" FAIL "$n socket hooks with $want (main run: $nsock of $nat), $rej programs rejected; ${way:-?}; $got of $N_UDP datagrams counted"
    logx "rejected|unavailable|ERROR|cgroup|Cgroup" 20
  fi
}

# The Cgroup filter alone on a path without globs: the ancestors way (plain
# loads up the socket cgroup's parents, every kernel). A process two levels
# below the configured cgroup sends N_UDP datagrams: all counted; one in a
# sibling sends N_UDP more: none counted.
cgfilter_check() { # mode
  want=$(want_of "$1")
  case " $ATTACHED " in *" udp_socket_enqueued "*) ;; *)
    cell "cgfilter.$1" "$want" n/a - n/a "udp_socket_enqueued not attached in this mode"
    return ;;
  esac
  [ -e /sys/fs/cgroup/cgroup.procs ] || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
  mkdir -p /sys/fs/cgroup/vmcf/pod/c1/c2 /sys/fs/cgroup/vmcf/other
  : >"$LOG"
  if ! start_collectd "$1" "" '    Cgroup "/vmcf/pod"'; then
    cell "cgfilter.$1" "$want" no - FAIL "collectd did not start with a Cgroup filter"
    logx "rejected|unavailable|ERROR" 20
    return
  fi
  anc=$(grep -c "the Cgroup filter uses the cgroups' ancestors" "$LOG")
  rej=$(grep -c "rejected by the kernel" "$LOG")
  settle
  c0=$(seen udp_socket_enqueued)
  port=$((27000 + $(date +%s) % 10000))
  sh -c 'echo $$ >/sys/fs/cgroup/vmcf/pod/c1/c2/cgroup.procs && exec /opt/vm/vmtraffic udp 127.0.0.1 '"$port $N_UDP" ||
    echo "NOTE cgfilter udp traffic incomplete"
  settle
  c1=$(seen udp_socket_enqueued)
  sh -c 'echo $$ >/sys/fs/cgroup/vmcf/other/cgroup.procs && exec /opt/vm/vmtraffic udp 127.0.0.1 '"$((port + 1)) $N_UDP" ||
    echo "NOTE cgfilter udp traffic incomplete"
  settle
  c2=$(seen udp_socket_enqueued)
  stop_collectd
  inside=$((${c1:-0} - ${c0:-0})) outside=$((${c2:-0} - ${c1:-0}))
  note="ancestors way: $anc INFO line; $inside of $N_UDP datagrams from 2 levels below counted, $outside of $N_UDP from a sibling"
  # kprobe programs keep the hash (the way is per program): the counts hold either way.
  if [ "$rej" = 0 ] && [ "$inside" = "$N_UDP" ] && [ "$outside" = 0 ] &&
    { [ "$anc" = 1 ] || [ "$want" = kprobe ]; }; then
    cell "cgfilter.$1" "$want" yes "$inside" ok "$note"
  else
    cell "cgfilter.$1" "$want" no "$inside" FAIL "$note; $rej programs rejected"
    logx "rejected|unavailable|ERROR|cgroup|Cgroup" 20
  fi
}
