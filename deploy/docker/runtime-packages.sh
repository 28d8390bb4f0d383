#!/usr/bin/env bash
# Prints, one per line, the Debian packages that hold the shared libraries the given programs
# load (ldd, so dependencies of dependencies too), for the runtime image to apt-get install.
# Packages rather than copied .so files: the runtime image then gets security updates, the BLAS
# alternatives LibTorch calls through, and a glibc that matches its own.
# Usage: runtime-packages.sh PROGRAM...   Exit 1 when a library is missing or no package holds it.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 PROGRAM..." >&2
  exit 2
fi

ldd_output=$(ldd "$@")
if grep -q "not found" <<<"$ldd_output"; then
  echo "runtime-packages: unresolved libraries:" >&2
  grep "not found" <<<"$ldd_output" >&2
  exit 1
fi

# Debian 12 is usr-merged on disk but dpkg may record a file under /lib or /usr/lib: try both,
# for the path ldd printed and for the file it resolves to (alternatives such as libblas.so.3).
owner() {
  local path candidate package
  for path in "$1" "$(readlink -f "$1")"; do
    for candidate in "$path" "/usr${path}" "${path#/usr}"; do
      package=$(dpkg-query -S "$candidate" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
      if [ -n "$package" ]; then
        echo "$package"
        return 0
      fi
    done
  done
  return 1
}

for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$ldd_output" | sort -u); do
  if ! owner "$lib"; then
    echo "runtime-packages: no Debian package holds $lib" >&2
    exit 1
  fi
done | sort -u
