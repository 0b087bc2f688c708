#!/usr/bin/env bash
# Runs fabps_pushpull_bench beside fabps_fabric_bench's RMA write bandwidth on
# the same provider in the same run, and prints (bench/README.md, "Push and
# pull") the ratio
#   push+pull GB/s at 64 MiB, 1 trainer, 1 pserver  /  RMA write GB/s at 4 MiB
# against its target (>= 0.8x). Both are measured REPEAT times, alternating,
# and the medians are compared. With SWEEP=1 it also prints the whole sweep
# (model sizes x trainers x pservers, each the median of REPEAT runs, with
# their spread). Every run measures at least 2 s (--min-seconds).
# Usage: bench/run_pushpull_bench.sh [BUILD_DIR] [PROVIDER ...]
# Environment: REPEAT (3), SWEEP (0), QUICK (0: with SWEEP, the --quick
# sweep), APPLY_THREADS (0: the pserver's default, all cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" "shm")
repeat="${REPEAT:-3}"
apply_threads="${APPLY_THREADS:-0}"
fabric="$build/bench/transport/fabps_fabric_bench"
pushpull="$build/bench/trainer/fabps_pushpull_bench"
for b in "$fabric" "$pushpull"; do
  [ -x "$b" ] || { echo "build first: $b missing" >&2; exit 1; }
done
py=/usr/bin/python3
out="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap 'cleanup; rm -rf "$out"' EXIT

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# RMA write GB/s at 4 MiB: a server and a client of fabps_fabric_bench.
rma_write_gbs() {
  local prov="$1" port spid
  port="$(free_port)"
  "$fabric" -p "$prov" -t write_bw -S 4194304 -W 16 -P "$port" --json >"$out/srv" 2>&1 &
  spid=$!; pids+=("$spid")
  sleep 0.3
  timeout 300 "$fabric" -p "$prov" -t write_bw -S 4194304 -W 16 -P "$port" --json 127.0.0.1 |
    $py -c 'import json,sys; r=[json.loads(l) for l in sys.stdin if l.startswith("{")]; print(r[-1]["MB_per_sec"]/1000)'
  wait "$spid" 2>/dev/null || true
}

# The JSON row of one push/pull configuration (one run).
pushpull_row() {
  local prov="$1"
  timeout 600 "$pushpull" -p "$prov" --sizes 64 --trainers 1 --pservers 1 --repeat 1 \
    --apply-threads "$apply_threads" --json | grep '^{' | tail -1
}

median() { $py -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
runs() { $py -c 'import sys; print(" ".join(f"{float(x):.2f}" for x in sys.argv[1:]))' "$@"; }

echo "<!-- $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), REPEAT=$repeat, APPLY_THREADS=$apply_threads -->"
printf "| provider | RMA write 4 MiB, GB/s | push GB/s | pull GB/s | push+pull GB/s (64 MiB, 1 trainer, 1 pserver) | step ms | ratio | target |\n"
printf "|---|---|---|---|---|---|---|---|\n"
for prov in "${providers[@]}"; do
  rma=(); pp=(); push=(); pull=(); step=()
  for ((i = 0; i < repeat; i++)); do
    rma+=("$(rma_write_gbs "$prov")")
    row="$(pushpull_row "$prov")"
    echo "$row" >>"$out/rows"
    pp+=("$(echo "$row" | $py -c 'import json,sys; print(json.load(sys.stdin)["pushpull_GBps"])')")
    push+=("$(echo "$row" | $py -c 'import json,sys; print(json.load(sys.stdin)["push_GBps"])')")
    pull+=("$(echo "$row" | $py -c 'import json,sys; print(json.load(sys.stdin)["pull_GBps"])')")
    step+=("$(echo "$row" | $py -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])')")
  done
  m_rma="$(median "${rma[@]}")"
  m_pp="$(median "${pp[@]}")"
  ratio="$($py -c "print(f'{$m_pp/$m_rma:.2f}')")"
  printf "| %s | %.2f (%s) | %.2f | %.2f | %.2f (%s) | %.1f | %sx | >= 0.8x |\n" "$prov" \
    "$m_rma" "$(runs "${rma[@]}")" "$(median "${push[@]}")" "$(median "${pull[@]}")" \
    "$m_pp" "$(runs "${pp[@]}")" "$(median "${step[@]}")" "$ratio"
done

[ "${SWEEP:-0}" = "1" ] || exit 0
quick=()
[ "${QUICK:-0}" = "1" ] && quick=(--quick)
echo
echo "<!-- sweep: $(date -u '+%H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg) -->"
printf "| provider | MiB | trainers | pservers | push GB/s | pull GB/s | push+pull GB/s | step ms | spread |\n"
printf "|---|---|---|---|---|---|---|---|---|\n"
for prov in "${providers[@]}"; do
  timeout 3600 "$pushpull" -p "$prov" --repeat "$repeat" --apply-threads "$apply_threads" \
    "${quick[@]}" --json | grep '^{' |
    $py -c 'import json,sys
for l in sys.stdin:
    print("| {provider} | {mib} | {trainers} | {pservers} | {push_GBps:.2f} | {pull_GBps:.2f} | "
          "{pushpull_GBps:.2f} | {step_ms:.1f} | {spread:.0%} |".format(**json.loads(l)))'
done
echo "<!-- end: $(date -u '+%H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg) -->"
