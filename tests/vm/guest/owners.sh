# Sourced by tests/vm/guest-check: who holds a socket (cell owners.iter),
# once per kernel, in the auto run.

# ---- who holds a socket (plugin/common/owners.c): the BPF task_file iterator
# finds the unit test's own socket and a child's in a cgroup of
# Kubernetes' depth, with pid, comm and the cgroup's full path (kernfs'
# parent field was renamed in 6.15: CO-RE must find either). Once per
# kernel: it does not depend on the attach mode.
owners_check() {
  [ -e /sys/fs/cgroup/cgroup.procs ] || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
  out=$(/opt/vm/owners_test 2>&1)
  echo "$out" | sed 's/^/OWNERS /'
  if echo "$out" | grep -q "^PASS: owners.real_pass" && ! echo "$out" | grep -q "^FAIL\|^SKIP"; then
    cell owners.iter - yes - ok "the task_file iterator found both sockets' owners: pid, comm, full cgroup path"
  else
    cell owners.iter - no - FAIL "$(echo "$out" | grep -v '^PASS' | head -n 3 | tr '\n' ' ')"
  fi
}
