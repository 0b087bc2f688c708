#!/usr/bin/env bash
# The race check: runs the whole ctest suite of the main build ROUNDS times
# (default 3) with `ctest -j3` beside two busy loops, so that every test runs
# on an overloaded machine (2 cores here) with three neighbours. A test that
# only passes on a quiet machine fails here. Prints one line per round and a
# final "N of M rounds passed"; exits non-zero unless every round passed.
#
#   tools/stress.sh [ROUNDS] [ctest args...]   e.g. tools/stress.sh 1 -R Lease
#
# Builds the main tree first (tools/build.sh; $FABPS_BUILD_DIR as there).
# Logs of each round: <build>/stress/round-<k>.log. Not part of tools/test.sh
# (it takes three suite runs); run it before submitting. Tests labelled
# `cluster` (tools/test.sh --cluster) are left out, as in tools/test.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FABPS_BUILD_DIR:-$root/build}"
rounds="${1:-3}"
case "$rounds" in
  "" | *[!0-9]*) echo "usage: $0 [ROUNDS] [ctest args...]" >&2; exit 2 ;;
esac
shift || true

"$root/tools/build.sh"
mkdir -p "$build/stress"

# Two busy loops, ended by PID on any exit (also Ctrl-C).
busy=()
stop_busy() {
  for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${busy[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_busy EXIT
for _ in 1 2; do
  (while :; do :; done) &
  busy+=("$!")
done

passed=0
for ((k = 1; k <= rounds; k++)); do
  log="$build/stress/round-$k.log"
  start=$(date +%s)
  if (cd "$build" && ctest -j3 -LE cluster --output-on-failure --timeout 300 "$@") >"$log" 2>&1; then
    passed=$((passed + 1))
    verdict="passed"
  else
    verdict="FAILED"
  fi
  echo "stress: round $k of $rounds $verdict in $(($(date +%s) - start)) s:" \
    "$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)"
  if [ "$verdict" = FAILED ]; then
    grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$log" || true
  fi
done
echo "stress: $passed of $rounds rounds passed (ctest -j3 beside 2 busy loops; logs in $build/stress/)"
[ "$passed" -eq "$rounds" ]
