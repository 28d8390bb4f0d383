#!/usr/bin/env bash
# A TLS cluster in network namespaces, deployed as docs/security.md says (TLS, mTLS, join and
# admin tokens, a non-loopback address), for the attack tests of tests/security/. Source it:
#
#   source tests/security/tls_cluster.sh
#   tls_cluster_init NAME BUILD_DIR      # skip (exit 77) without namespaces; sets OUT, BIN, CERTS
#   tls_cluster_start_coordinator [FLAGS...]  # /metrics on $COORDINATOR_METRICS_LISTEN if set
#   tls_cluster_start_workers N [FLAGS...] # w1..wN in namespaces 10.77.i.1, region ri; their
#                                         # --data-root: $TLS_CLUSTER_DATA_ROOT, else the repo
#   tls_cluster_wait_idle N
#   cli ARGS...                           # the admin CLI, inside the coordinator's namespace
#   attacker ARGS...                      # a command run in the attacker's namespace (10.77.99.1)
#   attack_as NAME CMD...                 # attack_client there, with worker NAME's credentials
#                                         # (its own certificate, `certs add-worker`, and the join
#                                         # token: what a compromised worker NAME holds)
#   tls_cluster_submit_tiny STEPS         # submit gpt2-tiny-2x2 (4 ranks), print the job id
#   job_field JOB JQ                      # a field of `geotrain status JOB -o json`
#   worker_name_of ID                     # w<i>, the worker that holds worker id ID
#   fail "what"; pass                     # print the verdict and exit 1 / 0
#
# The EXIT trap kills every process started here and deletes the namespaces; logs stay in $OUT
# when the test failed. Coordinator log: $OUT/coordinator.log; worker i: $OUT/wi.log.
set -euo pipefail

TLS_CLUSTER_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COORDINATOR_ADDR=10.77.0.1:7070
PIDS=()

tls_cluster_init() {
  TEST_NAME=$1
  BIN=${2:-$TLS_CLUSTER_REPO/build}/bin
  local program
  for program in geotrain-coordinator geotrain-worker geotrain attack_client; do
    [[ -x $BIN/$program ]] || { echo "$TEST_NAME: $BIN/$program is not built" >&2; exit 1; }
  done
  command -v jq >/dev/null || { echo "$TEST_NAME: SKIP: jq is missing"; exit 77; }
  # shellcheck source=scripts/wan/netns.sh
  source "$TLS_CLUSTER_REPO/scripts/wan/netns.sh"
  if ! wan_probe; then
    echo "$TEST_NAME: SKIP: no emulated WAN here: $WAN_PROBE_ERROR"
    exit 77
  fi
  OUT=$(mktemp -d "/tmp/geotrain-$TEST_NAME.XXXXXX")
  wan_setup
  trap _tls_cluster_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  wan_add_node coord 10.77.0.1
  wan_add_node attacker 10.77.99.1
  CERTS=$OUT/certs
  "$BIN/geotrain" certs init --dir "$CERTS" --hosts 10.77.0.1 >"$OUT/certs.out" ||
    fail "geotrain certs init failed"
  export GEOTRAIN_COORDINATOR=$COORDINATOR_ADDR
  export GEOTRAIN_TLS_CA=$CERTS/ca.pem GEOTRAIN_ADMIN_TOKEN_FILE=$CERTS/admin.token
}

_tls_cluster_cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wan_cleanup
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((rc == 0)); then rm -rf "$OUT"; else echo "$TEST_NAME: logs kept in $OUT" >&2; fi
}

fail() { echo "$TEST_NAME: FAIL: $*" >&2; exit 1; }
pass() { echo "$TEST_NAME: PASS"; exit 0; }

tls_cluster_start_coordinator() {
  wan_exec_prefix coord
  "${WAN_EXEC[@]}" "$BIN/geotrain-coordinator" --listen "$COORDINATOR_ADDR" \
    --state-dir "$OUT/state" --metrics-listen "${COORDINATOR_METRICS_LISTEN:-}" --heartbeat-interval-ms 300 \
    --heartbeat-timeout-ms 3000 --stop-timeout-seconds 10 \
    --tls-cert "$CERTS/coordinator.pem" --tls-key "$CERTS/coordinator.key" \
    --tls-ca "$CERTS/ca.pem" --join-token-file "$CERTS/join.token" \
    --admin-token-file "$CERTS/admin.token" "$@" \
    >>"$OUT/coordinator.out" 2>>"$OUT/coordinator.log" &
  COORDINATOR_PID=$!
  PIDS+=("$COORDINATOR_PID")
}

# Worker NAME's own certificate (docs/security.md "Adding and revoking a worker"), once.
issue_worker_cert() {
  [[ -f $CERTS/worker-$1.pem ]] ||
    "$BIN/geotrain" certs add-worker --dir "$CERTS" --name "$1" >>"$OUT/certs.out" ||
    fail "geotrain certs add-worker --name $1 failed"
}

# Worker i's credentials, as the operator installs them (docs/security.md "Setting it up"):
# certificate w<i>, identity geotrain:worker:w<i>.
worker_tls_flags() {
  issue_worker_cert "w$1"
  echo --tls-ca "$CERTS/ca.pem" --tls-cert "$CERTS/worker-w$1.pem" \
    --tls-key "$CERTS/worker-w$1.key" --join-token-file "$CERTS/join.token"
}

tls_cluster_start_workers() {
  local count=$1 i
  shift
  mkdir -p "$OUT/job"  # where tls_cluster_submit_tiny's jobs write (an --allow-path)
  for ((i = 1; i <= count; i++)); do
    wan_add_node "w$i" "10.77.$i.1"
    issue_worker_cert "w$i"
    wan_exec_prefix "w$i"
    # shellcheck disable=SC2046
    OMP_NUM_THREADS=1 "${WAN_EXEC[@]}" "$BIN/geotrain-worker" --coordinator "$COORDINATOR_ADDR" \
      --advertise "10.77.$i.1" --region "r$i" --work-dir "$OUT/w$i" \
      --data-root "${TLS_CLUSTER_DATA_ROOT:-$TLS_CLUSTER_REPO}" --allow-path "$OUT/job" --threads 1 --metrics-listen "" $(worker_tls_flags "$i") "$@" \
      >>"$OUT/w$i.out" 2>>"$OUT/w$i.log" &
    PIDS+=($!)
  done
}

cli() { wan_exec coord env OMP_NUM_THREADS=1 "$BIN/geotrain" "$@"; }
attacker() { wan_exec attacker "$@"; }
attack_as() {
  local name=$1
  shift
  issue_worker_cert "$name"
  attacker "$BIN/attack_client" --coordinator "$COORDINATOR_ADDR" --ca "$CERTS/ca.pem" \
    --cert "$CERTS/worker-$name.pem" --key "$CERTS/worker-$name.key" \
    --token "$CERTS/join.token" "$@"
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: polls COMMAND twice a second
  local seconds=$1 what=$2
  local deadline=$(($(date +%s) + seconds))
  shift 2
  until "$@"; do
    (($(date +%s) < deadline)) || fail "no $what within $seconds s"
    sleep 0.5
  done
}
_idle_workers() { [[ $(cli workers 2>/dev/null | grep -cw idle || true) -ge $1 ]]; }
tls_cluster_wait_idle() { wait_for "${2:-90}" "$1 idle workers" _idle_workers "$1"; }

tls_cluster_submit_tiny() {
  sed -e "s|runs/gpt2-tiny-2x2|$OUT/job|" -e "s/^  steps: .*/  steps: $1/" \
    -e 's/^  checkpoint_every: .*/  checkpoint_every: 10/' -e 's/^  eval_every: .*/  eval_every: 0/' \
    -e 's/^  timeout_seconds: .*/  timeout_seconds: 30/' \
    "$TLS_CLUSTER_REPO/examples/gpt2-tiny-2x2.yaml" >"$OUT/job.yaml"
  cli submit "$OUT/job.yaml" -o json | jq -r .id
}
job_field() { cli status "$1" -o json 2>/dev/null | jq -r "$2"; }
worker_name_of() {
  local dir
  for dir in "$OUT"/w*/; do
    [[ -f $dir/worker-id && $(tr -d '[:space:]' <"$dir/worker-id") == "$1" ]] &&
      basename "$dir" && return 0
  done
  return 1
}
_job_past_step() { [[ $(job_field "$1" '.progress.step // 0') -ge $2 ]]; }
_job_ended() { [[ $(job_field "$1" .state) =~ ^JOB_STATE_(SUCCEEDED|FAILED|CANCELLED)$ ]]; }
tls_cluster_wait_step() { wait_for "${3:-300}" "step $2 of $1" _job_past_step "$1" "$2"; }
tls_cluster_wait_end() { wait_for "${2:-300}" "end of $1" _job_ended "$1"; }
# Fails unless the coordinator's log holds the fixed string.
expect_logged() { grep -qF -- "$1" "$OUT/coordinator.log" || fail "the coordinator's log lacks: $1"; }
