#!/usr/bin/env bash
# The local-cluster demo behind `make demo`: a coordinator and four worker daemons on this machine
# (loopback), the bundled 2 stages x 2 replicas job (examples/gpt2-tiny-2x2.yaml: GPT-2 tiny on
# Shakespeare, AC-SGD delta 4-bit activations, 8-bit gradients, CocktailSGD between replicas)
# submitted with the CLI and followed live, then its report. Everything it starts is stopped on
# exit, however it exits; logs stay in the demo directory it prints.
#
#   bash scripts/demo.sh [BUILD_DIR]        (from the repository root; `make demo` builds first)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${1:-build}
BIN=$BUILD_DIR/bin
for program in geotrain geotrain-coordinator geotrain-worker; do
  [[ -x $BIN/$program ]] || { echo "demo: $BIN/$program is missing; run 'make build' first" >&2; exit 1; }
done

DEMO_DIR=$(mktemp -d /tmp/geotrain-demo.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The coordinator picks a free port (--listen :0) and prints it once serving.
"$BIN/geotrain-coordinator" --listen 127.0.0.1:0 --state-dir "$DEMO_DIR/state" \
    >"$DEMO_DIR/coordinator.out" 2>"$DEMO_DIR/coordinator.log" &
PIDS+=($!)
for _ in $(seq 100); do
  grep -q "listening on" "$DEMO_DIR/coordinator.out" 2>/dev/null && break
  kill -0 "${PIDS[0]}" 2>/dev/null || { cat "$DEMO_DIR/coordinator.log" >&2; exit 1; }
  sleep 0.1
done
ADDRESS=$(grep -o "listening on [^ ]*" "$DEMO_DIR/coordinator.out" | head -1 | cut -d' ' -f3)
[[ -n $ADDRESS ]] || { echo "demo: the coordinator did not start" >&2; cat "$DEMO_DIR/coordinator.log" >&2; exit 1; }
export GEOTRAIN_COORDINATOR=$ADDRESS
echo "demo: coordinator on $ADDRESS, state and logs in $DEMO_DIR"

# Two "regions" of two workers each; every task gets one thread (four share this machine).
for i in 0 1 2 3; do
  region=$([[ $i -lt 2 ]] && echo region-a || echo region-b)
  "$BIN/geotrain-worker" --coordinator "$ADDRESS" --advertise 127.0.0.1 --region "$region" \
      --work-dir "$DEMO_DIR/worker-$i" --data-root "$PWD" --threads 1 \
      2>"$DEMO_DIR/worker-$i.log" &
  PIDS+=($!)
done
for _ in $(seq 100); do
  [[ $("$BIN/geotrain" workers | grep -cw idle || true) -ge 4 ]] && break
  sleep 0.2
done
"$BIN/geotrain" workers

# A fresh checkpoint directory, so the job starts from step 0 rather than resuming a past demo.
JOB=$DEMO_DIR/gpt2-tiny-2x2.yaml
sed "s|/tmp/geotrain-gpt2-tiny-2x2|$DEMO_DIR/job|g" examples/gpt2-tiny-2x2.yaml >"$JOB"
echo "demo: submitting examples/gpt2-tiny-2x2.yaml (2 stages x 2 replicas, 60 steps)"
START=$(date +%s)
status=0
"$BIN/geotrain" submit "$JOB" --wait || status=$?
echo
echo "demo: report ($(($(date +%s) - START)) s)"
"$BIN/geotrain" status job-1
echo
echo "demo: logs of every daemon and task are in $DEMO_DIR (geotrain logs job-1 while it runs)"
exit "$status"
