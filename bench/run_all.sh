#!/usr/bin/env bash
# `make bench`: runs every benchmark; JSON lines on stdout (docs/benchmarks.md records them).
set -euo pipefail
build_dir=${1:-build}
"$build_dir/bin/geotrain-bench" codecs "${@:2}"
