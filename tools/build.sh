#!/usr/bin/env bash
# Configures and builds fabps into build/ (or $FABPS_BUILD_DIR).
#   tools/build.sh [--target T]... [cmake configure arguments...]
# Without --target it builds everything (what tools/test.sh needs); with
# them only those targets and what they depend on (tools/run.sh builds the
# main job's binaries this way, in the same build tree, so a later full
# build reuses them).
# The build's progress is one line updated in place on a terminal, and a
# line every 10% elsewhere; the compiler's own output (warnings, errors)
# goes to <build>/build.log and is printed in full only when the build
# fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FABPS_BUILD_DIR:-$root/build}"
targets=()
configure=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets+=("$2"); shift 2 ;;
    *) configure+=("$1"); shift ;;
  esac
done
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  ${configure[@]+"${configure[@]}"} >/dev/null

log="$build/build.log"
: >"$log"
# Reads ninja's output ("[12/125] Building CXX object ..." per step when not
# on a terminal, which a pipe is not), keeps all of it in $log and shows the
# progress.
show_progress() {
  local tty=0 cols=80 line done_ total pct last_pct=-1
  if [ -t 1 ]; then
    tty=1
    cols=$(tput cols 2>/dev/null || echo 80)
  fi
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\]\ (.*)$ ]]; then
      done_=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
      if [ "$tty" = 1 ]; then
        line="build: [$done_/$total] ${BASH_REMATCH[3]}"
        printf '\r\033[K%s' "${line:0:$((cols - 1))}"
      else
        pct=$((100 * done_ / total / 10 * 10))
        if [ "$pct" != "$last_pct" ]; then
          echo "build: $pct% ($done_/$total steps)"
          last_pct=$pct
        fi
      fi
    fi
  done
  if [ "$tty" = 1 ]; then printf '\r\033[K'; fi
}

start=$SECONDS
status=0
cmake --build "$build" -j "$(nproc)" ${targets[@]+--target "${targets[@]}"} 2>&1 |
  show_progress || status=$?
if [ "$status" -ne 0 ]; then
  echo "build FAILED; its output without the progress lines ($log has all):" >&2
  grep -v '^\[[0-9]*/[0-9]*\] ' "$log" >&2 || true
  exit "$status"
fi
other=$(grep -cv -e '^\[[0-9]*/[0-9]*\] ' -e '^ninja: no work to do\.$' "$log" || true)
if [ "$other" -gt 0 ]; then
  echo "build: $other lines of compiler output (warnings) in $log"
fi
echo "build: done in $((SECONDS - start)) s (${targets[*]:-all targets})"
