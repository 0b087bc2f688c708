#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency tests: configures build-tsan/ (or
# $FABPS_TSAN_BUILD_DIR) with -DFABPS_SANITIZE=thread, builds only the test
# binaries that register tests with LABELS tsan, and runs `ctest -L tsan`.
# Called by tools/test.sh; usable alone. Keep tsan-labelled tests to seconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FABPS_TSAN_BUILD_DIR:-$root/build-tsan}"
cd "$root"

# Test targets whose fabps_add_test(...) call carries the tsan label. Tests
# are discovered at build time, so ctest cannot list them before the build.
mapfile -t targets < <(
  awk '
    /fabps_add_test\(/ { inside = 1; name = $0; sub(/.*fabps_add_test\([ \t]*/, "", name);
                         sub(/[ \t)].*/, "", name); tsan = 0 }
    inside && /LABELS/ && /(^|[ \t])tsan([ \t)]|$)/ { tsan = 1 }
    inside && /\)/ { if (tsan) print name; inside = 0 }
  ' tests/*/CMakeLists.txt | sort -u)

if [ "${#targets[@]}" -eq 0 ]; then
  echo "== tsan: no tsan-labelled tests"
  exit 0
fi

echo "== tsan: configure $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFABPS_SANITIZE=thread -DFABPS_BUILD_BENCHMARKS=OFF >/dev/null
echo "== tsan: build ${targets[*]}"
cmake --build "$build" -j2 --target "${targets[@]}"

# Suppressions for third-party code only (see the comments in each file).
supp=()
for f in tests/*/tsan_suppressions.txt; do
  [ -f "$f" ] && supp+=("suppressions=$root/$f")
done
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${supp[*]:-} ${TSAN_OPTIONS:-}"

echo "== tsan: ctest -L tsan"
(cd "$build" && ctest -L tsan -j2 --output-on-failure)
