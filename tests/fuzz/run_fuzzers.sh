#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time on a scratch copy of its checked-in seed corpus.
#   run_fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
build_dir=${1:?build dir}
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

status=0
for target in frame_decode; do
  fuzzer="$build_dir/bin/${target}_fuzzer"
  corpus="$work/$target"
  mkdir -p "$corpus"
  cp "$here/corpus/$target"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $target for ${seconds}s ($(ls "$corpus" | wc -l) seeds)"
  if ! "$fuzzer" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$work/" > "$work/$target.log" 2>&1; then
    tail -n 60 "$work/$target.log"
    mkdir -p "$build_dir/fuzz-artifacts"
    cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$build_dir/fuzz-artifacts/" 2>/dev/null || true
    echo "fuzz: $target FAILED (artifacts in $build_dir/fuzz-artifacts)"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$work/$target.log" | tail -n 2
    echo "fuzz: $target clean"
  fi
done
exit $status
