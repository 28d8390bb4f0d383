#!/usr/bin/env bash
# Attack: a job spec that names files outside the worker's --data-root, or an output that would
# replace a file the job did not create (issue 20; docs/security.md, "files on the worker").
#
# On the TLS cluster of tls_cluster.sh (one worker, its --data-root a directory of its own that
# holds a copy of the tiny model, tokenizer and corpus), submits jobs whose
#   data.train is an absolute path outside the root,        data.train climbs out with ../,
#   data.train goes through a symlink inside the root to a file outside it,
#   training.checkpoint_dir lies outside the root,          data.cache_dir lies outside it,
#   training.profile lies outside the root,
# and expects each job FAILED with the reason (the field, the path, "outside the data root") in
# `geotrain status`, `geotrain logs`, the worker's log and the coordinator's log. Then a job
# whose training.profile names an existing file inside the root: it trains, and its trace goes
# to a new file while the existing one keeps its bytes. Throughout, the files outside the root
# keep their checksums and mtimes, and nothing new appears there.
#
#   tests/security/confined_paths_test.sh [BUILD_DIR]   (root; exit 77 without namespaces)
# shellcheck source=tests/security/tls_cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/tls_cluster.sh"

tls_cluster_init confined_paths "${1:-}"
REPO=$TLS_CLUSTER_REPO
ROOT=$OUT/root
OUTSIDE=$OUT/outside
mkdir -p "$ROOT/models" "$ROOT/tokenizers" "$ROOT/data" "$OUTSIDE"
cp -r "$REPO/examples/models/gpt2-tiny" "$ROOT/models/"
cp -r "$REPO/examples/tokenizers/gpt2" "$ROOT/tokenizers/"
head -c 200000 "$REPO/examples/data/shakespeare/train.txt" >"$ROOT/data/train.txt"
echo "the operator's secret" >"$OUTSIDE/secret.txt"
echo '{"precious": true}' >"$ROOT/precious.json"
ln -s "$OUTSIDE" "$ROOT/escape"

# What lies outside the root (and the precious file inside it), before any job.
snapshot() {
  (cd "$OUT" && find outside root/precious.json -printf '%p %s %T@\n' | sort &&
    find outside root/precious.json -type f -exec sha256sum {} + | sort)
}
BEFORE=$(snapshot)

export TLS_CLUSTER_DATA_ROOT=$ROOT  # the workers' --data-root (tls_cluster.sh)
tls_cluster_start_coordinator
tls_cluster_start_workers 1
tls_cluster_wait_idle 1

# job_yaml NAME DATA TRAINING: a one-rank job on the root's copies, its data: and training:
# sections given whole (flow mappings).
job_yaml() {
  local name=$1 data=$2 training=$3
  cat <<YAML
name: $name
model: {dir: models/gpt2-tiny, init_seed: 1}
data: $data
training: $training
YAML
}
DATA='{train: [data/train.txt], tokenizer: tokenizers/gpt2, seq_length: 32}'
TRAINING='{steps: 2, max_restarts: 0, timeout_seconds: 30}'

submit() {  # submit NAME DATA TRAINING: prints the job id
  job_yaml "$1" "$2" "$3" >"$OUT/$1.yaml"
  cli submit "$OUT/$1.yaml" -o json | jq -r .id
}
state() { cli status "$1" -o json 2>/dev/null | jq -r .state; }
ended() { [[ $(state "$1") =~ ^JOB_STATE_(SUCCEEDED|FAILED|CANCELLED)$ ]]; }

# refused NAME FIELD DATA TRAINING: the job fails, and every place an operator looks names FIELD
# and the reason.
refused() {
  local name=$1 field=$2 id
  id=$(submit "$name" "$3" "$4")
  [[ -n $id && $id != null ]] || fail "$name: submit gave no job id"
  wait_for 120 "end of $name ($id)" ended "$id"
  [[ $(state "$id") == JOB_STATE_FAILED ]] || fail "$name: $id ended $(state "$id"), not FAILED"
  local status logs
  status=$(cli status "$id" -o json)
  logs=$(cli logs "$id" 2>&1 || true)
  local where
  for where in status logs worker coordinator; do
    local text
    case $where in
      status) text=$status ;;
      logs) text=$logs ;;
      worker) text=$(cat "$OUT/w1.log") ;;
      coordinator) text=$(cat "$OUT/coordinator.log") ;;
    esac
    grep -q -- "$field: .*outside the data root" <<<"$text" ||
      fail "$name: the $where output does not name '$field: ... outside the data root'"
  done
  echo "confined_paths: $name refused: $(grep -o -m1 -- "$field: [^\"]*" <<<"$status" | head -1)"
}

refused absolute-data data.train\\[0\\] \
  "{train: [$OUTSIDE/secret.txt], tokenizer: tokenizers/gpt2, seq_length: 32}" "$TRAINING"
refused dotdot-data data.train\\[0\\] \
  '{train: [../outside/secret.txt], tokenizer: tokenizers/gpt2, seq_length: 32}' "$TRAINING"
refused symlink-data data.train\\[0\\] \
  '{train: [escape/secret.txt], tokenizer: tokenizers/gpt2, seq_length: 32}' "$TRAINING"
refused outside-checkpoints training.checkpoint_dir "$DATA" \
  "{steps: 2, max_restarts: 0, timeout_seconds: 30, checkpoint_every: 1, checkpoint_dir: $OUTSIDE/ckpt}"
refused symlink-checkpoints training.checkpoint_dir "$DATA" \
  '{steps: 2, max_restarts: 0, timeout_seconds: 30, checkpoint_every: 1, checkpoint_dir: escape/ckpt}'
refused outside-cache data.cache_dir \
  '{train: [data/train.txt], tokenizer: tokenizers/gpt2, seq_length: 32, cache_dir: ../outside/cache}' \
  "$TRAINING"
refused outside-profile training.profile "$DATA" \
  "{steps: 2, max_restarts: 0, timeout_seconds: 30, profile: $OUTSIDE/trace.json}"

# An existing file as the profile: the job trains, the file keeps its bytes, the trace goes to
# precious.json.1 and the job's logs say so.
id=$(submit existing-profile "$DATA" '{steps: 2, max_restarts: 0, timeout_seconds: 30, profile: precious.json}')
wait_for 300 "end of existing-profile ($id)" ended "$id"
[[ $(state "$id") == JOB_STATE_SUCCEEDED ]] ||
  fail "existing-profile: $id ended $(state "$id") (a job inside the root must still train)"
# The task's log lines reach the coordinator in batches, possibly after the job's end.
profile_kept_logged() {
  cli logs "$1" 2>&1 | grep -q "training.profile: .*precious.json exists and is not replaced"
}
wait_for 30 "line in the job's logs saying the existing profile was kept" profile_kept_logged "$id"
jq -e '.traceEvents | length > 0' "$ROOT/precious.json.1" >/dev/null ||
  fail "existing-profile: no trace in precious.json.1"
echo "confined_paths: existing-profile kept precious.json; the trace went to precious.json.1"

AFTER=$(snapshot)
[[ $BEFORE == "$AFTER" ]] ||
  fail "files outside the root (or precious.json) changed: $(diff <(echo "$BEFORE") <(echo "$AFTER"))"
echo "confined_paths: nothing outside the data root was created or changed"
pass
