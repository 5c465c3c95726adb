# Sourced by tests/vm/guest-check: what every check of the guest uses
# (the cell lines, the csv values, waiting for the plugin's reads,
# collectd's start and stop, log excerpts, the checks' timing).

N_UDP=${N_UDP:-100}        # datagrams per address family
M_TCP=${M_TCP:-30}         # messages (= reads) per TCP connection
N_DROPS=${N_DROPS:-50}     # drops of each kind per CPU (drops_check)
D_READS=${D_READS:-20}     # reads with an injected delay
DELAY_MS=20                # -> bucket [16777216, 33554432) ns
NSL_HOOKS="ip_start tcp_start udp_start tcp_socket_enqueued udp_socket_enqueued tcp_socket_read udp_socket_read"
SKIPS="no_timestamp not_rx_timestamp future map_full hol_blocked raced"
CD=/tmp/cd
# nap's FIFO: opened read-write, so that the open does not wait for a
# writer, and nothing is ever written to it.
[ -p /tmp/.nap ] || mkfifo /tmp/.nap
exec 9<>/tmp/.nap
CSV=$CD/csv
LOG=$CD/collectd.log

# In mode nobtf the flavour column reads "kprobe/nobtf" ("nobtf" for "-").
CELL_TAG=""
cell() {
  c_h=$1 c_f=$2
  shift 2
  if [ -n "$CELL_TAG" ]; then
    if [ "$c_f" = - ]; then c_f=$CELL_TAG; else c_f="$c_f/$CELL_TAG"; fi
  fi
  echo "CELL $c_h $c_f $*"
  read -r c_up c_idle </proc/uptime
  echo "T $c_up $c_h"
}
verifier_logs() { # the kernel's verifier log per rejected program (its end)
  awk -v q="'" '/BEGIN PROG LOAD LOG/ { on = 1; n = 0; split($0, a, "prog " q); split(a[2], b, q); prog = b[1]; next }
       /END PROG LOAD LOG/ { on = 0; if (!(prog in done)) { done[prog] = 1
         print "verifier log of " prog " (last " (n < 25 ? n : 25) " of " n " lines):"
         for (i = (n > 25 ? n - 25 : 0); i < n; i++) print "  " l[i] } ; next }
       on { l[n++] = $0 }' "$LOG" | sed 's/^/LOG /'
}
logx() { # excerpt of the collectd log: lines matching $1
  grep -E "$1" "$LOG" 2>/dev/null | tail -n "${2:-40}" | sed 's/^/LOG /'
}

# fentry/fexit refused by the kernel itself: ENOTSUPP (524) from the
# attach (arm64 before 6.4 has no ftrace direct calls). The plugin says so
# in the reason of the flavour it fell back to; the cell is n/a.
FENTRY_NA="the kernel cannot attach fentry/fexit to kernel functions (ENOTSUPP; arm64 before 6.4)"
fentry_refused() { # text of the plugin's attach or unavailable line
  echo "$1" | grep -q "fentry: cannot attach to [a-z_0-9]*: .*(ENOTSUPP"
}

# The flavour a mode must attach: auto takes fentry/fexit where the kernel
# has it; without the kernel's BTF (nobtf) only kprobes can attach.
want_of() {
  case "$1" in auto) echo fentry ;; nobtf) echo kprobe ;; *) echo "$1" ;; esac
}

# Which flavours the plugin's BPF code has per hook (the receive path's, bpf/rx/).
has_flavour() { # hook flavour
  case "$2" in
  tracepoint) case "$1" in udp_start | udp_socket_read) return 1 ;; esac ;;
  esac
  return 0
}

# ------------------------------------------------------------ csv values
# One awk each, not a pipe of four programs: a process costs the guest
# milliseconds of emulated CPU, and the checks read thousands of values
# (no file matched: awk stops at the literal name, and prints nothing).
val() { # plugin-instance type-instance -> latest value
  awk -F, '/^[0-9]/ { v = $2 } END { print v }' \
    "$CSV"/*/"$1"/"$2"-[0-9][0-9][0-9][0-9]-* 2>/dev/null
}
nvals() {
  nv=$(awk '/^[0-9]/ { n++ } END { print n + 0 }' "$CSV"/*/"$1"/"$2"-[0-9][0-9][0-9][0-9]-* 2>/dev/null)
  echo "${nv:-0}"
}
ops() { # hook -> its operations counter (0 before its first value)
  awk -F, '/^[0-9]/ { v = $2 } END { print v + 0 }' \
    "$CSV"/*/"netstacklat-$1"/operations-[0-9][0-9][0-9][0-9]-* 2>/dev/null || echo 0
}
# The latest value of each file, summed per type instance (a file a day:
# the newest day's value wins), in one awk for all the files: only files
# that exist are named (busybox awk stops at one that does not).
sum_latest() { # file... -> sum
  awk -F, '/^[0-9]/ { k = FILENAME; sub(/-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$/, "", k); v[k] = $2 }
    END { for (k in v) s += v[k]; print s + 0 }' "$@"
}
seen() { # measured plus skipped for any reason
  set -- "$1"
  for sn_f in "$CSV"/*/"netstacklat-$1"/operations-[0-9][0-9][0-9][0-9]-*; do
    [ -e "$sn_f" ] && set -- "$@" "$sn_f"
  done
  for r in $SKIPS; do
    for sn_f in "$CSV"/*/"netstacklat-$1"/"operations-skipped-$r"-[0-9][0-9][0-9][0-9]-*; do
      [ -e "$sn_f" ] && set -- "$@" "$sn_f"
    done
  done
  shift
  if [ $# = 0 ]; then echo 0; else sum_latest "$@"; fi
}
snapshot() { # every attached hook's operations counter, one line, one awk
  set --
  for h in $ATTACHED; do
    for sn_f in "$CSV"/*/"netstacklat-$h"/operations-[0-9][0-9][0-9][0-9]-*; do
      [ -e "$sn_f" ] && set -- "$@" "$sn_f"
    done
  done
  [ $# = 0 ] && { echo "none"; return; }
  awk -F, -v hooks="$ATTACHED" '/^[0-9]/ { h = FILENAME; sub(/\/operations-[^\/]*$/, "", h); sub(/.*\/netstacklat-/, "", h); v[h] = $2 }
    END { n = split(hooks, hs, " "); for (i = 1; i <= n; i++) printf " %s=%s", hs[i], v[hs[i]] + 0; print "" }' "$@"
}
# A wait without a process of its own (sleep is one: a fork costs the
# emulated guest ~10 ms of CPU): read with a timeout on a FIFO that no
# one writes (fd 9, opened above).
nap() { read -t "$1" -u 9 nap_x; }
# How many values the plugin has dispatched so far: lines of every hook's
# flavour gauge (ebpf/<feature>-<hook>/gauge-flavour, dispatched at every
# read for each wanted hook, attached or not). It grows at each read.
dispatches() {
  nd=$(awk '/^[0-9]/ { n++ } END { print n + 0 }' "$CSV"/*/ebpf-*-*/gauge-flavour-* 2>/dev/null)
  echo "${nd:-0}"
}
next_read() { # wait until the plugin has dispatched once more (4 s at most)
  nr0=$(dispatches)
  nr=0
  while [ "$(dispatches)" = "$nr0" ] && [ $nr -lt 20 ]; do
    nap 0.2
    nr=$((nr + 1))
  done
}
settle() { # wait until the counters stop moving: the same across one read
  last=x
  i=0
  while [ $i -lt 30 ]; do
    next_read
    cur=$(snapshot)
    [ "$cur" = "$last" ] && return 0
    last=$cur
    i=$((i + 1))
  done
  return 1
}
snmp() { # the kernel's counters: "Ip.InReceives=n Tcp.InSegs=n ... Ip6InReceives=n"
  awk 'FILENAME ~ /snmp6$/ { print $1 "=" $2; next }
       FNR % 2 == 1 { split($0, k); g = k[1]; sub(/:$/, "", g); next }
       { for (i = 2; i <= NF; i++) printf "%s.%s=%s\n", g, k[i], $i }' /proc/net/snmp /proc/net/snmp6
}
kdelta() { # key -> after - before (of K1 and K0, snmp's output), one awk
  awk -v k="$1" -v a="$K1" -v b="$K0" 'function get(s,  n, l, i) {
      n = split(s, l, "\n")
      for (i = 1; i <= n; i++) if (index(l[i], k "=") == 1) return substr(l[i], length(k) + 2)
      return 0 }
    BEGIN { printf "%.0f\n", get(a) - get(b) }'
}
prog_ids() { bpftool prog show 2>/dev/null | sed -n 's/^\([0-9][0-9]*\): .*/\1/p'; }
held_ids() { # BPF program ids held by pid $1
  cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -u
}

# ------------------------------------------------------------- collectd
# Interval: CD_INTERVAL (VM_GUEST_ENV), 0.5 s by default. The checks wait
# for reads (next_read, settle): at 1 s a guest took 166 and 204 s (6.1
# arm64, 6.12 amd64, two alone), at 0.5 s 129 and 152 s, with no more CPU.
# The bucket rates (26 values per hook every read, each a file the csv
# plugin appends to: emulated, the costliest part of a guest's idle time)
# only where a check reads them: the main run's delayed reads.
CD_BUCKETS=false
start_collectd() { # AttachMode, extra config, extra <Netstacklat> lines
  rm -rf "$CD"
  mkdir -p "$CD"
  cat >"$CD/collectd.conf" <<EOF
Interval ${CD_INTERVAL:-0.5}
Hostname "vm"
BaseDir "$CD"
PIDFile "$CD/collectd.pid"
PluginDir "/opt/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin logfile
<Plugin logfile>
  LogLevel debug
  File "$LOG"
</Plugin>
LoadPlugin csv
<Plugin csv>
  DataDir "$CSV"
  StoreRates false
</Plugin>
LoadPlugin ebpf
<Plugin ebpf>
  AttachMode "$1"
EOF
  if [ -n "${CD_ONLY:-}" ]; then # this body instead of the two features
    echo "$CD_ONLY" >>"$CD/collectd.conf"
  else
    cat >>"$CD/collectd.conf" <<EOF
  <Netstacklat>
    Buckets $CD_BUCKETS
${3:-}
  </Netstacklat>
  <WindowClamp>
    Threshold 32768
    TcpMemory false
    StalledReceivers false
  </WindowClamp>
$2
EOF
  fi
  echo "</Plugin>" >>"$CD/collectd.conf"
  read -r sc_up sc_idle </proc/uptime
  collectd -f -C "$CD/collectd.conf" >"$CD/stdout" 2>&1 9<&- &
  CD_PID=$!
  i=0
  while [ $i -lt 600 ]; do
    if grep -q "Initialization complete" "$LOG" 2>/dev/null; then
      read -r sc_up2 sc_idle </proc/uptime
      echo "T $sc_up2 collectd-start $(awk -v a="$sc_up" -v b="$sc_up2" 'BEGIN { printf "%.1f", b - a }') s"
      return 0
    fi
    kill -0 $CD_PID 2>/dev/null || break
    nap 0.1
    i=$((i + 1))
  done
  return 1
}

stop_collectd() {
  kill -TERM $CD_PID 2>/dev/null
  wait $CD_PID
  CD_RC=$?
}

# Flavour chosen per hook, from the INFO lines; reasons from the WARNINGs.
chosen() { sed -n "s/.*netstacklat: hook $1 attached with the \([a-z]*\) flavour.*/\1/p" "$LOG" | tail -n 1; }
unavail() { sed -n "s/.*netstacklat: hook $1 is unavailable on this kernel: //p" "$LOG" | tail -n 1; }
# Every hook's flavour in one pass over the log, as CH_<feature>_<hook>
# (the last "attached" line wins, as in chosen()); and every flavour gauge
# in one awk, as G_<feature>_<hook>. The names of a run before are unset.
load_flavours() {
  [ -n "${FL_KEYS:-}" ] && unset $FL_KEYS
  FL_KEYS=""
  eval "$(sed -n -E 's/.*(netstacklat|tcp_window|drops): hook ([a-z_]+) attached with the ([a-z]+) flavour.*/CH_\1_\2=\3; FL_KEYS="$FL_KEYS CH_\1_\2"/p' "$LOG")"
  set --
  for lf_f in "$CSV"/*/ebpf-*-*/gauge-flavour-[0-9][0-9][0-9][0-9]-*; do
    [ -e "$lf_f" ] && set -- "$@" "$lf_f"
  done
  [ $# = 0 ] && return 0
  eval "$(awk -F, '/^[0-9]/ { k = FILENAME; sub(/\/gauge-flavour-[^\/]*$/, "", k); sub(/.*\/ebpf-/, "", k); gsub(/-/, "_", k); v[k] = $2 }
    END { for (k in v) print "G_" k "=" v[k] "; FL_KEYS=\"$FL_KEYS G_" k "\"" }' "$@")"
}

# A t0 for the *_since functions after the plugin's last read so far: its
# values are left out, the next read's are in. (date +%s is not: with reads
# every 0.5 s, the read before it can fall in the same second, and a
# delay cell once took the end of the traffic before it for its own.)
# A quarter of a second past it: the values of one read are dispatched
# within milliseconds, the next read comes an interval later.
after_last_read() {
  awk -F, '/^[0-9]/ && $1 > m { m = $1 } END { printf "%.3f\n", m + 0.25 }' \
    "$CSV"/*/ebpf-*-*/gauge-flavour-* 2>/dev/null
}
max_since() { # plugin-instance type-instance t0 -> largest value since t0
  awk -F, -v t0="$3" '/^[0-9]/ && $1 >= t0 && $2 !~ /nan/ && $2 + 0 > m { m = $2 + 0 } END { print m + 0 }' \
    "$CSV"/*/"$1"/"$2"-[0-9][0-9][0-9][0-9]-* 2>/dev/null || echo 0
}

min_since() { # plugin-instance type-instance t0 -> smallest value since t0 ("" if none)
  awk -F, -v t0="$3" '/^[0-9]/ && $1 >= t0 && $2 !~ /nan/ { if (m == "" || $2 + 0 < m) m = $2 + 0 }
      END { print m }' "$CSV"/*/"$1"/"$2"-[0-9][0-9][0-9][0-9]-* 2>/dev/null
}

# ------------------------------------------------------------ timing
# "TIME: <mode> <check> <seconds> <busy>" after each check: the guest's own time
# (/proc/uptime, 10 ms steps) that the check took, for the host's
# build/vm/cell-times.txt (tests/vm/run-matrix). No fork: the checks'
# waits follow the plugin's reads, and the timing must not move them.
# Not nested: one check at a time. /proc/uptime has two decimals.
TM_NCPU=$(grep -c '^processor' /proc/cpuinfo)
timed() { # check function args... -> the function's exit status
  tm_name=$1
  shift
  read -r tm_up tm_idle </proc/uptime
  tm_0=$((${tm_up%.*} * 100 + 1${tm_up#*.} - 100))
  tm_i0=$((${tm_idle%.*} * 100 + 1${tm_idle#*.} - 100))
  "$@"
  tm_rc=$?
  read -r tm_up tm_idle </proc/uptime
  tm_d=$((${tm_up%.*} * 100 + 1${tm_up#*.} - 100 - tm_0))
  # busy: CPU-seconds the guest's CPUs were not idle meanwhile (/proc/
  # uptime's second field sums every CPU's idle time): what the check
  # costs the host's CPUs, where the seconds also count its waits.
  tm_b=$((tm_d * TM_NCPU - (${tm_idle%.*} * 100 + 1${tm_idle#*.} - 100 - tm_i0)))
  [ "$tm_b" -lt 0 ] && tm_b=0
  printf 'TIME: %s %s %d.%02d %d.%02d\n' "${TM_MODE:--}" "$tm_name" $((tm_d / 100)) $((tm_d % 100)) $((tm_b / 100)) $((tm_b % 100))
  return $tm_rc
}
