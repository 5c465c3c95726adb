# Sourced by tests/vm/guest-check: OutlierThreshold with SampleEvery auto
# (cells outliers.<mode>), a collectd of its own.

# OutlierThreshold loads the programs built with the outlier path
# (bpf/rx/outliers.bpf.c): each must load in the flavour that the
# mode's main run attached, and a reader 25 ms late (tcp_socket_read, in
# the reader's context) must be notified with its pid and comm.
outliers_check() { # mode
  want=$(want_of "$1")
  nat=$(echo $ATTACHED | wc -w)
  : >"$LOG"
  # With SampleEvery auto too: the object's sampling path with each hook's
  # N read at run time must load wherever the rest does (the traffic here
  # is far below CostBudget, so N stays 1 and every late read is timed).
  if ! start_collectd "$1" "" "    OutlierThreshold 0.02
    SampleEvery auto"; then
    cell "outliers.$1" "$want" no - FAIL "collectd did not start with OutlierThreshold and SampleEvery auto"
    logx "rejected|unavailable|ERROR" 20
    return
  fi
  n=$(grep -c "netstacklat: hook .* attached with the $want flavour" "$LOG")
  rej=$(grep -c "rejected by the kernel" "$LOG")
  got=- why="no tcp_socket_read"
  case " $ATTACHED " in *" tcp_socket_read "*)
    port=$((25000 + $(date +%s) % 10000))
    /opt/vm/vmtraffic tcp 127.0.0.1 $port 20 25 5 || echo "NOTE outlier traffic incomplete"
    next_read
    next_read
    got=$(grep -c "plugin_instance = tcp_socket_read, type_instance = outlier, message = hook=tcp_socket_read latency_s=0.0[2-9][0-9]* proto=tcp local=127.0.0.1:$port remote=127.0.0.1:[0-9]* pid=[0-9]* comm=vmtraffic " "$LOG")
    why="$got notifications of 20 reads 25 ms late"
    ;;
  esac
  stop_collectd
  if [ "$n" = "$nat" ] && [ "$rej" = 0 ] && [ "$got" != 0 ]; then
    cell "outliers.$1" "$want" yes "$n" ok "$n hooks loaded with OutlierThreshold and SampleEvery auto (as without); $why"
  else
    cell "outliers.$1" "$want" no "$n" FAIL "$n hooks with $want (without the option: $nat), $rej programs rejected; $why"
    logx "rejected|unavailable|ERROR|outlier" 20
    /opt/vm/bpfverify /opt/vm/rx_outliers.bpf.o 40 | sed 's/^/LOG /'
  fi
}
