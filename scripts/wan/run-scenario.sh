#!/usr/bin/env bash
# Runs one WAN scenario: an emulated multi-region network (netns.sh), a coordinator and one worker
# daemon per scenario worker each in its own namespace, one job submitted and followed to its end,
# with the scenario's link changes applied when the job reaches the given steps. Everything it
# starts is stopped and every namespace deleted however it ends (EXIT/INT/TERM traps).
#
#   bash scripts/wan/run-scenario.sh [--build-dir DIR] [--out DIR] [--quiet] SCENARIO_FILE
#
# Scenario files (scripts/wan/README.md "Scenarios"), one statement a line, `#` comments:
#   job PATH [KEY=VALUE ...]        the job YAML, relative to the repository root; each
#                                   KEY=VALUE sets a dotted key (data_parallel.codec.random_ratio=1)
#                                   to a YAML value in the copy submitted (OUT/job.yaml)
#   region NAME                     regions in order get 10.77.1.0/24, 10.77.2.0/24, ...
#   worker NAME REGION              a worker daemon (address 10.77.R.k)
#   link REGION REGION MBIT         both directions between two regions ("*": every pair);
#                                   0 = unlimited; inside a region links are never limited
#   delay REGION REGION MS          one-way delay, each direction (user space: delay.py)
#   at step N link REGION REGION MBIT   change a link once the job has completed step N
#   coordinator-flag FLAG [VALUE]   an extra flag for geotrain-coordinator
#   worker-flag FLAG [VALUE]        an extra flag for every geotrain-worker
#
# Results in --out DIR (default a new /tmp/geotrain-wan.XXXXXX): steps.json (`geotrain steps -o
# json`), job.json (the final `geotrain status -o json`), compression.jsonl (the job's adaptive
# compression settings each time they changed, with the step they were seen at), changes.jsonl
# (the link changes applied), links.json (`geotrain links -o json` at the end) and the daemons'
# logs. The last line on stdout is a JSON summary: scenario, state, steps, wall_seconds, out.
# Exit code: 0 when the job succeeded, 1 otherwise, 2 for a bad scenario, 77 when namespaces
# cannot be made here.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

BUILD_DIR=build
OUT=""
QUIET=false
SCENARIO=""
while (($# > 0)); do
  case $1 in
    --build-dir) BUILD_DIR=${2:-}; shift 2 || shift ;;
    --out) OUT=${2:-}; shift 2 || shift ;;
    --quiet) QUIET=true; shift ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "run-scenario: unknown flag '$1'" >&2; exit 2 ;;
    *) SCENARIO=$1; shift ;;
  esac
done
[[ -n $SCENARIO ]] || { echo "run-scenario: which scenario file?" >&2; exit 2; }
[[ -f $SCENARIO ]] || { echo "run-scenario: $SCENARIO: no such file" >&2; exit 2; }
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$REPO/$BUILD_DIR
BIN=$BUILD_DIR/bin
for program in geotrain geotrain-coordinator geotrain-worker; do
  [[ -x $BIN/$program ]] || { echo "run-scenario: $BIN/$program is missing" >&2; exit 2; }
done
say() { [[ $QUIET == true ]] || echo "wan: $*" >&2; }

# --- Reading the scenario ---
JOB_FILE=""
JOB_OVERRIDES=()
REGIONS=()
declare -A REGION_INDEX=()
WORKERS=()
declare -A WORKER_REGION=()
LINKS=()     # "A B MBIT"
DELAYS=()    # "A B MS"
CHANGES=()   # "STEP A B MBIT"
COORD_FLAGS=()
WORKER_FLAGS=()
bad() { echo "run-scenario: $SCENARIO line $line_number: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[0-9]+$ ]]; }
known_region() { [[ $1 == "*" || -n ${REGION_INDEX[$1]:-} ]]; }
line_number=0
while IFS= read -r raw || [[ -n $raw ]]; do
  line_number=$((line_number + 1))
  read -r -a words <<<"${raw%%#*}"
  ((${#words[@]} > 0)) || continue
  case ${words[0]} in
    job)
      ((${#words[@]} >= 2)) || bad "job PATH [KEY=VALUE ...]"
      JOB_FILE=${words[1]}
      JOB_OVERRIDES=("${words[@]:2}")
      for override in "${JOB_OVERRIDES[@]}"; do
        [[ $override =~ ^[A-Za-z_][A-Za-z0-9_.]*=.+$ ]] || bad "job override '$override' is not KEY=VALUE"
      done
      [[ -f $REPO/$JOB_FILE || -f $JOB_FILE ]] || bad "job file '$JOB_FILE' does not exist" ;;
    region)
      ((${#words[@]} == 2)) || bad "region NAME"
      [[ ${words[1]} =~ ^[A-Za-z0-9_-]+$ ]] || bad "region name '${words[1]}': letters, digits, _ and - only"
      [[ -z ${REGION_INDEX[${words[1]}]:-} ]] || bad "region ${words[1]} declared twice"
      REGIONS+=("${words[1]}")
      REGION_INDEX[${words[1]}]=${#REGIONS[@]} ;;
    worker)
      ((${#words[@]} == 3)) || bad "worker NAME REGION"
      [[ ${words[1]} =~ ^[A-Za-z0-9_-]+$ ]] || bad "worker name '${words[1]}': letters, digits, _ and - only"
      [[ -n ${REGION_INDEX[${words[2]}]:-} ]] || bad "worker ${words[1]}: unknown region '${words[2]}'"
      [[ -z ${WORKER_REGION[${words[1]}]:-} ]] || bad "worker ${words[1]} declared twice"
      WORKERS+=("${words[1]}")
      WORKER_REGION[${words[1]}]=${words[2]} ;;
    link | delay)
      ((${#words[@]} == 4)) || bad "${words[0]} REGION REGION VALUE"
      known_region "${words[1]}" || bad "unknown region '${words[1]}'"
      known_region "${words[2]}" || bad "unknown region '${words[2]}'"
      is_count "${words[3]}" || bad "${words[0]}: '${words[3]}' is not a whole number"
      if [[ ${words[0]} == link ]]; then LINKS+=("${words[*]:1}"); else DELAYS+=("${words[*]:1}"); fi ;;
    at)
      ((${#words[@]} == 7)) && [[ ${words[1]} == step && ${words[3]} == link ]] ||
        bad "at step N link REGION REGION MBIT"
      is_count "${words[2]}" || bad "at step: '${words[2]}' is not a whole number"
      known_region "${words[4]}" || bad "unknown region '${words[4]}'"
      known_region "${words[5]}" || bad "unknown region '${words[5]}'"
      is_count "${words[6]}" && ((words[6] > 0)) || bad "at step: rate '${words[6]}' is not a positive whole number"
      CHANGES+=("${words[2]} ${words[4]} ${words[5]} ${words[6]}") ;;
    coordinator-flag) ((${#words[@]} >= 2)) || bad "coordinator-flag FLAG [VALUE]"; COORD_FLAGS+=("${words[@]:1}") ;;
    worker-flag) ((${#words[@]} >= 2)) || bad "worker-flag FLAG [VALUE]"; WORKER_FLAGS+=("${words[@]:1}") ;;
    *) bad "unknown statement '${words[0]}'" ;;
  esac
done <"$SCENARIO"
[[ -n $JOB_FILE ]] || { echo "run-scenario: $SCENARIO: no job line" >&2; exit 2; }
((${#WORKERS[@]} > 0)) || { echo "run-scenario: $SCENARIO: no workers" >&2; exit 2; }
[[ -f $JOB_FILE ]] || JOB_FILE=$REPO/$JOB_FILE
SCENARIO_NAME=$(basename "$SCENARIO" .scn)

# Every (A, B) pair of distinct regions a link statement names, "*" expanded.
region_pairs() {
  local a=$1 b=$2 x y
  for x in "${REGIONS[@]}"; do
    for y in "${REGIONS[@]}"; do
      [[ $x == "$y" ]] && continue
      [[ ($a == "*" || $a == "$x") && ($b == "*" || $b == "$y") ]] ||
        [[ ($a == "*" || $a == "$y") && ($b == "*" || $b == "$x") ]] || continue
      echo "$x $y"
    done
  done
}
subnet() { echo "10.77.${REGION_INDEX[$1]}.0/24"; }

# --- The network ---
source "$REPO/scripts/wan/netns.sh"
wan_probe || { echo "run-scenario: no namespaces here: $WAN_PROBE_ERROR" >&2; exit 77; }
[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/geotrain-wan.XXXXXX)
mkdir -p "$OUT"
if ((${#JOB_OVERRIDES[@]} > 0)); then
  python3 - "$JOB_FILE" "$OUT/job.yaml" "${JOB_OVERRIDES[@]}" <<'PY' || exit 2
import sys, yaml
source, out, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
job = yaml.safe_load(open(source))
for override in overrides:
    key, value = override.split("=", 1)
    node, *path = [job] + key.split(".")
    for part in path[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            sys.exit(f"run-scenario: job override '{override}': '{part}' is not a mapping")
    node[path[-1]] = yaml.safe_load(value)
yaml.safe_dump(job, open(out, "w"), sort_keys=False)
PY
  JOB_FILE=$OUT/job.yaml
fi
PIDS=()
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
  wan_cleanup
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wan_setup "gtscn-$$" >/dev/null
wan_add_node coord 10.77.0.1
declare -A WORKER_ADDR=()
declare -A REGION_COUNT=()
for worker in "${WORKERS[@]}"; do
  region=${WORKER_REGION[$worker]}
  REGION_COUNT[$region]=$((${REGION_COUNT[$region]:-0} + 1))
  WORKER_ADDR[$worker]=10.77.${REGION_INDEX[$region]}.${REGION_COUNT[$region]}
  wan_add_node "$worker" "${WORKER_ADDR[$worker]}"
done
# The rate of every region pair: the last link statement naming it wins.
declare -A RATE=()
for link in "${LINKS[@]}"; do
  read -r a b mbit <<<"$link"
  while read -r x y; do RATE[$x,$y]=$mbit; done < <(region_pairs "$a" "$b")
done
# Limits exist from the start for every pair a change will touch, so a change is a tbf change.
for change in "${CHANGES[@]}"; do
  read -r _ a b _ <<<"$change"
  while read -r x y; do [[ -n ${RATE[$x,$y]:-} && ${RATE[$x,$y]} != 0 ]] || RATE[$x,$y]=100000; done \
    < <(region_pairs "$a" "$b")
done
for worker in "${WORKERS[@]}"; do
  for region in "${REGIONS[@]}"; do
    mbit=${RATE[${WORKER_REGION[$worker]},$region]:-0}
    ((mbit > 0)) && wan_limit "$worker" "$(subnet "$region")" "$mbit"
  done
done
for delay in "${DELAYS[@]}"; do
  read -r a b ms <<<"$delay"
  ((ms > 0)) || continue
  while read -r x y; do
    for worker in "${WORKERS[@]}"; do
      [[ ${WORKER_REGION[$worker]} == "$x" ]] && wan_delay "$worker" "$(subnet "$y")" "$ms"
    done
  done < <(region_pairs "$a" "$b")
done
say "network: ${#REGIONS[@]} regions, ${#WORKERS[@]} workers (namespaces $WAN_PREFIX-*)"

# --- The daemons ---
# TLS, worker certificates and tokens, as a real deployment (docs/security.md).
CERTS=$OUT/certs
"$BIN/geotrain" certs init --dir "$CERTS" --hosts 10.77.0.1 >"$OUT/certs.out" ||
  { echo "run-scenario: geotrain certs init failed" >&2; exit 1; }
for worker in "${WORKERS[@]}"; do  # each worker its own certificate
  "$BIN/geotrain" certs add-worker --dir "$CERTS" --name "$worker" >>"$OUT/certs.out" ||
    { echo "run-scenario: geotrain certs add-worker failed" >&2; exit 1; }
done
wan_exec_prefix coord
"${WAN_EXEC[@]}" "$BIN/geotrain-coordinator" --listen 10.77.0.1:7070 --state-dir "$OUT/state" \
  --metrics-listen "" --tls-cert "$CERTS/coordinator.pem" --tls-key "$CERTS/coordinator.key" \
  --tls-ca "$CERTS/ca.pem" --join-token-file "$CERTS/join.token" \
  --admin-token-file "$CERTS/admin.token" \
  "${COORD_FLAGS[@]}" >"$OUT/coordinator.out" 2>"$OUT/coordinator.log" &
PIDS+=($!)
export GEOTRAIN_COORDINATOR=10.77.0.1:7070
export GEOTRAIN_TLS_CA=$CERTS/ca.pem GEOTRAIN_ADMIN_TOKEN_FILE=$CERTS/admin.token
cli() { wan_exec coord "$BIN/geotrain" "$@"; }
for worker in "${WORKERS[@]}"; do
  wan_exec_prefix "$worker"
  "${WAN_EXEC[@]}" "$BIN/geotrain-worker" --coordinator 10.77.0.1:7070 \
    --advertise "${WORKER_ADDR[$worker]}" --region "${WORKER_REGION[$worker]}" \
    --work-dir "$OUT/$worker" --data-root "$REPO" --threads 1 --metrics-listen "" \
    --tls-ca "$CERTS/ca.pem" --tls-cert "$CERTS/worker-$worker.pem" \
    --tls-key "$CERTS/worker-$worker.key" \
    --join-token-file "$CERTS/join.token" \
    "${WORKER_FLAGS[@]}" >"$OUT/$worker.out" 2>"$OUT/$worker.log" &
  PIDS+=($!)
done
deadline=$(($(date +%s) + 90))
until [[ $(cli workers 2>/dev/null | grep -cw idle || true) -ge ${#WORKERS[@]} ]]; do
  (($(date +%s) < deadline)) || { echo "run-scenario: workers did not register in 90 s; logs in $OUT" >&2; exit 1; }
  sleep 0.5
done

# --- The job, with the link changes at their steps ---
START=$(date +%s.%N)
JOB_ID=$(cli submit "$JOB_FILE" -o json | jq -r .id)
say "submitted $JOB_ID ($(basename "$JOB_FILE")); out: $OUT"
: >"$OUT/compression.jsonl"
: >"$OUT/changes.jsonl"
last_compression=""
state=""
while true; do
  job=$(cli status "$JOB_ID" -o json 2>/dev/null) || { sleep 1; continue; }
  state=$(jq -r .state <<<"$job")
  step=$(jq -r '.progress.step // 0' <<<"$job")
  compression=$(jq -c '.compression // []' <<<"$job")
  if [[ $compression != "$last_compression" ]]; then
    jq -c --argjson step "$step" '{step: $step, unix_ms: (now * 1000 | floor), compression: (.compression // [])}' \
      <<<"$job" >>"$OUT/compression.jsonl"
    last_compression=$compression
  fi
  remaining=()
  for change in "${CHANGES[@]}"; do
    read -r at a b mbit <<<"$change"
    if ((step >= at)); then
      while read -r x y; do
        for worker in "${WORKERS[@]}"; do
          [[ ${WORKER_REGION[$worker]} == "$x" ]] && wan_set_rate "$worker" "$(subnet "$y")" "$mbit"
        done
      done < <(region_pairs "$a" "$b")
      echo "{\"step\": $step, \"at_step\": $at, \"link\": [\"$a\", \"$b\"], \"mbit\": $mbit}" >>"$OUT/changes.jsonl"
      say "step $step: link $a <-> $b now $mbit Mbit/s"
    else
      remaining+=("$change")
    fi
  done
  CHANGES=("${remaining[@]}")
  case $state in
    JOB_STATE_SUCCEEDED | JOB_STATE_FAILED | JOB_STATE_CANCELLED) break ;;
  esac
  sleep 0.5
done
WALL=$(echo "$(date +%s.%N) - $START" | bc)
cli status "$JOB_ID" -o json >"$OUT/job.json"
cli steps "$JOB_ID" -o json >"$OUT/steps.json"
cli links -o json >"$OUT/links.json" 2>/dev/null || true
steps=$(jq -r '.progress.step' "$OUT/job.json")
echo "{\"scenario\": \"$SCENARIO_NAME\", \"state\": \"$state\", \"steps\": $steps, \"wall_seconds\": $WALL, \"out\": \"$OUT\"}"
[[ $state == JOB_STATE_SUCCEEDED ]]
