#!/usr/bin/env bash
# Attack: a planted data-plane peer. An attacker who can write a job's rendezvous publishes its
# own socket as rank 1 of the victim's groups (tests/security/fake_peer.py, in the attacker's
# namespace 10.77.99.1); the socket accepts TCP and then stays silent or sends garbage. Before
# issue 20 a rank with `--timeout 20` took 100 s to fail (Gloo waits 5 x its timeout for a
# connection). Now the victim, geotrain-run rank 0 in a namespace of its own, must exit 1 within
# its --timeout (plus slack: loading its stage, exiting) after the plant, naming rank 1 and the
# step; unbounded, the first case takes 5 x --timeout (40 s).
# Two cases, because Gloo decides by address which end connects:
#   waits:    victim 10.77.1.1 < 10.77.99.1: the victim waits for the fake to connect (it never
#             does): DEADLINE_EXCEEDED "cannot connect within ... connecting to rank 1 at
#             10.77.99.1:PORT".
#   connects: victim 10.77.100.1 > 10.77.99.1: the victim connects, the fake answers garbage and
#             nothing more: the first frame times out naming rank 1.
# Not the TLS cluster of tls_cluster.sh: geotrain-run has no coordinator; the rendezvous here is a
# file:// store both namespaces can reach, which the attacker writes (the coordinator's KV
# scoping, which keeps attackers out of a job's scope, is tested on its own).
# Exit 0 passed, 1 failed, 77 skipped (no root or network namespaces, no python3).
#   bash tests/security/fake_peer_test.sh BUILD_DIR
set -euo pipefail

TEST_NAME=fake_peer_test
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
BIN=$BUILD/bin
[[ -x $BIN/geotrain-run ]] || { echo "$TEST_NAME: $BIN/geotrain-run is not built" >&2; exit 1; }
command -v python3 >/dev/null || { echo "$TEST_NAME: SKIP: python3 is missing"; exit 77; }

# shellcheck source=scripts/wan/netns.sh
source "$REPO/scripts/wan/netns.sh"
if ! wan_probe; then
  echo "$TEST_NAME: SKIP: no network namespaces here: $WAN_PROBE_ERROR"
  exit 77
fi

TIMEOUT=${FAKE_PEER_TIMEOUT:-8}  # the victim's --timeout, seconds
SLACK=15  # for the rank to load its stage after the plant and to exit, on a loaded 2-core machine

OUT=$(mktemp -d /tmp/geotrain-fake-peer.XXXXXX)
PIDS=()
cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wan_cleanup
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((rc == 0)) && [[ -z ${KEEP_LOGS:-} ]]; then rm -rf "$OUT"; else echo "$TEST_NAME: logs kept in $OUT" >&2; fi
}
wan_setup gtfakepeer
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "$TEST_NAME: FAIL: $*" >&2; exit 1; }

wan_add_node attacker 10.77.99.1
wan_add_node low 10.77.1.1
wan_add_node high 10.77.100.1

# The example job, with its caches and checkpoints under $OUT.
sed -e "s|runs/gpt2-tiny-2x2|$OUT/job|" "$REPO/examples/gpt2-tiny-2x2.yaml" >"$OUT/job.yaml"

# run_case NAME NODE ADDRESS MODE EXPECTED_TEXT
run_case() {
  local name=$1 node=$2 address=$3 mode=$4 expected=$5
  local store=$OUT/$name.rdzv planted=$OUT/$name.planted log=$OUT/$name.log
  wan_exec_prefix attacker
  "${WAN_EXEC[@]}" python3 "$REPO/tests/security/fake_peer.py" --listen 10.77.99.1 \
    --store "$store" --mode "$mode" --planted "$planted" >"$OUT/$name.attacker.log" 2>&1 &
  local attacker_pid=$!
  PIDS+=("$attacker_pid")
  local rc=0
  (cd "$REPO" && wan_exec "$node" env OMP_NUM_THREADS=1 "$BIN/geotrain-run" \
    --dist-url "file://$store" --world-size 4 --rank 0 --config "$OUT/job.yaml" \
    --bind-address "$address" --timeout "$TIMEOUT") >"$log" 2>&1 || rc=$?
  local ended
  ended=$(date +%s.%N)
  kill -KILL "$attacker_pid" 2>/dev/null || true
  [[ -s $planted ]] || fail "$name: the attacker never saw the victim publish an address"
  ((rc == 1)) || fail "$name: geotrain-run exited $rc, expected 1 (see $log)"
  grep -q "rank 1" "$log" || fail "$name: the error does not name rank 1 (see $log)"
  grep -q -- "$expected" "$log" || fail "$name: the error does not say \"$expected\" (see $log)"
  local seconds
  seconds=$(awk -v a="$(cut -d' ' -f1 "$planted")" -v b="$ended" 'BEGIN { printf "%.1f", b - a }')
  echo "$TEST_NAME: $name: failed ${seconds} s after the plant (--timeout $TIMEOUT):" \
    "$(grep -m1 -o 'DEADLINE_EXCEEDED.*\|DATA_LOSS.*\|UNAVAILABLE.*' "$log" | cut -c1-200)"
  awk -v s="$seconds" -v limit="$((TIMEOUT + SLACK))" 'BEGIN { exit !(s < limit) }' ||
    fail "$name: took ${seconds} s, more than --timeout $TIMEOUT + $SLACK s"
}

run_case waits low 10.77.1.1 silent "cannot connect within"
run_case connects high 10.77.100.1 garbage "timed out after"
echo "$TEST_NAME: PASS"
