#!/usr/bin/env bash
# Test hosts as network namespaces: K "hosts" joined by veth pairs to one
# bridge, for tests that must run fabps across distinct addresses on one
# machine.
#
# The picture, for a set named P (every name below starts with P):
#
#   P-h1 (eth0 198.18.0.1/24) --veth-- p1 \
#   P-h2 (eth0 198.18.0.2/24) --veth-- p2  > br0, in namespace P-br
#   ...                                   /
#
# - Nothing is added to the root namespace: each veth pair is made with one
#   end in the bridge's namespace and the other in its host's, so the root
#   namespace's interfaces and routes never change.
# - Each host has loopback up, one address of the benchmarking range
#   198.18.0.0/15 (IPv6 off) and no other route: nothing inside can reach
#   outside. Every set lives on its own bridge in its own namespace, so parallel sets
#   use the same addresses without seeing each other.
# - Set names are fabps-nh-<creator pid>-<random>: unique per invocation,
#   and a set whose creator is dead is known as a leftover.
#
# Commands:
#   netns.sh check                   exit 0 when namespaces can be made here;
#                                    else prints why and exits 77 (a skip)
#   netns.sh up K                    makes a set of K hosts (1..250) owned by
#                                    the calling process (its parent's pid:
#                                    the caller, not this script) and prints
#                                    shell lines: NETNS_SET=P, NETNS_HOSTS="P-h1
#                                    ...", NETNS_ADDRS="198.18.0.1 ..."
#   netns.sh up K --private-nic      the same, and each host has a second NIC
#                                    priv0 (198.19.0.<i>/24, listed before
#                                    eth0) that reaches no other host: the
#                                    multi-NIC case, where a process that
#                                    advertises the wrong interface is cut off
#   netns.sh run K [--private-nic] -- CMD ARGS...
#                                    makes a set, runs CMD with those three
#                                    variables in its environment and removes
#                                    the set when CMD ends, on Ctrl-C, on
#                                    SIGTERM or on failure; exits with CMD's
#                                    status
#   netns.sh down P                  removes set P: kills the processes still
#                                    inside its namespaces, deletes them
#   netns.sh down --stale            removes every fabps-nh-* set whose
#                                    creator process is gone (what a crashed
#                                    or killed run left); never another
#                                    live run's set
#   netns.sh check-netem             exit 0 when tc netem works here; else
#                                    prints why and exits 77
#   netns.sh cut HOST                takes HOST's eth0 down (it reaches no
#                                    other host)
#   netns.sh restore HOST            and up again
#   netns.sh netem HOST ARGS...      tc qdisc replace dev eth0 root netem ARGS
#                                    in HOST; exits 77 with the reason when
#                                    the kernel has no sch_netem
#   netns.sh clear HOST              removes HOST's root qdisc
#
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2.
set -euo pipefail
shopt -s inherit_errexit

readonly kFamily=fabps-nh
readonly kSkip=77

die() { echo "netns.sh: $*" >&2; exit 1; }

# A namespace that can be made, with a veth pair and a bridge, here.
check() {
  if ! command -v ip >/dev/null 2>&1; then
    echo "netns.sh: no 'ip' command (Debian package iproute2)" >&2
    return $kSkip
  fi
  local probe="$kFamily-$$-probe"
  local err
  if ! err=$(ip netns add "$probe" 2>&1); then
    echo "netns.sh: cannot make a network namespace here ($err); needs root" \
      "with CAP_SYS_ADMIN and CAP_NET_ADMIN" >&2
    return $kSkip
  fi
  if ! err=$( { ip -n "$probe" link add name br0 type bridge &&
                ip -n "$probe" link add name va type veth peer name vb; } 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    echo "netns.sh: namespaces work but not bridges or veth pairs ($err)" >&2
    return $kSkip
  fi
  ip netns del "$probe"
  return 0
}

# Kills every process inside namespace $1 (they are ours: nothing else runs
# in a set's namespaces), then deletes the namespace.
remove_namespace() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
  fi
  ip netns del "$ns" 2>/dev/null || true
}

# The namespaces of set $1 (hosts and bridge).
namespaces_of() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-(br|h[0-9]+)\$" ||
    true
}

down() {
  local set=$1
  case "$set" in
    "$kFamily"-[0-9]*-*) ;;
    *) die "down: '$set' is not a set name ($kFamily-<pid>-<id>)" ;;
  esac
  local ns
  for ns in $(namespaces_of "$set"); do remove_namespace "$ns"; done
}

# Sets whose creator pid no longer runs.
down_stale() {
  local set pid
  for set in $(ip netns list 2>/dev/null | awk '{print $1}' |
               sed -nE "s/^($kFamily-[0-9]+-[a-z0-9]+)-(br|h[0-9]+)\$/\1/p" |
               sort -u); do
    pid=${set#"$kFamily"-}
    pid=${pid%%-*}
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "netns.sh: removing $set (its creator, pid $pid, is gone)" >&2
      down "$set"
    fi
  done
}

# Makes set $1 with $2 hosts; on any failure removes what it made and
# returns 1.
make_set() {
  make_set_steps "$@" && return 0
  down "$1"
  return 1
}

make_set_steps() {
  local set=$1 k=$2 private_nic=${3:-0} i host
  local br="$set-br"
  ip netns add "$br" || return 1
  ip -n "$br" link set lo up || return 1
  ip -n "$br" link add name br0 type bridge || return 1
  ip -n "$br" link set br0 up || return 1
  for ((i = 1; i <= k; i++)); do
    host="$set-h$i"
    ip netns add "$host" || return 1
    # IPv4 only: no IPv6 link-local address to advertise by mistake.
    ip netns exec "$host" sh -c \
      'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 &&
       echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6' || return 1
    ip -n "$host" link set lo up || return 1
    if [ "$private_nic" = 1 ]; then
      # A second NIC that reaches nobody (its peer end is on no bridge),
      # made first so that it comes first in the host's interface list: a
      # process that advertises it instead of eth0 cannot be reached.
      ip -n "$br" link add name "q$i" type veth peer name priv0 netns "$host" ||
        return 1
      ip -n "$br" link set "q$i" up || return 1
      ip -n "$host" addr add "198.19.0.$i/24" dev priv0 || return 1
      ip -n "$host" link set priv0 up || return 1
    fi
    # Both ends are born in their namespaces: the root namespace never
    # holds either.
    ip -n "$br" link add name "p$i" type veth peer name eth0 netns "$host" ||
      return 1
    ip -n "$br" link set "p$i" master br0 || return 1
    ip -n "$br" link set "p$i" up || return 1
    ip -n "$host" addr add "198.18.0.$i/24" dev eth0 || return 1
    ip -n "$host" link set eth0 up || return 1
  done
}

# A fresh set name owned by pid $1.
new_set_name() {
  echo "$kFamily-$1-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
}

check_count() {
  if ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ] || [ "$1" -gt 250 ]; then
    die "K must be 1..250, not '$1'"
  fi
}

# Sets NETNS_SET, NETNS_HOSTS and NETNS_ADDRS for set $1 of $2 hosts.
describe_set() {
  local i
  NETNS_SET=$1
  NETNS_HOSTS=""
  NETNS_ADDRS=""
  for ((i = 1; i <= $2; i++)); do
    NETNS_HOSTS+="${NETNS_HOSTS:+ }$1-h$i"
    NETNS_ADDRS+="${NETNS_ADDRS:+ }198.18.0.$i"
  done
}

up() {
  local owner=$1 k=${2:-} private_nic=0
  [ "${3:-}" = "--private-nic" ] && private_nic=1
  check_count "$k"
  check || exit $?
  local set
  set=$(new_set_name "$owner")
  make_set "$set" "$k" "$private_nic" || die "up: could not make $set"
  describe_set "$set" "$k"
  echo "NETNS_SET=$NETNS_SET"
  echo "NETNS_HOSTS=\"$NETNS_HOSTS\""
  echo "NETNS_ADDRS=\"$NETNS_ADDRS\""
}

run() {
  local k=${1:-} private_nic=0
  shift
  if [ "${1:-}" = "--private-nic" ]; then
    private_nic=1
    shift
  fi
  [ "${1:-}" = "--" ] || die "run: usage: netns.sh run K -- CMD ARGS..."
  shift
  [ $# -gt 0 ] || die "run: no command"
  check_count "$k"
  check || exit $?
  local set
  set=$(new_set_name $$)
  # The traps come first: a signal while the set is being made removes
  # what was made.
  local child=""
  # shellcheck disable=SC2064
  trap "down '$set'" EXIT
  trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 130' INT
  trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 143' TERM
  make_set "$set" "$k" "$private_nic" || die "run: could not make $set"
  describe_set "$set" "$k"
  export NETNS_SET NETNS_HOSTS NETNS_ADDRS
  # CMD runs in the background so that a signal reaches the traps at once
  # (bash runs a trap only after a foreground command ends); the traps pass
  # it on as SIGTERM and the EXIT trap removes the set.
  local rc=0
  "$@" &
  child=$!
  wait "$child" || rc=$?
  exit $rc
}

host_ns() {
  [[ "${1:-}" =~ ^$kFamily-[0-9]+-[a-z0-9]+-h[0-9]+$ ]] ||
    die "not a host of a set: '${1:-}'"
  echo "$1"
}

# Whether this kernel has sch_netem: exit 0, or 77 with the reason.
check_netem() {
  check || return $?
  local probe="$kFamily-$$-netem"
  ip netns add "$probe"
  local err rc=0
  if ! err=$(ip netns exec "$probe" tc qdisc add dev lo root netem delay 1ms 2>&1); then
    if [[ "$err" == *"qdisc kind is unknown"* ]]; then
      echo "netns.sh: this kernel has no sch_netem (tc: $err)" >&2
      rc=$kSkip
    else
      echo "netns.sh: tc netem failed: $err" >&2
      rc=1
    fi
  fi
  ip netns del "$probe"
  return $rc
}

netem() {
  local host
  host=$(host_ns "$1")
  shift
  local err
  if ! err=$(ip netns exec "$host" tc qdisc replace dev eth0 root netem "$@" 2>&1); then
    if [[ "$err" == *"qdisc kind is unknown"* ]]; then
      echo "netns.sh: this kernel has no sch_netem (tc: $err)" >&2
      exit $kSkip
    fi
    die "netem $*: $err"
  fi
}

case "${1:-}" in
  check) check ;;
  check-netem) check_netem ;;
  up) up "$PPID" "${2:-}" "${3:-}" ;;
  run) shift; run "$@" ;;
  down)
    case "${2:-}" in
      --stale) down_stale ;;
      "") die "down: a set name or --stale" ;;
      *) down "$2" ;;
    esac
    ;;
  cut) ip -n "$(host_ns "${2:-}")" link set eth0 down ;;
  restore) ip -n "$(host_ns "${2:-}")" link set eth0 up ;;
  netem) shift; netem "$@" ;;
  clear) ip netns exec "$(host_ns "${2:-}")" tc qdisc del dev eth0 root ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
