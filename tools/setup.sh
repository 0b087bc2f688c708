#!/usr/bin/env bash
# Installs what fabps needs to build, test and run, from Debian 12 packages.
# Idempotent: installs only what is missing; safe to run every time.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev clang-format
  libfabric-dev libfabric-bin libibverbs-dev librdmacm-dev ibverbs-utils rdma-core
  libthrift-dev thrift-compiler libboost-dev libevent-dev libssl-dev
  libtbb-dev libgtest-dev libgmock-dev libbenchmark-dev
  libzstd-dev zlib1g-dev libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev libeigen3-dev
  etcd-server etcd-client iperf3 dataset-fashion-mnist
  iproute2 procps python3 python3-thrift openssl
  pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-torch
  libcpp-httplib-dev prometheus  # metrics server; the real Prometheus its test scrapes with
  libopenblas0-pthread libblas-dev  # torch's BLAS and the C++ example's (Eigen links -lblas, OpenBLAS at run time): the reference libblas3 is 5-10x slower
  slurm-wlm munge python3-yaml  # deploy/slurm's test on a real one-node Slurm; deploy/k8s's offline check
  chromium chromium-driver python3-selenium  # the status page's browser test (headless)
  python3-venv python3-pip python3-setuptools python3-wheel python3-mypy  # the wheel (fabps_wheel), its install test in a venv, stubtest of fabps/_core.pyi
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
