#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs fabps on this
# machine. Until the training example lands, the job is the fabric
# benchmark between two local processes on the provider "auto" picks
# (override with FABPS_PROVIDER).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tools/setup.sh
tools/build.sh
provider="${FABPS_PROVIDER:-auto}"
build/tools/fabps-doctor
port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
bench=build/bench/transport/fabps_fabric_bench
args=(-p "$provider" -t pingpong,write_bw,read_bw -S 64,4096,65536,1048576,4194304 -W 16 -P "$port")
"$bench" "${args[@]}" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.3
"$bench" "${args[@]}" 127.0.0.1
wait "$server"
