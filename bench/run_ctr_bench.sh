#!/usr/bin/env bash
# The CTR job against a single-process PyTorch reference on the same
# machine, in the same run, alternating: samples/s and final test AUC,
# medians over the rounds (see bench/README.md, "CTR against PyTorch").
#
#   bench/run_ctr_bench.sh [BUILD_DIR]   (default: $FABPS_BUILD_DIR or build)
#   env: ROUNDS (2), RECORDS (1000000), PASSES (2), THREADS ("1 2": the
#        reference's torch thread counts, each run every round),
#        DATA_DIR (the launcher's: ~/.cache/fabps/ctr-RECORDS; generated
#        there once if absent), OUT (a new temporary directory; kept)
#
# Each round runs, the order rotated round by round:
#   reference-Nt: bench/torch/ctr_reference.py --threads N (one process,
#                 nn.Embedding sparse over id % 2^22, torch Adagrad);
#   fabps-cpp:    fabps-launch --model ctr (2 pservers x 2 C++ trainers,
#                 the default hashed table, AdaGrad on the pservers);
#   fabps-torch:  the same with --trainer torch (examples/ctr_torch).
# Same data, batch 256, learning rates 0.05 (table) and 0.02 (MLP). The
# 1-minute load average is read before each run.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-${FABPS_BUILD_DIR:-$here/../build}}" && pwd)"
export FABPS_BUILD_DIR="$build"
rounds="${ROUNDS:-2}"
records="${RECORDS:-1000000}"
passes="${PASSES:-2}"
read -r -a threads <<<"${THREADS:-1 2}"
data="${DATA_DIR:-$HOME/.cache/fabps/ctr-$records}"
out="${OUT:-$(mktemp -d /tmp/fabps-ctr-bench.XXXXXX)}"
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1
py=/usr/bin/python3
results="$out/results.jsonl"
: >"$results"

launch="$build/cmd/launch/fabps-launch"
for tool in cmd/launch/fabps-launch cmd/ctr_gen/fabps-ctr-gen \
  examples/ctr/fabps-ctr-trainer examples/ctr_torch/fabps-ctr-torch \
  python/fabps/__init__.py; do
  [[ -e "$build/$tool" ]] || {
    echo "run_ctr_bench.sh: $build/$tool is missing (build first)" >&2
    exit 2
  }
done

# The data, as fabps-launch --model ctr generates it (PrepareData).
if [[ ! -f "$data/planted.json" ]]; then
  echo "generating $records impressions into $data"
  mkdir -p "$data"
  test_records=$((records / 10 > 20000 ? records / 10 : 20000))
  vocab=$((records / 100 > 100 ? records / 100 : 100))
  "$build/cmd/ctr_gen/fabps-ctr-gen" --output-dir "$data" \
    --train-records "$records" --test-records "$test_records" \
    --vocab "$vocab" --train-shards 8 --test-shards 2 >"$out/ctr-gen.out" 2>&1
fi

load() { cut -d' ' -f1 /proc/loadavg; }

systems=()
for t in "${threads[@]}"; do systems+=("reference-${t}t"); done
systems+=(fabps-cpp fabps-torch)
echo "run_ctr_bench: $rounds rounds x $passes passes of $records" \
  "impressions from $data, output in $out"
cpu="$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2)"
echo "machine: $(nproc) CPUs,$cpu"
for ((i = 1; i <= rounds; i++)); do
  order=()
  for ((k = 0; k < ${#systems[@]}; k++)); do
    order+=("${systems[$(((k + i - 1) % ${#systems[@]}))]}")
  done
  for system in "${order[@]}"; do
    before="$(load)"
    echo "round $i $system: $(uptime)"
    run="$out/$system-$i"
    if [[ $system == reference-* ]]; then
      t="${system#reference-}"
      $py "$here/torch/ctr_reference.py" --data-dir "$data" \
        --passes "$passes" --threads "${t%t}" >"$run.out" 2>&1 || {
        echo "$system run $i failed:" >&2; tail -20 "$run.out" >&2; exit 1; }
      line="$($py "$here/torch/ctr_summarize.py" reference "$run.out" \
        "$system" "$before")"
    else
      trainer="${system#fabps-}"
      "$launch" --model ctr --trainer "$trainer" --data-dir "$data" \
        --ctr-records "$records" --passes "$passes" --run-dir "$run" \
        >"$run.out" 2>&1 || {
        echo "$system run $i failed:" >&2; tail -20 "$run.out" >&2; exit 1; }
      line="$($py "$here/torch/ctr_summarize.py" fabps "$run" "$system" \
        "$before")"
    fi
    echo "$line" >>"$results"
    echo "  $line"
  done
done
echo "planted model's test AUC: $($py -c 'import json,sys
print(json.load(open(sys.argv[1]))["planted_test_auc"])' "$data/planted.json")"
$py "$here/torch/ctr_summarize.py" table "$results"
echo "output: $out"
