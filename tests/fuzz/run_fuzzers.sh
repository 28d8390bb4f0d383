#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time on a scratch copy of its checked-in seed corpus.
#   run_fuzzers.sh BUILD_DIR [SECONDS]     (SECONDS per target, default 30)
# A crash, a sanitizer report, a leak, an input slower than 10 s (-timeout) or more than 2 GiB of
# memory fails the run; the offending inputs are copied to BUILD_DIR/fuzz-artifacts/
# (tests/fuzz/README.md: how to reproduce one).
set -euo pipefail
build_dir=${1:?build dir}
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# target:max_len. Lengths fit the inputs: frames of up to 2^18 elements, safetensors headers with
# a few dozen tensors, trimmed tokenizer files, job YAMLs (a few KiB), jsonl files.
# Longer inputs only slow each run down under the sanitizers without reaching new code.
targets="frame_decode:65536 safetensors_header:16384 tokenizer_files:16384 job_spec:8192
         data_jsonl:8192"

status=0
for entry in $targets; do
  target=${entry%%:*}
  max_len=${entry##*:}
  fuzzer="$build_dir/bin/${target}_fuzzer"
  corpus="$work/$target"
  mkdir -p "$corpus"
  cp "$here/corpus/$target"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $target for ${seconds}s ($(ls "$corpus" | wc -l) seeds, max_len $max_len)"
  if ! "$fuzzer" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$work/$target-" \
       > "$work/$target.log" 2>&1; then
    tail -n 60 "$work/$target.log"
    mkdir -p "$build_dir/fuzz-artifacts"
    cp "$work"/"$target"-crash-* "$work"/"$target"-leak-* "$work"/"$target"-timeout-* \
       "$work"/"$target"-oom-* "$build_dir/fuzz-artifacts/" 2>/dev/null || true
    echo "fuzz: $target FAILED (artifacts in $build_dir/fuzz-artifacts)"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$work/$target.log" | tail -n 2
    echo "fuzz: $target clean"
  fi
done
exit $status
