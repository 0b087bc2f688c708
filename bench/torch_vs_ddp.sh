#!/usr/bin/env bash
# fabps's PyTorch trainer against PyTorch's DistributedDataParallel on the
# same machine, in the same run, alternating: samples/s and time to a test
# accuracy, medians over the runs (see bench/README.md, "PyTorch DDP").
#
#   bench/torch_vs_ddp.sh [BUILD_DIR]     (default: build)
#   env: RUNS (3), PASSES (3), TARGET (0.85), PROVIDER (tcp;ofi_rxm),
#        SYSTEMS ("fabps fabps-cpp ddp": which to run, rotated run by run),
#        OUT (a new temporary directory; kept, printed at the end)
#
# fabps: fabps-launch --trainer torch, 2 pservers x 2 trainers, batch 64,
# Adam 0.001 decaying linearly to 0.00005 (the launcher's defaults).
# fabps-cpp: the same job with the launcher's default trainer, the C++ one
# (examples/fashion_mnist: the same model and initialization, Eigen over the
# system BLAS).
# DDP: bench/torch/ddp_reference.py, 2 gloo processes on localhost, batch 64
# each, the same model, initialization, Adam and schedule, the Debian
# package's Fashion-MNIST files. Both: OPENBLAS_NUM_THREADS=1 and one torch
# thread per process.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
runs="${RUNS:-3}"
passes="${PASSES:-3}"
target="${TARGET:-0.85}"
provider="${PROVIDER:-tcp;ofi_rxm}"
out="${OUT:-$(mktemp -d /tmp/fabps-torch-vs-ddp.XXXXXX)}"
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
py=/usr/bin/python3
results="$out/results.jsonl"
read -r -a systems <<<"${SYSTEMS:-fabps fabps-cpp ddp}"
: >"$results"

for tool in cmd/launch/fabps-launch python/fabps/torch.py \
  examples/fashion_mnist_torch/fabps-fashion-mnist-torch \
  examples/fashion_mnist/fabps-fashion-mnist-trainer; do
  [[ -e "$build/$tool" ]] || {
    echo "torch_vs_ddp.sh: $build/$tool is missing (build fabps-launch," \
      "fabps_python, fabps_fashion_mnist_torch and" \
      "fabps-fashion-mnist-trainer)" >&2
    exit 2
  }
done

echo "torch_vs_ddp: $runs runs x $passes passes, target $target," \
  "provider $provider, output in $out"
for ((i = 1; i <= runs; i++)); do
  # Rotate which system goes first, so none always meets a warmer (or
  # busier) machine.
  order=()
  for ((k = 0; k < ${#systems[@]}; k++)); do
    order+=("${systems[$(((k + i - 1) % ${#systems[@]}))]}")
  done
  for system in "${order[@]}"; do
    if [[ $system == fabps || $system == fabps-cpp ]]; then
      run="$out/$system-$i"
      trainer=torch
      [[ $system == fabps-cpp ]] && trainer=cpp
      "$build/cmd/launch/fabps-launch" --trainer "$trainer" --pservers 2 \
        --trainers 2 --passes "$passes" --batch 64 --provider "$provider" \
        --run-dir "$run" --data-dir "$out/data" >"$out/$system-$i.out" 2>&1 || {
        echo "$system run $i failed:" >&2
        tail -20 "$out/$system-$i.out" >&2
        exit 1
      }
      line="$($py "$here/torch/summarize.py" fabps "$run" "$target" "$system")"
    else
      $py "$here/torch/ddp_reference.py" --procs 2 --passes "$passes" \
        --batch 64 --target "$target" >"$out/ddp-$i.out" 2>&1 || {
        echo "ddp run $i failed:" >&2
        tail -20 "$out/ddp-$i.out" >&2
        exit 1
      }
      line="$($py "$here/torch/summarize.py" ddp "$out/ddp-$i.out")"
    fi
    echo "$line" >>"$results"
    echo "run $i $system: $line"
  done
done
$py "$here/torch/summarize.py" table "$results"
echo "output: $out"
