#!/usr/bin/env bash
# Installs every Debian package geotrain needs to build, test and demo.
# Idempotent: packages already present are skipped, so `make test` can call it every time.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  # scripts/check_format.sh (the ctest clang_format) checks the tree against .clang-format
  clang-format-14
  # training core (libopenblas0-pthread: Debian's LibTorch calls BLAS through the alternatives
  # system, which otherwise points at the slow reference BLAS)
  libtorch-dev libopenblas0-pthread libgloo-dev libzstd-dev libxxhash-dev libspdlog-dev libfmt-dev
  # control plane
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libssl-dev prometheus-cpp-dev libcpp-httplib-dev
  # config, CLI and tests
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  # tools used by tests, the demo and the deploy kit's checks: Prometheus (the metrics
  # integration test scrapes a live cluster; promtool checks deploy/prometheus), systemd-analyze
  # (the units), gnuplot (the demo's loss curve), curl (the demo reads the metrics endpoints),
  # jq and bc (the WAN scenario harness reads the CLI's JSON and times runs)
  iproute2 python3 python3-yaml prometheus systemd gnuplot-nox curl jq bc
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
# policy-rc.d: packages with services (prometheus) are installed for their programs only; their
# services must not start on the build machine.
policy=/usr/sbin/policy-rc.d
own_policy=false
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=true
fi
trap '[ "$own_policy" = true ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
