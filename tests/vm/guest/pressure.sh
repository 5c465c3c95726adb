# Sourced by tests/vm/guest-check: pressure's cells of the main run
# (tests/vm/guest/main.sh, the auto and nobtf runs).

psi_total() { # resource kind -> total in µs
  sed -n "s/^$2 .*total=\([0-9]*\).*/\1/p" /proc/pressure/"$1"
}

# PSI (auto run only): the last totals dispatched lie between /proc's
# values before collectd started (psi0, main_start) and after it stopped.
check_pressure() {
  if [ ! -e /proc/pressure/cpu ]; then
    cell pressure - no - FAIL "kernel without /proc/pressure"
  else
    set -- $psi0
    for r in cpu memory io; do
      lo=$1
      shift
      hi=$(psi_total $r some)
      v=$(val "pressure-$r" total_time_in_ms-some)
      n=$(nvals "pressure-$r" total_time_in_ms-some)
      a=$(val "pressure-$r" percent-some-avg10)
      if [ -n "$v" ] && [ "$n" -ge 2 ] && [ $((lo / 1000)) -le "$v" ] && [ "$v" -le $((hi / 1000)) ] &&
        awk -v a="$a" 'BEGIN { exit !(a >= 0 && a <= 100) }'; then
        cell "pressure.$r" - yes "$n" ok "some total ${v} ms within /proc [$((lo / 1000)), $((hi / 1000))] ms, avg10 $a"
      else
        cell "pressure.$r" - yes "${n:-0}" FAIL "some total '${v}' ms vs /proc [$((lo / 1000)), $((hi / 1000))] ms ($n values), avg10 '$a'"
      fi
    done
  fi
}
