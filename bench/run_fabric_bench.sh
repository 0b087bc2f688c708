#!/usr/bin/env bash
# Runs fabps_fabric_bench beside its references in the same run and prints
# the ratios (bench/README.md, "Fabric", explains the targets):
#   latency   fabps pingpong vs fi_pingpong (libfabric-bin) on the same
#             provider, 64 B, usec/xfer
#   bandwidth fabps RMA write at 4 MiB vs one TCP stream (iperf3 -l 1M over
#             loopback) for tcp;ofi_rxm, vs single-thread memcpy for shm
#             (shm twice: into ordinary memory, through the kernel, and
#             into SharedMemory, the copy-free path a pserver's memory takes)
# Every figure is measured REPEAT times (default 5), fabps and its reference
# alternating and taking turns to go first, and the median of the per-round
# ratios is the one compared with the target: one run of each gives ratios
# that move by 30 % or more on these machines (bench/README.md, "Fabric").
# Usage: bench/run_fabric_bench.sh [BUILD_DIR] [PROVIDER ...]
# Environment: REPEAT (5), LAT_ITERS (20000: round trips of each latency run,
# the same for fabps and fi_pingpong).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" "shm")
bench="$build/bench/transport/fabps_fabric_bench"
repeat="${REPEAT:-5}"
lat_iters="${LAT_ITERS:-20000}"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "REPEAT must be a positive integer" >&2; exit 2; }
[[ "$lat_iters" =~ ^[1-9][0-9]*$ ]] || { echo "LAT_ITERS must be a positive integer" >&2; exit 2; }
[ -x "$bench" ] || { echo "build first: $bench missing" >&2; exit 1; }
py=/usr/bin/python3
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
pids=()
cleanup() { for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; }
trap 'cleanup; rm -rf "$out"' EXIT

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# fi_pingpong usec/xfer at SIZE on PROVIDER.
fi_pp() {
  local prov="$1" size="$2" iters="$3" port
  port="$(free_port)"
  fi_pingpong -p "$prov" -e rdm -S "$size" -I "$iters" -B "$port" >"$out/fipp_srv" 2>&1 &
  local spid=$!; pids+=("$spid")
  sleep 0.3
  timeout 120 fi_pingpong -p "$prov" -e rdm -S "$size" -I "$iters" -P "$port" 127.0.0.1 >"$out/fipp" 2>&1 || true
  wait "$spid" 2>/dev/null || true
  awk -v s="$size" '$1 == s { print $7 }' "$out/fipp" | tail -1
}

# fabps bench: prints the JSON rows of TEST at SIZES (further arguments go to
# both sides).
fabps_run() {
  local prov="$1" test="$2" sizes="$3" port
  shift 3
  port="$(free_port)"
  "$bench" -p "$prov" -t "$test" -S "$sizes" -W 16 -P "$port" --json "$@" >"$out/srv" 2>&1 &
  local spid=$!; pids+=("$spid")
  sleep 0.3
  timeout 300 "$bench" -p "$prov" -t "$test" -S "$sizes" -W 16 -P "$port" --json "$@" 127.0.0.1
  wait "$spid" 2>/dev/null || true
}

field() { $py -c 'import json,sys; rows=[json.loads(l) for l in sys.stdin if l.startswith("{")]; print([r for r in rows if r["bytes"]==int(sys.argv[1])][-1][sys.argv[2]])' "$@"; }

iperf_gbs() {
  local port; port="$(free_port)"
  iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
  local spid=$!; pids+=("$spid")
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -l 1M -t 3 -J >"$out/iperf.json"
  wait "$spid" 2>/dev/null || true
  $py -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["end"]["sum_received"]["bits_per_second"]/8e9)' "$out/iperf.json"
}

memcpy_gbs() {
  "$bench" -t memcpy -S 4194304 --json | field 4194304 MB_per_sec | awk '{print $1/1000}'
}

# row PROV METRIC REF_NAME TARGET OURS_FN REF_FN: runs the shell functions
# OURS_FN (fabps) and REF_FN (its reference), each printing one number,
# REPEAT times, taking turns to go first, and prints one table row: both
# series, the ratio of each round (fabps / reference) and their median.
row() {
  local prov="$1" metric="$2" ref_name="$3" target="$4" ours_fn="$5" ref_fn="$6"
  local ours=() refs=() r o f
  for ((r = 0; r < repeat; r++)); do
    if ((r % 2 == 0)); then
      f="$($ref_fn)"; o="$($ours_fn)"
    else
      o="$($ours_fn)"; f="$($ref_fn)"
    fi
    # A run that failed prints nothing: it counts as missing, not as 0.
    ours+=("${o:-nan}"); refs+=("${f:-nan}")
  done
  $py - "$prov" "$metric" "$ref_name" "$target" "${ours[*]}" "${refs[*]}" <<'PY'
import statistics, sys
prov, metric, ref_name, target, ours, refs = sys.argv[1:7]
ours = [float(x) for x in ours.split()]
refs = [float(x) for x in refs.split()]
ratios = [o / f if o == o and f == f and f > 0 else float("nan")
          for o, f in zip(ours, refs)]
fmt = lambda v: ", ".join("-" if x != x else f"{x:.2f}" for x in v)
ok = [x for x in ratios if x == x]
med = f"**{statistics.median(ok):.2f}x**" if ok else "no complete round"
print(f"| {prov} | {metric} | {fmt(ours)} | {fmt(refs)} ({ref_name}) | "
      f"{fmt(ratios)} | {med} | {target} |")
PY
}

printf "<!-- %s, %s cores, load: %s, REPEAT=%s, LAT_ITERS=%s -->\n" \
  "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$repeat" "$lat_iters"
printf "| provider | metric | fabps (runs) | reference (runs) | fabps / reference, per round | median ratio | target |\n"
printf "|---|---|---|---|---|---|---|\n"
for prov in "${providers[@]}"; do
  ours_lat() { fabps_run "$prov" pingpong 64 -I "$lat_iters" | field 64 usec_per_xfer; }
  ref_lat() { fi_pp "$prov" 64 "$lat_iters"; }
  row "$prov" "64 B latency, usec/xfer" "fi_pingpong" "<= 1.1x" ours_lat ref_lat
  ours_bw() { fabps_run "$prov" write_bw 4194304 | field 4194304 MB_per_sec | awk '{print $1/1000}'; }
  if [ "$prov" = "shm" ]; then
    row "$prov" "4 MiB RMA write, GB/s" "memcpy 1 thread" ">= 0.75x" ours_bw memcpy_gbs
    # Into SharedMemory, as a pserver's arena and slots: the copy-free path.
    shared_bw() { fabps_run "$prov" write_bw 4194304 --shared-memory | field 4194304 MB_per_sec | awk '{print $1/1000}'; }
    row "$prov" "4 MiB RMA write into SharedMemory (copy-free), GB/s" "memcpy 1 thread" ">= 0.75x" shared_bw memcpy_gbs
  else
    row "$prov" "4 MiB RMA write, GB/s" "iperf3 -l 1M" ">= 0.9x" ours_bw iperf_gbs
  fi
done
