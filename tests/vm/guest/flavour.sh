# Sourced by tests/vm/guest-check: the flavour gauges of the plugin's
# self-monitoring (cell flavour.gauges), in the main run (main.sh).

# ---- ebpf/<feature>-<hook>/gauge-flavour: the flavour each hook runs with
# (1 fentry/fexit, 2 tracepoint, 3 kprobe, 0 unavailable), equal to what
# the loader logged, and to the forced mode where the hook has it.
flavour_code() {
  case "$1" in fentry) echo 1 ;; tracepoint) echo 2 ;; kprobe) echo 3 ;; *) echo 0 ;; esac
}
check_flavour_gauges() { # mode
  want=$(want_of "$1")
  bad="" n=0
  load_flavours
  for fh in $(for h in $NSL_HOOKS; do echo "netstacklat:$h"; done) tcp_window:clamps; do
    feat=${fh%%:*} h=${fh#*:}
    eval "logged=\${CH_${feat}_$h-} g=\${G_${feat}_$h-}"
    # a feature with nothing left to run is disabled and dispatches nothing
    if [ -z "$g" ] && grep -q "$feat: nothing of this feature can run here" "$LOG"; then
      continue
    fi
    n=$((n + 1))
    [ -n "$g" ] || { bad="$bad $feat-$h=none"; continue; }
    g=${g%%.*}
    [ "$g" = "$(flavour_code "$logged")" ] || bad="$bad $feat-$h=$g(log:${logged:-unavailable})"
    # a hook that has the forced flavour and attached shows its code (auto
    # on a kernel that refuses every fentry attach falls back: not forced)
    if [ "$want" = fentry ] && fentry_refused "$(grep "$feat: hook $h attached" "$LOG" | tail -n 1)"; then
      continue
    fi
    if [ -n "$logged" ] && [ "$logged" != "$want" ]; then
      bad="$bad $feat-$h:attached-$logged"
    fi
  done
  if [ -z "$bad" ]; then
    cell flavour.gauges "$want" yes "$n" ok "ebpf-<feature>-<hook>/gauge-flavour of $n hooks match the loader (attached: $(flavour_code "$want"), unavailable: 0)"
  else
    cell flavour.gauges "$want" yes "$n" FAIL "mismatch:$bad"
  fi
}
