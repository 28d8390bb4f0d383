#!/usr/bin/env bash
# Checks that every C++ and CUDA source git tracks follows .clang-format (the ctest `clang_format`).
# With --fix it formats them in place instead. Exit 77 (ctest: skipped) when clang-format or git
# is missing. The files come from git, so build trees and fetched packages are never read.
#
#   bash scripts/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
FORMAT=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $FORMAT ]] || ! command -v git >/dev/null || ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "check_format: clang-format or a git checkout is missing; skipped" >&2
  exit 77
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [[ ${1:-} == --fix ]]; then
  "$FORMAT" -i "${files[@]}"
  exit 0
fi
if ! "$FORMAT" --dry-run --Werror "${files[@]}" 2>/tmp/check_format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/check_format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/check_format: not formatted: /' >&2
  rm -f /tmp/check_format.$$
  echo "check_format: run 'bash scripts/check_format.sh --fix' (clang-format, .clang-format)" >&2
  exit 1
fi
rm -f /tmp/check_format.$$
