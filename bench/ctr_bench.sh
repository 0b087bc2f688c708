#!/usr/bin/env bash
# CTR training samples/s: examples/ctr through `fabps-launch --model ctr`
# (a 2^22 x 16 embedding table moved by SendRows/GetRows, an MLP by dense
# push/pull) with 2 pservers x 2 trainers, per provider and mode (async,
# sync: --mode sync), REPEAT runs each with the two modes alternating (so
# that the machine's load hits both alike), and the median. Samples/s of a
# run: each trainer's training impressions over its training time (pass
# seconds minus the evaluator's eval_seconds), summed over the trainers.
# Also prints the last pass's test AUC against the planted model's.
# Usage: bench/ctr_bench.sh [BUILD_DIR] [PROVIDER ...]
# Environment: REPEAT (3), PASSES (2), RECORDS (1000000), TABLE (fixed:
# the --table-rows table both modes take; hashed: the launcher's hashed
# table with its defaults, async only), TABLE_ROWS (4194304), MODES ("async
# sync"), KEEP_DIR (keep the runs' directories there; default: removed)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" "shm")
repeat="${REPEAT:-3}"
passes="${PASSES:-2}"
records="${RECORDS:-1000000}"
rows="${TABLE_ROWS:-4194304}"
table="${TABLE:-fixed}"
table_flags=(--table "$table")
[ "$table" = fixed ] && table_flags+=(--table-rows "$rows")
read -r -a modes <<<"${MODES:-async sync}"
launch="$build/cmd/launch/fabps-launch"
for b in "$launch" "$build/examples/ctr/fabps-ctr-trainer" "$build/cmd/ctr_gen/fabps-ctr-gen"; do
  [ -x "$b" ] || { echo "build first: $b missing" >&2; exit 1; }
done
if [ -n "${KEEP_DIR:-}" ]; then  # keep every run's directory there
  out="$KEEP_DIR"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

# "samples_per_sec auc planted" of the run in directory $1 (samples/s and
# AUC: bench/torch/ctr_summarize.py's).
summarize() {
  /usr/bin/python3 - "$1" "$root/bench/torch" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[2])
import ctr_summarize
run = sys.argv[1]
r = ctr_summarize.fabps_run(f"{run}/run", "", "")
auc = float("nan") if r["final_auc"] is None else r["final_auc"]
m = re.search(r"planted model's test AUC: ([0-9.]+)", open(f"{run}/out").read())
print(f"{r['samples_per_sec']} {auc:.4f} {m.group(1) if m else 'nan'}")
PY
}

printf '| provider | mode | samples/s (%s runs) | median | last-pass test AUC / planted |\n' "$repeat"
printf '|---|---|---|---|---|\n'
for prov in "${providers[@]}"; do
  declare -A rates=() aucs=()
  for i in $(seq "$repeat"); do
    for mode in "${modes[@]}"; do
      d="$out/${prov//[^a-z]/_}-$mode-$i"
      rm -rf "$d"
      mkdir -p "$d"
      timeout 1800 "$launch" --model ctr --mode "$mode" --provider "$prov" \
        --pservers 2 --trainers 2 --passes "$passes" --ctr-records "$records" \
        "${table_flags[@]}" --run-dir "$d/run" >"$d/out" 2>&1 || {
        echo "run $i ($mode) on $prov failed:" >&2; tail -20 "$d/out" >&2; exit 1; }
      read -r rate auc planted < <(summarize "$d")
      rates[$mode]="${rates[$mode]:+${rates[$mode]} }$rate"
      aucs[$mode]="$auc / $planted"
    done
  done
  for mode in "${modes[@]}"; do
    read -r -a r <<<"${rates[$mode]}"
    median="$(printf '%s\n' "${r[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
    printf '| %s | %s | %s | **%s** | %s |\n' "$prov" "$mode" "$(IFS=,; echo "${r[*]}" | sed 's/,/, /g')" "$median" "${aucs[$mode]}"
  done
  unset rates aucs
done
