#!/usr/bin/env bash
# Attack: a client holding worker credentials claims another worker's id while a job runs on it
# (issue 20: the shared worker certificate let an impostor take w-2's session, its Assignments
# and frame key, and fail the job). With per-worker identities (docs/security.md):
#   - another enrolled worker's certificate (w9) claiming the victim's id: Register and Session
#     refused with PERMISSION_DENIED, no Assignment received;
#   - the victim's own identity (its key stolen) cannot take over the live session either;
#   - a certificate of the CA without worker identity (an old shared worker.pem) is refused;
#   - the real worker keeps its session and the job finishes in the same generation.
# Each refusal is checked in the coordinator's log. Exit 0 passed, 1 failed, 77 skipped.
#   bash tests/security/claim_worker_id_test.sh BUILD_DIR
set -euo pipefail
# shellcheck source=tests/security/tls_cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/tls_cluster.sh"
tls_cluster_init claim_worker_id "${1:-}"
tls_cluster_start_coordinator
tls_cluster_start_workers 4
tls_cluster_wait_idle 4
JOB=$(tls_cluster_submit_tiny 40)
tls_cluster_wait_step "$JOB" 3
generation=$(job_field "$JOB" .generation)
victim_id=$(job_field "$JOB" '.placements[] | select(.stage == 1 and .replica == 0) | .worker_id')
victim=$(worker_name_of "$victim_id") || fail "no worker holds id $victim_id"
echo "claim_worker_id: $JOB runs generation $generation; victim $victim ($victim_id)"

out=$(attack_as w9 register "$victim_id" || true)
echo "claim_worker_id: Register as $victim_id with w9's certificate: $out"
[[ $out == "REFUSED PERMISSION_DENIED: Register: worker $victim_id is bound to another identity"* ]] ||
  fail "Register claiming $victim_id with another identity: $out"
expect_logged "refused Register of worker $victim_id: it is bound to worker identity '$victim', the caller has worker identity 'w9'"

out=$(attack_as w9 session "$victim_id" 3 || true)
echo "claim_worker_id: Session as $victim_id with w9's certificate: $out"
[[ $out == *"REFUSED PERMISSION_DENIED: Session: worker $victim_id is bound to another identity"* ]] ||
  fail "Session claiming $victim_id with another identity: $out"
[[ $out != *ASSIGNMENT* ]] || fail "the impostor received an Assignment: $out"
expect_logged "refused Session of worker $victim_id: it is bound to worker identity '$victim', the caller has worker identity 'w9'"

out=$(attack_as "$victim" session "$victim_id" 3 || true)
echo "claim_worker_id: a second Session with $victim's own certificate: $out"
[[ $out == *"REFUSED FAILED_PRECONDITION: Session: worker $victim_id already has a live session"* ]] ||
  fail "a second live session for $victim_id: $out"
[[ $out != *ASSIGNMENT* ]] || fail "the second session received an Assignment: $out"
expect_logged "refused Session of worker $victim_id (worker identity '$victim'): its session"

# An old shared worker certificate: signed by the CA, clientAuth, no worker identity.
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=geotrain-worker \
  -keyout "$CERTS/shared.key" -out "$OUT/shared.csr" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\nsubjectAltName=DNS:geotrain-worker\n' >"$OUT/shared.ext"
openssl x509 -req -in "$OUT/shared.csr" -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca.key" \
  -CAcreateserial -days 1 -extfile "$OUT/shared.ext" -out "$CERTS/shared.pem" 2>/dev/null
out=$(attacker "$BIN/attack_client" --coordinator "$COORDINATOR_ADDR" --ca "$CERTS/ca.pem" \
  --cert "$CERTS/shared.pem" --key "$CERTS/shared.key" --token "$CERTS/join.token" \
  register "$victim_id" || true)
echo "claim_worker_id: Register with a shared certificate without identity: $out"
[[ $out == "REFUSED PERMISSION_DENIED: the worker certificate carries no worker identity"* ]] ||
  fail "a certificate without identity: $out"
expect_logged "refused /geotrain.v1.Coordinator/Register: worker certificate sha256:"

# The real worker never lost its session; the job finishes without a new generation.
if grep -q "worker $victim_id: a new session replaces\|worker $victim_id disconnected" \
  "$OUT/coordinator.log"; then
  fail "worker $victim_id lost its session during the attack"
fi
tls_cluster_wait_end "$JOB"
state=$(job_field "$JOB" .state)
[[ $state == JOB_STATE_SUCCEEDED ]] || fail "$JOB ended $state: $(job_field "$JOB" .message)"
[[ $(job_field "$JOB" .generation) == "$generation" ]] ||
  fail "$JOB was re-placed (generation $(job_field "$JOB" .generation), was $generation)"
pass
