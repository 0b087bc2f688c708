# shellcheck shell=bash
# shellcheck disable=SC2034  # FABPS_ENDED* and FABPS_LAST_ACCURACY are results
# Functions shared by deploy/slurm/fabps.sbatch (the job's driver, on the
# first node of the allocation) and deploy/slurm/fabps-role.sh (one process
# of the job, on any node). Sourced, never run. Every wait here is bounded.

# wait -n -p (fabps_wait_any) came with bash 5.1.
if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
  echo "fabps-slurm: bash 5.1 or later is needed, this is $BASH_VERSION" >&2
  exit 2
fi

# Prints "fabps-slurm: MESSAGE" on stderr and exits 1 (the driver's EXIT
# trap then stops what it started).
fabps_die() {
  echo "fabps-slurm: $*" >&2
  exit 1
}

# The IPv4 address the processes of this node advertise (in the store, to
# trainers and pservers): the first address of interface $1 when it is
# given (ib0, eth0, lo), else the address the node's hostname resolves to.
# Prints nothing when there is none.
fabps_node_address() {
  local iface="${1:-}"
  if [ -n "$iface" ]; then
    ip -4 -o addr show dev "$iface" 2>/dev/null |
      awk '{ split($4, a, "/"); print a[1]; exit }'
  else
    getent ahostsv4 "$(hostname)" 2>/dev/null | awk '{ print $1; exit }'
  fi
}

# A TCP port nothing on this node listens on or uses, from 20000-59999.
fabps_free_port() {
  local port used
  used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 40000))
    if ! grep -qx "$port" <<<"$used"; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# fabps_wait_any SECONDS PID...: waits until one of the PIDs (background
# jobs of this shell) ends or SECONDS pass (0: no limit). Sets
# FABPS_ENDED to the PID that ended ("" on timeout) and FABPS_ENDED_RC to
# its exit status. A trapped signal interrupts the wait (its trap runs).
fabps_wait_any() {
  local seconds="$1" timer="" ended="" rc=0
  shift
  if [ "$seconds" -gt 0 ]; then
    sleep "$seconds" &
    timer=$!
  fi
  wait -n -p ended "$@" ${timer:+"$timer"} || rc=$?
  if [ -n "$timer" ]; then
    kill "$timer" 2>/dev/null
    wait "$timer" 2>/dev/null
  fi
  if [ -n "$timer" ] && [ "$ended" = "$timer" ]; then ended=""; fi
  FABPS_ENDED="$ended"
  FABPS_ENDED_RC="$rc"
}

# fabps_stop_pids SIGNAL SECONDS PID...: sends SIGNAL (TERM; "none": the
# caller signalled them already) to each PID (background jobs of this
# shell), SIGKILL to those still there SECONDS later; reaps them all.
fabps_stop_pids() {
  local signal="$1" seconds="$2" end pid left
  shift 2
  if [ "$signal" != none ]; then
    for pid in "$@"; do kill -"$signal" "$pid" 2>/dev/null; done
  fi
  end=$((SECONDS + seconds))
  for pid in "$@"; do
    left=$((end - SECONDS))
    if [ "$left" -gt 0 ] && kill -0 "$pid" 2>/dev/null; then
      fabps_wait_any "$left" "$pid"
    fi
    if kill -0 "$pid" 2>/dev/null; then
      echo "fabps-slurm: pid $pid still there ${seconds} s after SIG$signal: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
  done
  return 0
}

# Seconds left in this allocation (squeue's %L), or 0 when it has no
# limit or squeue cannot say.
fabps_time_left() {
  local left d=0 h=0 m=0 s=0
  left=$(timeout 20 squeue -h -j "${SLURM_JOB_ID:-0}" -o %L 2>/dev/null)
  if [[ "$left" =~ ^(([0-9]+)-)?(([0-9]+):)?([0-9]+):([0-9]+)$ ]]; then
    d=${BASH_REMATCH[2]:-0} h=${BASH_REMATCH[4]:-0}
    m=${BASH_REMATCH[5]} s=${BASH_REMATCH[6]}
    echo $((10#$d * 86400 + 10#$h * 3600 + 10#$m * 60 + 10#$s))
  else
    echo 0
  fi
}

# The test accuracy each pass reached, from the trainers' metrics files
# (JSON lines; the evaluating trainer adds "test_accuracy" to its "pass"
# lines): "pass N test accuracy A" lines on stdout, the last accuracy in
# FABPS_LAST_ACCURACY ("" when no trainer evaluated).
fabps_print_accuracy() {
  local dir="$1" line pass acc
  FABPS_LAST_ACCURACY=""
  while IFS= read -r line; do
    [[ "$line" == *'"event":"pass"'* ]] || continue
    [[ "$line" =~ \"pass\":([0-9]+) ]] || continue
    pass=$((BASH_REMATCH[1] + 1))
    [[ "$line" =~ \"test_accuracy\":([0-9.eE+-]+) ]] || continue
    acc=${BASH_REMATCH[1]}
    echo "pass $pass test accuracy $acc"
    FABPS_LAST_ACCURACY="$acc"
  done < <(cat "$dir"/trainer-*.metrics 2>/dev/null)
}
