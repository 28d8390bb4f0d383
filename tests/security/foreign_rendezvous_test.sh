#!/usr/bin/env bash
# Attack: a worker not placed in a job reads, writes and deletes keys of that job's live
# rendezvous scope, of its next generation, and of a job not submitted yet (issue 20: ids are
# sequential, so job-N+1 could be poisoned before it existed). With rendezvous scoped to the
# caller (docs/security.md) every such call is PERMISSION_DENIED naming the scope and logged, a
# placed worker's identity cannot touch another generation either, and the job finishes.
# Exit 0 passed, 1 failed, 77 skipped.
#   bash tests/security/foreign_rendezvous_test.sh BUILD_DIR
set -euo pipefail
# shellcheck source=tests/security/tls_cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/tls_cluster.sh"
tls_cluster_init foreign_rendezvous "${1:-}"
tls_cluster_start_coordinator
tls_cluster_start_workers 5
tls_cluster_wait_idle 5
JOB=$(tls_cluster_submit_tiny 40)
tls_cluster_wait_step "$JOB" 3
generation=$(job_field "$JOB" .generation)
placed_ids=$(job_field "$JOB" '.placements[].worker_id')
outsider=""
placed=""
for i in 1 2 3 4 5; do
  id=$(tr -d '[:space:]' <"$OUT/w$i/worker-id")
  if grep -qx "$id" <<<"$placed_ids"; then placed=w$i; else outsider=w$i; fi
done
[[ -n $outsider && -n $placed ]] || fail "no idle worker beside the job's four"
next_job="job-$((${JOB#job-} + 1))"
echo "foreign_rendezvous: $JOB generation $generation; outsider $outsider, placed $placed"

refused() {  # refused WHO JOB GENERATION CMD ARGS...: the call must be refused for that scope
  local who=$1 job=$2 gen=$3 cmd=$4 out
  shift 4
  out=$(attack_as "$who" "$cmd" "$job" "$gen" "$@" || true)
  echo "foreign_rendezvous: $who $cmd $job/$gen: $out"
  [[ $out == "REFUSED PERMISSION_DENIED: rendezvous scope job '$job' generation $gen: worker identity '$who' holds no live rank"* ]] ||
    fail "$who $cmd on $job generation $gen was not refused: $out"
  expect_logged "refused rendezvous call on job '$job' generation $gen: worker identity '$who' holds no live rank there"
}
# The scope is open to its own ranks' identity: the refusals below are not blanket ones.
out=$(attack_as "$placed" kv-numkeys "$JOB" "$generation" || true)
[[ $out == "OK "*" keys" ]] || fail "$placed (placed in $JOB) cannot read its own scope: $out"
refused "$outsider" "$JOB" "$generation" kv-numkeys
refused "$outsider" "$JOB" "$generation" kv-get 0
refused "$outsider" "$JOB" "$generation" kv-set 0 poisoned
refused "$outsider" "$JOB" "$generation" kv-delete 0
refused "$outsider" "$JOB" $((generation + 1)) kv-set 0 poisoned
refused "$outsider" "$next_job" 1 kv-set 0 poisoned
refused "$placed" "$JOB" $((generation + 1)) kv-set 0 poisoned
refused "$placed" "$next_job" 1 kv-set 0 poisoned

tls_cluster_wait_end "$JOB"
state=$(job_field "$JOB" .state)
[[ $state == JOB_STATE_SUCCEEDED ]] || fail "$JOB ended $state: $(job_field "$JOB" .message)"
[[ $(job_field "$JOB" .generation) == "$generation" ]] || fail "$JOB was re-placed"
# Its scope went with it: even its own workers cannot reach it now.
refused "$placed" "$JOB" "$generation" kv-numkeys
pass
