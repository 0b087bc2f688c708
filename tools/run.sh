#!/usr/bin/env bash
# The main job: installs what is missing, builds, checks the fabrics and runs
# a local distributed training of Fashion-MNIST (a master, 2 pservers and 2
# trainers on the embedded local store) through fabps-launch. Arguments go
# to fabps-launch (see `build/tools/launch/fabps-launch --help`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tools/setup.sh
tools/build.sh
build/tools/fabps-doctor || true
exec build/tools/launch/fabps-launch "$@"
