#!/usr/bin/env bash
# Attack: stall the coordinator's /metrics from the attacker's namespace (issue 20: one idle
# connection held the old one-thread server for 4.5 s, 20 held it past Prometheus' 10 s scrape
# timeout). 40 idle connections, a slow-loris sending one request byte a second and a flood of
# 300 connections are opened, and scrapes meanwhile must each answer within 2 s; the
# coordinator's log must say it cut the silent connections. Exit 0 passed, 1 failed, 77 skipped.
#   bash tests/security/metrics_stall_test.sh BUILD_DIR
set -euo pipefail
# shellcheck source=tests/security/tls_cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/tls_cluster.sh"
tls_cluster_init metrics_stall "${1:-}"

METRICS=10.77.0.1:9400
COORDINATOR_METRICS_LISTEN=$METRICS tls_cluster_start_coordinator

# Prints the seconds one scrape took from the attacker's namespace (as Prometheus would scrape,
# from another host), or fails the test when it did not answer 200 within 10 s.
scrape_seconds() {
  attacker curl -sS -o /dev/null --max-time 10 -w '%{http_code} %{time_total}\n' \
    "http://$METRICS/metrics" | {
    read -r code seconds
    [[ $code == 200 ]] || fail "a scrape answered HTTP $code"
    echo "$seconds"
  }
}
_metrics_up() { attacker curl -sf -o /dev/null --max-time 2 "http://$METRICS/metrics"; }
wait_for 30 "metrics page on $METRICS" _metrics_up

# 40 idle connections, each reopened as soon as the server drops it, for 12 s.
attacker bash -c '
  for ((round = 0; round < 6; round++)); do
    fds=()
    for ((i = 0; i < 40; i++)); do exec {fd}<>/dev/tcp/'"${METRICS%:*}/${METRICS#*:}"' && fds+=("$fd"); done
    sleep 2
    for fd in "${fds[@]}"; do exec {fd}>&-; done
  done' 2>/dev/null &
PIDS+=($!)
# A slow-loris: one byte of a request a second.
attacker bash -c '
  exec 3<>/dev/tcp/'"${METRICS%:*}/${METRICS#*:}"'
  request="GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n"
  for ((i = 0; i < ${#request}; i++)); do printf %s "${request:i:1}" >&3 || exit 0; sleep 1; done
  echo "slow-loris: the server took the whole request" >&2' 2>"$OUT/loris.err" &
LORIS=$!
PIDS+=("$LORIS")
sleep 1

worst=0
for ((i = 0; i < 8; i++)); do
  seconds=$(scrape_seconds)
  echo "metrics_stall: scrape $i under attack: ${seconds} s"
  awk -v s="$seconds" 'BEGIN { exit !(s < 2) }' || fail "scrape $i took $seconds s under attack"
  worst=$(awk -v a="$worst" -v b="$seconds" 'BEGIN { print (b > a ? b : a) }')
  sleep 1
done

# A flood: 300 connections at once (more than the 128 the server keeps open).
attacker bash -c '
  for ((i = 0; i < 300; i++)); do exec {fd}<>/dev/tcp/'"${METRICS%:*}/${METRICS#*:}"' || true; done
  sleep 5' 2>/dev/null &
PIDS+=($!)
sleep 1
seconds=$(scrape_seconds)
echo "metrics_stall: scrape during a 300-connection flood: ${seconds} s"
awk -v s="$seconds" 'BEGIN { exit !(s < 2) }' || fail "a scrape took $seconds s during a flood"

wait "$LORIS" 2>/dev/null || true
if grep -q "took the whole request" "$OUT/loris.err"; then
  fail "the slow-loris was never cut off"
fi
wait_for 15 "the coordinator's log line about cut connections" \
  grep -q "closed [0-9]* connections that sent no complete request within" "$OUT/coordinator.log"
grep -m1 "closed [0-9]* connections that sent no complete request" "$OUT/coordinator.log"
echo "metrics_stall: worst scrape under attack ${worst} s"
pass
