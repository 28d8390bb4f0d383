#!/usr/bin/env bash
# `make bench`: runs every benchmark; JSON lines on stdout (docs/benchmarks.md records them).
# Extra arguments (e.g. --quick) go to every benchmark.
set -euo pipefail
build_dir=${1:-build}
bench="$build_dir/bin/geotrain-bench"
"$bench" codecs "${@:2}"
if "$bench" --help | grep -q '^ *stage'; then "$bench" stage "${@:2}"; fi
if "$bench" --help | grep -q '^ *pipeline'; then "$bench" pipeline "${@:2}"; fi
