#!/usr/bin/env bash
# Installs every Debian package geotrain needs to build, test and demo.
# Idempotent: packages already present are skipped, so `make test` can call it every time.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  # training core (libopenblas0-pthread: Debian's LibTorch calls BLAS through the alternatives
  # system, which otherwise points at the slow reference BLAS)
  libtorch-dev libopenblas0-pthread libgloo-dev libzstd-dev libxxhash-dev libspdlog-dev libfmt-dev
  # control plane
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libssl-dev prometheus-cpp-dev
  # config, CLI and tests
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  # tools used by tests and the demo
  iproute2 python3
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
