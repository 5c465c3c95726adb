# Sourced by tests/vm/guest-check: the loader's self-test hook (cell
# selftest.openat), before each mode's main run.

# --------------------------------------------------- loader self-test hook
loader_selftest() { # mode
  lmode=$1
  want=$(want_of "$lmode")
  [ "$lmode" = nobtf ] && lmode=auto
  out=$(/opt/vm/loader_check "$lmode" 1000 2>&1)
  got=$(echo "$out" | sed -n 's/^hook.openat=//p')
  n=$(echo "$out" | sed -n 's/^counted=//p')
  if [ "$got" = "$want" ]; then
    if [ "$n" = 1000 ]; then
      cell selftest.openat "$want" yes "$n" ok "AttachMode $lmode: 1000 openat calls counted"
    else
      cell selftest.openat "$want" yes "${n:--}" FAIL "AttachMode $lmode: counted $n of 1000 openat calls"
    fi
  elif [ "$want" = fentry ] && fentry_refused "$out"; then
    cell selftest.openat "$want" no - n/a "$FENTRY_NA"
  else
    why=$(echo "$out" | grep 'hook openat' | head -n 1)
    cell selftest.openat "$want" no - FAIL "AttachMode $lmode chose ${got:-none}: $why"
    echo "$out" | grep -i 'libbpf' | tail -n 30 | sed 's/^/LOG /'
  fi
}
