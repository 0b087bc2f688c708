#!/usr/bin/env bash
# fabps's PyTorch trainer against PyTorch's DistributedDataParallel on the
# same machine, in the same run, alternating: samples/s and time to a test
# accuracy, medians over the runs (see bench/README.md, "torch vs DDP").
#
#   bench/torch_vs_ddp.sh [BUILD_DIR]     (default: build)
#   env: RUNS (3), PASSES (3), TARGET (0.85), PROVIDER (tcp;ofi_rxm),
#        OUT (a new temporary directory; kept, printed at the end)
#
# fabps: fabps-launch --trainer torch, 2 pservers x 2 trainers, batch 64,
# Adam 0.001 decaying linearly to 0.00005 (the launcher's defaults).
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
: >"$results"

for tool in tools/launch/fabps-launch python/fabps/torch.py \
  examples/fashion_mnist_torch/fabps-fashion-mnist-torch; do
  [[ -e "$build/$tool" ]] || {
    echo "torch_vs_ddp.sh: $build/$tool is missing (build fabps-launch," \
      "fabps_python and fabps_fashion_mnist_torch)" >&2
    exit 2
  }
done

echo "torch_vs_ddp: $runs runs x $passes passes, target $target," \
  "provider $provider, output in $out"
for ((i = 1; i <= runs; i++)); do
  # Alternate which system goes first, so neither always meets a warmer
  # (or busier) machine.
  order=(fabps ddp)
  ((i % 2 == 0)) && order=(ddp fabps)
  for system in "${order[@]}"; do
    if [[ $system == fabps ]]; then
      run="$out/fabps-$i"
      "$build/tools/launch/fabps-launch" --trainer torch --pservers 2 \
        --trainers 2 --passes "$passes" --batch 64 --provider "$provider" \
        --run-dir "$run" --data-dir "$out/data" >"$out/fabps-$i.out" 2>&1 || {
        echo "fabps run $i failed:" >&2
        tail -20 "$out/fabps-$i.out" >&2
        exit 1
      }
      line="$($py "$here/torch/summarize.py" fabps "$run" "$target")"
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
