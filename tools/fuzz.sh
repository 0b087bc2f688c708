#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang into build-fuzz/ (or
# $FABPS_FUZZ_BUILD_DIR) and runs each one on a copy of its seed corpus
# (fuzz/corpus/<target>/), printing the executions per target. Fails when a
# target crashes, leaks, times out or runs out of memory; the input that did
# it is kept under <build>/fuzz-artifacts/ (rerun: <build>/fuzz/<target> FILE).
#
#   tools/fuzz.sh [SECONDS]    each target for SECONDS (default 15)
#   tools/fuzz.sh --long [N]   each target for N executions (default 10000000)
#
# FABPS_FUZZ_JOBS=1 runs one target at a time (default: one per core), e.g.
# on a machine shared with builds: FABPS_FUZZ_JOBS=1 nice -n 19 tools/fuzz.sh
#
# Called by tools/test.sh with a short time; usable alone.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FABPS_FUZZ_BUILD_DIR:-$root/build-fuzz}"
cd "$root"

limit=(-max_total_time=15)
case "${1:-}" in
  "") ;;
  --long) limit=(-runs="${2:-10000000}") ;;
  *[!0-9]*) echo "usage: $0 [SECONDS | --long [RUNS]]" >&2; exit 2 ;;
  *) limit=(-max_total_time="$1") ;;
esac

echo "== fuzz: configure $build"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFABPS_BUILD_FUZZERS=ON \
  -DFABPS_BUILD_TESTS=OFF -DFABPS_BUILD_BENCHMARKS=OFF >/dev/null
echo "== fuzz: build"
if ! out="$(cmake --build "$build" -j "$(nproc)" --target fabps_fuzzers 2>&1)"; then
  echo "$out"
  exit 1
fi
echo "$out" | tail -n 1

export ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 ${UBSAN_OPTIONS:-}"
runs="$build/fuzz-runs"
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

# run_one TARGET: one fuzzer on a fresh copy of its seeds (new inputs
# libFuzzer finds stay out of the tree); exit code into $runs/TARGET.status.
# A layout of a few bytes may cut Layout::kMaxBlocks blocks: seconds under
# ASan on a loaded machine, so the per-input timeout is 60 s, not 25.
run_one() {
  local target="$1" work="$runs/$1" status=0
  rm -rf "$work"
  mkdir -p "$work"
  cp "fuzz/corpus/$target/"* "$work/"
  "$build/fuzz/$target" "${limit[@]}" -print_final_stats=1 -timeout=60 \
    -rss_limit_mb=2048 -artifact_prefix="$artifacts/$target-" "$work" \
    >"$runs/$target.log" 2>&1 || status=$?
  echo "$status" >"$runs/$target.status"
}

# As many targets at a time as there are cores, or FABPS_FUZZ_JOBS.
targets=()
for seeds in fuzz/corpus/*/; do targets+=("$(basename "$seeds")"); done
jobs="${FABPS_FUZZ_JOBS:-$(nproc)}"
case "$jobs" in
  "" | *[!0-9]* | 0)
    echo "fuzz: FABPS_FUZZ_JOBS must be a positive number" >&2
    exit 2
    ;;
esac
echo "== fuzz: ${targets[*]} (${limit[*]}, $jobs at a time)"
for target in "${targets[@]}"; do
  rm -f "$runs/$target.status"
  if [ ! -x "$build/fuzz/$target" ]; then
    echo "fuzz: no binary for corpus fuzz/corpus/$target" >&2
    continue
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$target" &
done
wait

failed=()
for target in "${targets[@]}"; do
  log="$runs/$target.log"
  status="$(cat "$runs/$target.status" 2>/dev/null || echo missing)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -n 1 || true)"
  if [ "$status" != 0 ]; then
    echo "fuzz: $target FAILED (exit $status) after ${execs:-?} executions; log $log"
    grep -E -A 30 'ERROR:|runtime error|check failed|deadly signal' "$log" 2>/dev/null |
      head -n 60 || true
    failed+=("$target")
  else
    printf 'fuzz: %-22s %12s executions, corpus %s inputs\n' "$target" "$execs" \
      "$(find "$runs/$target" -type f | wc -l)"
  fi
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz: failed: ${failed[*]} (inputs in $artifacts)"
  exit 1
fi
echo "fuzz: all targets passed"
