#!/usr/bin/env bash
# The main job: installs what is missing, builds the binaries it needs,
# checks the fabrics and runs a local distributed training of Fashion-MNIST
# (a master, 2 pservers and 2 trainers on the embedded local store; another
# model with --model, e.g. ctr) through fabps-launch. Arguments go to fabps-launch: `tools/run.sh --help` lists
# them.
#
# The arguments are checked first, before anything is installed or built,
# against cmd/launch/usage.txt: the launcher's --help output, kept in the
# source tree beside it (the launcher does not exist before the build).
# tests/cmd/launch_usage_test.cc fails when that file differs from what
# the built launcher prints, so the two cannot drift apart. Only flag names
# are checked here; the launcher checks the values.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${FABPS_BUILD_DIR:-$root/build}"
usage="$root/cmd/launch/usage.txt"

# Exits 2 with the usage on stderr when an argument is not a flag of
# fabps-launch, 0 with the usage on stdout for -h/--help.
check_launcher_args() {
  # From usage.txt: "  --name TYPE..." takes a value, "  --name   text" not.
  local -A takes_value=()
  local line name
  while IFS= read -r line; do
    if [[ "$line" =~ ^\ \ (-[a-zA-Z],)?(--[a-z0-9-]+)(\ [A-Z])? ]]; then
      name=${BASH_REMATCH[2]}
      takes_value[$name]=$([ -n "${BASH_REMATCH[3]}" ] && echo 1 || echo 0)
    fi
  done <"$usage"
  local arg bad=""
  while [ $# -gt 0 ]; do
    arg=$1
    shift
    case "$arg" in
      -h | --help)
        cat "$usage"
        exit 0
        ;;
      --*=*)
        name=${arg%%=*}
        [ -n "${takes_value[$name]+x}" ] || bad=$arg
        ;;
      --?*)
        if [ -z "${takes_value[$arg]+x}" ]; then
          bad=$arg
        elif [ "${takes_value[$arg]}" = 1 ] && [ $# -gt 0 ]; then
          shift  # its value
        fi
        ;;
      *) bad=$arg ;;
    esac
    if [ -n "$bad" ]; then
      echo "tools/run.sh: '$bad' is not a flag of fabps-launch; nothing was" \
        "built. Its usage:" >&2
      cat "$usage" >&2
      exit 2
    fi
  done
}

check_launcher_args "$@"
tools/setup.sh
# Only the binaries of the job asked for (tools/test.sh builds everything):
# the model's trainer and data tool (--model), the Python package and the
# torch trainer only for --trainer torch.
model=fashion-mnist
trainer=cpp
prev=""
for arg in "$@"; do
  case "$prev" in
    --model) model=$arg ;;
    --trainer) trainer=$arg ;;
  esac
  case "$arg" in
    --model=*) model=${arg#--model=} ;;
    --trainer=*) trainer=${arg#--trainer=} ;;
  esac
  prev=$arg
done
targets=(--target fabps-launch --target fabps-master --target fabps-pserver
  --target fabps-doctor)
case "$model" in
  ctr)
    targets+=(--target fabps-ctr-trainer --target fabps-ctr-gen)
    torch_trainer=fabps_ctr_torch
    ;;
  *)
    targets+=(--target fabps-fashion-mnist-trainer
      --target fabps-convert-fashion-mnist)
    torch_trainer=fabps_fashion_mnist_torch
    ;;
esac
if [ "$trainer" = torch ]; then
  targets+=(--target fabps_python --target "$torch_trainer")
fi
tools/build.sh "${targets[@]}"
"$build/cmd/doctor/fabps-doctor" || true
exec "$build/cmd/launch/fabps-launch" "$@"
