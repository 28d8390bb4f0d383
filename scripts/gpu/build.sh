#!/usr/bin/env bash
# Builds geotrain's training core on a GPU machine that has CUDA, CMake, ninja, a C++ compiler and
# a CUDA build of PyTorch, but no network and none of our Debian -dev packages (docs/gpu.md).
#
#   scripts/gpu/build.sh fetch [DIR]        on the development machine (Debian bookworm, network):
#                                           apt-get download the .deb files into DIR
#   scripts/gpu/build.sh build [BUILD_DIR]  on the GPU machine: unpack them into DIR/root (never
#                                           into /) and build against the PyTorch wheel's LibTorch
#
# The .deb files travel with the working tree: DIR (default .gpu-deps, git-ignored) is named in the
# device tool's `carry`. Only the control-plane-free core is built (-DGEOTRAIN_CONTROL_PLANE=OFF):
# no gRPC, protobuf, SQLite or prometheus-cpp is needed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEFAULT_DEPS_DIR="$REPO/.gpu-deps"

# What the core (common, compression, models, net, runtime, bench, their tests) needs beyond a
# compiler, CMake and LibTorch; scripts/install-deps.sh installs the same on Debian.
DEV_PACKAGES=(
  libzstd-dev libxxhash-dev          # compression/ (pkg-config modules libzstd, libxxhash)
  libspdlog-dev libfmt-dev           # runtime/ logging (spdlog 1.10 on fmt 9)
  libyaml-cpp-dev                    # runtime/ job YAML
  nlohmann-json3-dev libcli11-dev    # header-only: models/, runtime/, bench/, tests/
  libgtest-dev                       # tests/ (static libgtest.a; no test uses GoogleMock)
  libssl-dev                         # net/ frame sealing (libcrypto: AES-256-GCM, HKDF)
  libgloo-dev                        # headers only: the PyTorch wheel ships c10d's
                                     # ProcessGroupGloo.hpp but not the gloo headers it includes
)
# The shared libraries those -dev packages' .so links point at (the GPU machine may lack them;
# the binaries get an RPATH to DIR/root, so these are the ones loaded).
RUNTIME_PACKAGES=(libzstd1 libxxhash0 libspdlog1.10 libfmt9 libyaml-cpp0.7 libssl3)
# pkg-config (CMake's FindPkgConfig) for machines without one: used only when none is on PATH.
TOOL_PACKAGES=(pkgconf-bin libpkgconf3)

# The device tool carries at most 64 MiB (working tree + carried folders).
CARRY_LIMIT_BYTES=$((64 * 1024 * 1024))

usage() {
  cat <<EOF
usage: scripts/gpu/build.sh fetch [DIR]
       scripts/gpu/build.sh build [BUILD_DIR]

fetch  (development machine, Debian bookworm amd64 with network to its mirror)
       Downloads the Debian packages the training core needs and a GPU machine lacks into DIR
       (default: .gpu-deps in the repository root; git-ignored) and prints their size.

build  (GPU machine, no network needed)
       Unpacks DIR's .deb files into DIR/root with dpkg-deb -x (never into /), configures with
       -DGEOTRAIN_CONTROL_PLANE=OFF -DGEOTRAIN_CUDA=ON against the LibTorch of \$PYTHON's torch and
       builds with every core. BUILD_DIR defaults to build-gpu in the repository root; the
       programs and test binaries land in BUILD_DIR/bin (geotrain-run, geotrain-bench,
       compression_tests, ...). Then: ctest --test-dir BUILD_DIR -L gpu

environment (build):
  PYTHON            the python whose torch to build against (default: python3)
  GPU_DEPS_DIR      the folder fetch filled (default: .gpu-deps in the repository root)
  GEOTRAIN_CUDA     ON (default), AUTO or OFF: the CUDA codec kernels (compression/cuda/)
  TORCH_CUDA_ARCH_LIST  for Torch's CMake config (default: "8.0;9.0+PTX"; no GPU probing)
  BUILD_TYPE        CMAKE_BUILD_TYPE (default: Release)
  JOBS              parallel jobs (default: nproc)
  TARGETS           build only these targets (space-separated; default: all)
  CMAKE_FLAGS       extra cmake arguments (word-split)
EOF
}

die() { echo "gpu/build.sh: error: $*" >&2; exit 1; }
say() { echo "gpu/build.sh: $*"; }

# Bytes the device tool would carry for the working tree: tracked and untracked-but-not-ignored
# files (ignored build folders stay behind unless named in carry).
tree_bytes() {
  if command -v git >/dev/null && git -C "$REPO" rev-parse >/dev/null 2>&1; then
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
       xargs -0 stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}')
  else
    echo 0
  fi
}

fetch() {
  local dir=${1:-$DEFAULT_DEPS_DIR}
  command -v apt-get >/dev/null || die "fetch needs apt-get (run it on the Debian bookworm development machine)"
  local arch
  arch=$(dpkg --print-architecture)
  [ "$arch" = amd64 ] || die "fetch downloads this machine's architecture ($arch); the GPU machine is amd64"
  if [ -r /etc/os-release ] && ! grep -q 'VERSION_CODENAME=bookworm' /etc/os-release; then
    echo "gpu/build.sh: warning: not Debian bookworm; the packages are this distribution's" >&2
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ "$dir" == "$REPO"/* ]] && command -v git >/dev/null &&
     ! git -C "$REPO" check-ignore -q "$dir/x.deb"; then
    echo "gpu/build.sh: warning: $dir is inside the repository but not git-ignored" >&2
  fi
  rm -f "$dir"/*.deb "$dir/MANIFEST"
  local all=("${DEV_PACKAGES[@]}" "${RUNTIME_PACKAGES[@]}" "${TOOL_PACKAGES[@]}")
  say "downloading ${#all[@]} packages into $dir"
  # apt-get download fetches each package's candidate version into the current folder; as root
  # it warns that the download is unsandboxed (the _apt user cannot write there): dropped.
  if ! (cd "$dir" && apt-get download -q "${all[@]}") 2> >(grep -v 'unsandboxed as root' >&2); then
    die "apt-get download failed (stale package lists? run apt-get update as root, then again)"
  fi
  local p f missing=()
  for p in "${all[@]}"; do
    compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] ||
    die "not downloaded: ${missing[*]} (stale package lists? run apt-get update as root, then again)"
  for f in "$dir"/*.deb; do
    # shellcheck disable=SC2016  # dpkg-deb's own ${field} syntax
    dpkg-deb --show --showformat='${Package} ${Version} ${Architecture}\n' "$f"
  done >"$dir/MANIFEST"
  local deps_bytes tree
  deps_bytes=$(du -sb "$dir" | cut -f1)
  tree=$(tree_bytes)
  say "$(wc -l <"$dir/MANIFEST") packages ($(du -sh "$dir" | cut -f1)) in $dir:"
  sed 's/^/  /' "$dir/MANIFEST"
  say "working tree $((tree / 1024)) KiB + deps $((deps_bytes / 1024)) KiB = $(((tree + deps_bytes) / 1024)) KiB (device carry limit $((CARRY_LIMIT_BYTES / 1024)) KiB)"
  if [ $((tree + deps_bytes)) -ge $CARRY_LIMIT_BYTES ]; then
    echo "gpu/build.sh: warning: over the device tool's 64 MiB carry limit" >&2
  fi
  if [[ "$dir" == "$REPO"/* ]]; then
    say "on the GPU machine: carry [\"${dir#"$REPO"/}\"], then scripts/gpu/build.sh build"
  fi
}

# Unpacks every .deb of $1 into $2 (emptied first) and makes the result usable from there.
unpack_debs() {
  local dir=$1 root=$2 f
  rm -rf "$root"
  mkdir -p "$root"
  for f in "$dir"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$f" "$root"
    else
      # No dpkg (not Debian/Ubuntu): a .deb is an ar archive holding data.tar.{xz,zst,gz}.
      command -v ar >/dev/null || die "neither dpkg-deb nor ar found to unpack $f"
      local member decompress
      member=$(ar t "$f" | grep '^data\.tar') || die "$f: no data.tar member"
      case "$member" in
        *.xz) decompress="xz -dc" ;;
        *.zst) decompress="zstd -dc" ;;
        *.gz) decompress="gzip -dc" ;;
        *) decompress="cat" ;;
      esac
      ar p "$f" "$member" | $decompress | tar -x -C "$root"
    fi
  done
  # pkg-config files name prefix=/usr (and some libdir=/usr/...): point them at the prefix.
  local pc
  while IFS= read -r -d '' pc; do
    sed -i -E "s#^([A-Za-z_]+)=/usr(/|\$)#\\1=$root/usr\\2#" "$pc"
  done < <(find "$root" -name '*.pc' -print0)
  # Absolute symbolic links (e.g. /usr/lib/...so -> /lib/...) would point into the GPU machine's /.
  local link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    if [[ "$target" == /* ]]; then
      ln -sfn "$root$target" "$link"
    fi
  done < <(find "$root" -type l -print0)
}

build() {
  local build_dir=${1:-$REPO/build-gpu}
  local dir=${GPU_DEPS_DIR:-$DEFAULT_DEPS_DIR}
  local python=${PYTHON:-python3}
  local cuda=${GEOTRAIN_CUDA:-ON}
  local jobs=${JOBS:-$(nproc)}
  compgen -G "$dir/*.deb" >/dev/null ||
    die "no .deb files in $dir: run 'scripts/gpu/build.sh fetch' on the development machine and carry the folder (or set GPU_DEPS_DIR)"
  command -v cmake >/dev/null || die "cmake not found"
  command -v ninja >/dev/null || die "ninja not found"
  command -v "$python" >/dev/null || die "python '$python' not found (set PYTHON=/path/to/python)"
  dir=$(cd "$dir" && pwd)

  # The LibTorch of the PyTorch wheel.
  local torch_info torch_prefix torch_lib
  torch_info=$("$python" -c 'import torch, os
print(torch.utils.cmake_prefix_path)
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
print(torch.__version__, "CUDA", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)') ||
    die "'$python' cannot import torch (set PYTHON to the python that has the CUDA PyTorch wheel)"
  torch_prefix=$(sed -n 1p <<<"$torch_info")
  torch_lib=$(sed -n 2p <<<"$torch_info")
  say "torch $(sed -n 3p <<<"$torch_info") at $torch_prefix"
  mkdir -p "$build_dir"
  build_dir=$(cd "$build_dir" && pwd)

  # The Debian packages, unpacked under the deps folder.
  local root=$dir/root
  local libdir=$root/usr/lib/x86_64-linux-gnu
  local debs=("$dir"/*.deb)
  say "unpacking ${#debs[@]} packages into $root"
  unpack_debs "$dir" "$root"

  local pkg_config
  if pkg_config=$(command -v pkg-config); then
    :
  else
    # pkgconf from the deps, through a wrapper that points the loader at its library.
    [ -x "$root/usr/bin/pkgconf" ] || die "no pkg-config on PATH and no pkgconf in $dir"
    pkg_config=$dir/bin/pkg-config
    mkdir -p "$dir/bin"
    cat >"$pkg_config" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$root/usr/bin/pkgconf" "\$@"
EOF
    chmod +x "$pkg_config"
    say "no pkg-config on PATH: using pkgconf from the deps ($pkg_config)"
  fi
  export PKG_CONFIG_PATH="$libdir/pkgconfig:$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

  # nvcc: $CUDACXX, on PATH, or the toolkit's usual place; named to CMake by its real path (nvcc
  # finds its headers relative to itself, which a symbolic link elsewhere breaks).
  local cuda_flags=(-DGEOTRAIN_CUDA="$cuda") nvcc=""
  if [ "$cuda" != OFF ] && [ -z "${CUDACXX:-}" ]; then
    nvcc=$(command -v nvcc || true)
    [ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
    if [ -n "$nvcc" ]; then
      cuda_flags+=(-DCMAKE_CUDA_COMPILER="$(readlink -f "$nvcc")")
    elif [ "$cuda" = ON ]; then
      die "GEOTRAIN_CUDA=ON but nvcc is not on PATH nor at /usr/local/cuda/bin/nvcc (set CUDACXX, or GEOTRAIN_CUDA=AUTO/OFF)"
    fi
  fi
  # Torch's CMake config turns its TORCH_CUDA_ARCH_LIST into -gencode flags that it appends to
  # CMAKE_CUDA_FLAGS (and it sets CMAKE_CUDA_ARCHITECTURES to OFF) wherever find_package(Torch)
  # runs; unset, it probes the GPUs, or picks a dozen architectures without one. Ampere and Hopper
  # code plus compute_90 PTX, as GEOTRAIN_CUDA_ARCHITECTURES; a cache variable, so that a
  # re-configure started by ninja keeps it.
  local torch_arch_list=${TORCH_CUDA_ARCH_LIST:-8.0;9.0+PTX}

  # fmt: the wheel's include folder carries its own fmt (12.x in 2.x wheels), which spdlog 1.10
  # (Debian's, built on fmt 9: libfmt.so.9) cannot compile against. A folder holding only the
  # prefix's fmt goes first as -I: GCC searches -I folders before every -isystem one (LibTorch's
  # included), so <fmt/...> is fmt 9 everywhere. The c10d headers that include fmt compile with it.
  local fmt_first=$dir/fmt-first
  mkdir -p "$fmt_first"
  ln -sfn "$root/usr/include/fmt" "$fmt_first/fmt"

  # TORCH_LIBRARY, c10_LIBRARY: TorchConfig.cmake looks for libtorch.so and libc10.so with
  # find_library(... PATHS <wheel>/lib), which searches the system folders first: where Debian's
  # libtorch-dev is installed too (the development machine) it would link /usr/lib's 1.13 ones.
  # CMAKE_PREFIX_PATH: the config files of the Debian packages (spdlog, GTest, CLI11, ...),
  # FindOpenSSL and Torch. *_STANDARD_INCLUDE_DIRECTORIES: headers no imported target names
  # (gloo's, included by c10d), searched after every -I/-isystem of the targets, so LibTorch's own
  # headers win over the prefix. The linker flags: an RPATH (not RUNPATH, which the loader does
  # not apply to libspdlog's own libfmt dependency) to the prefix's libraries; CMake adds the
  # LibTorch folder to it, and the wheel's libraries find its CUDA libraries through their own
  # $ORIGIN RPATH.
  local link_flags="-L$libdir -Wl,-rpath,$libdir -Wl,-rpath-link,$libdir -Wl,--disable-new-dtags"
  # The wheel's CUDA libraries (site-packages/nvidia/*/lib: cudart, cuBLAS, NCCL, cuDNN, ...), the
  # ones libtorch_cuda.so finds through its $ORIGIN RPATH, go first: at link time so that ld
  # resolves libtorch_cuda.so's NCCL symbols against the wheel's NCCL and not against an older one
  # beside the toolkit (/usr/local/cuda/lib, which CMake puts in the RPATH for CUDA::cudart), and
  # at run time so that the program and PyTorch share one CUDA runtime, the wheel's.
  local d nvidia_libs=""
  for d in "$torch_lib"/../../nvidia/*/lib; do
    [ -d "$d" ] || continue
    d=$(cd "$d" && pwd)
    link_flags+=" -Wl,-rpath,$d -Wl,-rpath-link,$d"
    nvidia_libs+=":$d"
  done
  local extra=()
  # shellcheck disable=SC2206
  [ -n "${CMAKE_FLAGS:-}" ] && extra=(${CMAKE_FLAGS})
  say "configuring $build_dir"
  cmake -S "$REPO" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
    -DGEOTRAIN_CONTROL_PLANE=OFF \
    "${cuda_flags[@]}" \
    -DCMAKE_PREFIX_PATH="$root/usr;$torch_prefix" \
    -DPKG_CONFIG_EXECUTABLE="$pkg_config" \
    -DTORCH_CUDA_ARCH_LIST="$torch_arch_list" \
    -DTORCH_LIBRARY="$torch_lib/libtorch.so" -Dc10_LIBRARY="$torch_lib/libc10.so" \
    -DOPENSSL_ROOT_DIR="$root/usr" \
    -DCMAKE_CXX_FLAGS="-I$fmt_first" \
    -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES="$root/usr/include" \
    -DCMAKE_CUDA_STANDARD_INCLUDE_DIRECTORIES="$root/usr/include" \
    -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
    -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
    -DPython3_EXECUTABLE="$(command -v "$python")" \
    "${extra[@]}"

  local targets=()
  # shellcheck disable=SC2206
  [ -n "${TARGETS:-}" ] && targets=(--target ${TARGETS})
  say "building with $jobs jobs"
  cmake --build "$build_dir" -j "$jobs" "${targets[@]}"

  # For running the binaries from elsewhere (a copy without RPATHs, a debugger): the same paths.
  local env_file=$build_dir/gpu-env.sh
  # shellcheck disable=SC2016
  printf 'export LD_LIBRARY_PATH="%s%s:%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n' \
    "$libdir" "$nvidia_libs" "$torch_lib" >"$env_file"
  local unresolved=0 bin
  for bin in "$build_dir"/bin/*; do
    if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then continue; fi
    if ldd "$bin" 2>/dev/null | grep -q 'not found'; then
      echo "gpu/build.sh: warning: $bin has unresolved libraries:" >&2
      ldd "$bin" | grep 'not found' >&2
      unresolved=1
    fi
  done
  say "done: $build_dir/bin/ ($(find "$build_dir/bin" -maxdepth 1 -type f -printf '%f\n' 2>/dev/null | sort | paste -sd' '))"
  if [ $unresolved -eq 0 ]; then
    say "the binaries find their libraries through their RPATH; no LD_LIBRARY_PATH is needed"
  else
    say "source $env_file (LD_LIBRARY_PATH) before running them"
  fi
  say "tests: ctest --test-dir $build_dir -L gpu --output-on-failure   (or -LE gpu for the CPU ones)"
}

case "${1:-}" in
  fetch) shift; [ $# -le 1 ] || { usage >&2; exit 2; }; fetch "$@" ;;
  build) shift; [ $# -le 1 ] || { usage >&2; exit 2; }; build "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
