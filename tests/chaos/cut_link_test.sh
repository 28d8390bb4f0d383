#!/usr/bin/env bash
# Chaos: one worker's link cut mid-run (its veth down) in an emulated WAN of four regions with one
# worker each, then restored. No spare can take the rank (docs/reliability.md, "Cut link"), so:
#   - the peers' transport timeouts (training.timeout_seconds) fail the generation and the
#     coordinator, which stops hearing the cut worker, declares it dead;
#   - the job waits in RECOVERING for a worker (it neither fails nor is re-placed onto the same
#     region's nothing), its events naming the lost worker;
#   - when the link is back the worker re-registers, the job is placed again and resumes from the
#     newest complete checkpoint, and finishes.
# Prints `chaos: case=cut-link ... outcome=finished`. Exit 0 passed, 1 failed, 77 skipped (no
# network namespaces: not root, no CAP_NET_ADMIN, or a module missing).
#   bash tests/chaos/cut_link_test.sh BUILD_DIR
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
BIN=$BUILD/bin
for program in geotrain-coordinator geotrain-worker geotrain; do
  [[ -x $BIN/$program ]] || { echo "cut_link_test: $BIN/$program is not built" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "cut_link_test: SKIP: jq is missing"; exit 77; }

# shellcheck source=scripts/wan/netns.sh
source "$REPO/scripts/wan/netns.sh"
if ! wan_probe; then
  echo "cut_link_test: SKIP: no emulated WAN here: $WAN_PROBE_ERROR"
  exit 77
fi

OUT=$(mktemp -d /tmp/geotrain-cut-link.XXXXXX)
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wan_cleanup
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((rc == 0)); then rm -rf "$OUT"; else echo "cut_link_test: logs kept in $OUT" >&2; fi
}
wan_setup
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wan_add_node coord 10.77.0.1
WORKERS=(w1 w2 w3 w4)
for i in 1 2 3 4; do wan_add_node "w$i" "10.77.$i.1"; done

# TLS, worker certificates and tokens, as a real deployment (docs/security.md).
CERTS=$OUT/certs
"$BIN/geotrain" certs init --dir "$CERTS" --hosts 10.77.0.1 >"$OUT/certs.out" ||
  { echo "cut_link_test: geotrain certs init failed" >&2; exit 1; }
for i in 1 2 3 4; do  # each worker its own certificate
  "$BIN/geotrain" certs add-worker --dir "$CERTS" --name "w$i" >>"$OUT/certs.out" ||
    { echo "cut_link_test: geotrain certs add-worker failed" >&2; exit 1; }
done
wan_exec_prefix coord
"${WAN_EXEC[@]}" "$BIN/geotrain-coordinator" --listen 10.77.0.1:7070 --state-dir "$OUT/state" \
  --metrics-listen "" --heartbeat-interval-ms 300 --heartbeat-timeout-ms 3000 \
  --stop-timeout-seconds 10 --tls-cert "$CERTS/coordinator.pem" --tls-key "$CERTS/coordinator.key" \
  --tls-ca "$CERTS/ca.pem" --join-token-file "$CERTS/join.token" \
  --admin-token-file "$CERTS/admin.token" >"$OUT/coordinator.out" 2>"$OUT/coordinator.log" &
PIDS+=($!)
export GEOTRAIN_COORDINATOR=10.77.0.1:7070
export GEOTRAIN_TLS_CA=$CERTS/ca.pem GEOTRAIN_ADMIN_TOKEN_FILE=$CERTS/admin.token
cli() { wan_exec coord env OMP_NUM_THREADS=1 "$BIN/geotrain" "$@"; }
for i in 1 2 3 4; do
  wan_exec_prefix "w$i"
  OMP_NUM_THREADS=1 "${WAN_EXEC[@]}" "$BIN/geotrain-worker" --coordinator 10.77.0.1:7070 \
    --advertise "10.77.$i.1" --region "r$i" --work-dir "$OUT/w$i" --data-root "$REPO" \
    --allow-path "$OUT" --threads 1 --metrics-listen "" --tls-ca "$CERTS/ca.pem" --tls-cert "$CERTS/worker-w$i.pem" \
    --tls-key "$CERTS/worker-w$i.key" --join-token-file "$CERTS/join.token" \
    >"$OUT/w$i.out" 2>"$OUT/w$i.log" &
  PIDS+=($!)
done

wait_for() {  # wait_for SECONDS WHAT COMMAND...: polls COMMAND twice a second
  local deadline=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@"; do
    (($(date +%s) < deadline)) || { echo "cut_link_test: FAIL: no $what within the time" >&2; return 1; }
    sleep 0.5
  done
}
idle_workers() { [[ $(cli workers 2>/dev/null | grep -cw idle || true) -ge $1 ]]; }
wait_for 90 "four idle workers" idle_workers 4

# The tiny job made short: a checkpoint every 5 steps, a 15 s transport timeout.
sed -e "s|runs/gpt2-tiny-2x2|$OUT/job|" -e 's/^  steps: .*/  steps: 20/' \
  -e 's/^  checkpoint_every: .*/  checkpoint_every: 5/' -e 's/^  eval_every: .*/  eval_every: 0/' \
  -e 's/^  timeout_seconds: .*/  timeout_seconds: 15/' -e 's/^  max_restarts: .*/  max_restarts: 3/' \
  "$REPO/examples/gpt2-tiny-2x2.yaml" >"$OUT/job.yaml"
JOB=$(cli submit "$OUT/job.yaml" -o json | jq -r .id)
job() { cli status "$JOB" -o json 2>/dev/null; }
field() { job | jq -r "$1"; }
past_step() { [[ $(field '.progress.step // 0') -ge $1 ]]; }
wait_for 240 "step 7" past_step 7

# Cut the link of the worker running stage 1, replica 1.
victim_id=$(field '.placements[] | select(.stage == 1 and .replica == 1) | .worker_id')
victim=""
for w in "${WORKERS[@]}"; do
  [[ $(tr -d '[:space:]' <"$OUT/$w/worker-id") == "$victim_id" ]] && victim=$w
done
[[ -n $victim ]] || { echo "cut_link_test: FAIL: no worker has id $victim_id" >&2; exit 1; }
generation=$(field '.generation')
cut_at=$(date +%s.%N)
wan_link "$victim" down
echo "cut_link_test: cut the link of $victim ($victim_id) at step $(field '.progress.step')"

# The system's answer while the link is down: recovery, waiting for a worker, not a failure.
recovering() { [[ $(field '.state') == JOB_STATE_RECOVERING ]]; }
wait_for $((15 * 2 + 30)) "RECOVERING" recovering
sleep 10
state=$(field '.state')
[[ $state == JOB_STATE_RECOVERING ]] ||
  { echo "cut_link_test: FAIL: with the link down the job is $state, expected RECOVERING" >&2; exit 1; }
events=$(cli logs "$JOB" --events 2>/dev/null || true)
echo "$events" >"$OUT/events-while-cut.txt"
echo "cut_link_test: while cut: $(field '.message')"
grep -q "$victim_id" <<<"$events$(field '.message')" ||
  { echo "cut_link_test: FAIL: the job's events do not name the lost worker $victim_id" >&2; exit 1; }

wan_link "$victim" up
echo "cut_link_test: link of $victim restored after $(echo "$(date +%s.%N) - $cut_at" | bc) s"
resumed() {
  local j
  j=$(job) || return 1
  [[ $(jq -r .state <<<"$j") == JOB_STATE_RUNNING && $(jq -r .generation <<<"$j") -gt $generation &&
     $(jq -r '.progress.step // 0' <<<"$j") -gt $(jq -r '.progress.checkpoint_step // 0' <<<"$j") ]] ||
    [[ $(jq -r .state <<<"$j") == JOB_STATE_SUCCEEDED ]]
}
wait_for 240 "resumed generation" resumed
recovery=$(echo "$(date +%s.%N) - $cut_at" | bc)
ended() { [[ $(field '.state') =~ ^JOB_STATE_(SUCCEEDED|FAILED|CANCELLED)$ ]]; }
wait_for 300 "end of the job" ended
final=$(job)
echo "$final" >"$OUT/job.json"
state=$(jq -r .state <<<"$final")
outcome=$([[ $state == JOB_STATE_SUCCEEDED ]] && echo finished || echo "failed")
printf 'chaos: case=cut-link steps_lost=%s recovery_seconds=%.1f outcome=%s\n' \
  "$(jq -r '.steps_lost // 0' <<<"$final")" "$recovery" "$outcome"
[[ $state == JOB_STATE_SUCCEEDED ]] ||
  { echo "cut_link_test: FAIL: the job ended $state: $(jq -r '.message // ""' <<<"$final")" >&2; exit 1; }
echo "cut_link_test: PASS"
