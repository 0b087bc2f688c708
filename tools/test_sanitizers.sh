#!/usr/bin/env bash
# Sanitizer runs of the in-process tests, each in its own build directory:
#   tsan  ThreadSanitizer run of the concurrency tests: build-tsan/ (or
#         $FABPS_TSAN_BUILD_DIR) with -DFABPS_SANITIZE=thread, `ctest -L tsan`.
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) run
#         of the parser and state unit tests: build-asan/ (or
#         $FABPS_ASAN_BUILD_DIR) with -DFABPS_SANITIZE=address, `ctest -L asan`.
# Each builds only the test binaries whose fabps_add_test(...) call carries
# its label. Called by tools/test.sh; usable alone. Keep labelled tests to
# seconds, in-process (no pservers, trainers or etcd).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# Test targets whose fabps_add_test(...) call carries label $1. Tests are
# discovered at build time, so ctest cannot list them before the build.
labelled_targets() {
  awk -v label="$1" '
    /fabps_add_test\(/ { inside = 1; name = $0; sub(/.*fabps_add_test\([ \t]*/, "", name);
                         sub(/[ \t)].*/, "", name); found = 0 }
    inside && /LABELS/ && $0 ~ ("(^|[ \t])" label "([ \t)]|$)") { found = 1 }
    inside && /\)/ { if (found) print name; inside = 0 }
  ' tests/*/CMakeLists.txt | sort -u
}

# sanitizer_run LABEL BUILD_DIR SANITIZE OPT [ctest args...]
# OPT, when not empty, replaces -O2 of RelWithDebInfo (e.g. -O1).
sanitizer_run() {
  local label="$1" build="$2" sanitize="$3" opt="$4"
  shift 4
  local flags=()
  if [ -n "$opt" ]; then
    flags=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -g -DNDEBUG"
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g -DNDEBUG")
  fi
  local targets
  mapfile -t targets < <(labelled_targets "$label")
  if [ "${#targets[@]}" -eq 0 ]; then
    echo "== $label: no $label-labelled tests"
    return 0
  fi
  echo "== $label: configure $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFABPS_SANITIZE="$sanitize" -DFABPS_BUILD_BENCHMARKS=OFF "${flags[@]}" >/dev/null
  echo "== $label: build ${targets[*]}"
  cmake --build "$build" -j2 --target "${targets[@]}"
  echo "== $label: ctest -L $label $*"
  (cd "$build" && ctest -L "$label" -j2 --output-on-failure "$@")
}

# Suppressions for third-party code only (see the comments in each file).
supp=()
for f in tests/*/tsan_suppressions.txt; do
  [ -f "$f" ] && supp+=("suppressions=$root/$f")
done
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${supp[*]:-} ${TSAN_OPTIONS:-}" \
  sanitizer_run tsan "${FABPS_TSAN_BUILD_DIR:-$root/build-tsan}" thread ""

# LeakSanitizer is on: at exit it attaches to the test's threads with ptrace,
# which root in the Debian 12 container may do (where ptrace is denied, run
# with ASAN_OPTIONS=detect_leaks=0). The etcd cases of the coord suite start
# etcd processes: they stay out of this run. -O1 (as the ASan docs advise)
# halves the build time of -O2, which dominates this step.
ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 abort_on_error=0 ${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 ${UBSAN_OPTIONS:-}" \
  sanitizer_run asan "${FABPS_ASAN_BUILD_DIR:-$root/build-asan}" address -O1 \
  -E '[Ee]tcd'
