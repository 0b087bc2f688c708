#!/usr/bin/env bash
# Runs fabps_fabric_bench beside its references in the same run and prints
# the ratios (bench/README.md explains the targets):
#   latency   fabps pingpong vs fi_pingpong (libfabric-bin) on the same
#             provider, 64 B, usec/xfer
#   bandwidth fabps RMA write at 4 MiB vs one TCP stream (iperf3 -l 1M over
#             loopback) for tcp;ofi_rxm, vs single-thread memcpy for shm
#             (shm twice: into ordinary memory, through the kernel, and
#             into SharedMemory, the copy-free path a pserver's memory takes)
# Usage: bench/run_fabric_bench.sh [BUILD_DIR] [PROVIDER ...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" "shm")
bench="$build/bench/transport/fabps_fabric_bench"
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

printf "| provider | metric | fabps | reference | ratio | target |\n"
printf "|---|---|---|---|---|---|\n"
for prov in "${providers[@]}"; do
  ref_lat="$(fi_pp "$prov" 64 20000)"
  ours_lat="$(fabps_run "$prov" pingpong 64 | field 64 usec_per_xfer)"
  ratio="$($py -c "print(f'{$ours_lat/$ref_lat:.2f}')")"
  printf "| %s | 64 B latency, usec/xfer | %.2f | %.2f (fi_pingpong) | %sx | <= 1.1x |\n" "$prov" "$ours_lat" "$ref_lat" "$ratio"
  ours_bw="$(fabps_run "$prov" write_bw 4194304 | field 4194304 MB_per_sec | awk '{print $1/1000}')"
  if [ "$prov" = "shm" ]; then
    ref_bw="$(memcpy_gbs)"; ref_name="memcpy 1 thread"; target=">= 0.75x"
  else
    ref_bw="$(iperf_gbs)"; ref_name="iperf3 -l 1M"; target=">= 0.9x"
  fi
  ratio="$($py -c "print(f'{$ours_bw/$ref_bw:.2f}')")"
  printf "| %s | 4 MiB RMA write, GB/s | %.2f | %.2f (%s) | %sx | %s |\n" "$prov" "$ours_bw" "$ref_bw" "$ref_name" "$ratio" "$target"
  if [ "$prov" = "shm" ]; then
    # Into SharedMemory, as a pserver's arena and slots: the copy-free path.
    shared_bw="$(fabps_run "$prov" write_bw 4194304 --shared-memory | field 4194304 MB_per_sec | awk '{print $1/1000}')"
    ratio="$($py -c "print(f'{$shared_bw/$ref_bw:.2f}')")"
    printf "| %s | 4 MiB RMA write into SharedMemory (copy-free), GB/s | %.2f | %.2f (%s) | %sx | %s |\n" "$prov" "$shared_bw" "$ref_bw" "$ref_name" "$ratio" "$target"
  fi
done
