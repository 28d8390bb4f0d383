#!/usr/bin/env bash
# The WAN benchmark: the 2 stages x 2 replicas gpt2-wan job (examples/wan/gpt2-wan-2x2.yaml) on an
# emulated WAN (scripts/wan/run-scenario.sh: one worker per region, every link between them at
# the given rate in both directions), for each bandwidth x compression setting. One JSON line per
# run on stdout:
#
#   {"bench": "wan", "bandwidth_mbit": 50, "setting": "adaptive", "step_seconds": ...,
#    "ratio_to_unlimited": ..., "ratio_to_unlimited_none": ..., "wire_bytes_per_step": ...,
#    "raw_bytes_per_step": ..., "final_loss": ..., "loss_vs_none": ..., "steps": ..., ...}
#
# bandwidth_mbit 0 is unlimited. The emulated links run at bandwidth_mbit x --bandwidth-scale
# (default 0.2, reported as emulated_mbit): this CPU computes a step about as many times slower
# than a GPU as it must, so that, as on real GPUs, uncompressed communication takes at least 3x
# the compute at the lowest bandwidth (the `none` line there reports comm_over_compute). The
# issue's bandwidths are nominal figures of that GPU world. step_seconds is the median over the steps after the compression
# warm-up (+2); ratio_to_unlimited divides it by the same setting's unlimited-bandwidth figure,
# ratio_to_unlimited_none by the uncompressed setting's. final_loss is the evaluation loss at the
# last step; loss_vs_none is its ratio to the uncompressed run's at the same bandwidth. The
# unlimited runs of a setting come first, so every ratio is measured in the same invocation.
#
#   bash bench/wan.sh [--build-dir DIR] [--bandwidths "0 1000 200 50"]
#                     [--settings "none fixpoint8 delta4-fixpoint8-cocktail tah adaptive"]
#                     [--steps N] [--bandwidth-scale F] [--out DIR]
#   bash bench/wan.sh --scenario link-drop [--build-dir DIR] [--out DIR]
#
# --scenario link-drop runs scripts/wan/scenarios/link-drop.scn (adaptive; one link drops from
# 1 Gbit/s to 50 Mbit/s and comes back) and prints one JSON line with the step times before,
# during and after the drop and the bits of every rank's sends over the run.
# Needs root and network namespaces (exit 77 otherwise). Takes about 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

BUILD_DIR=build
BANDWIDTHS="0 1000 200 50"
BANDWIDTH_SCALE=0.2
SETTINGS="none fixpoint8 delta4-fixpoint8-cocktail tah adaptive"
STEPS=20
OUT=""
SCENARIO=""
while (($# > 0)); do
  case $1 in
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --bandwidths) BANDWIDTHS=$2; shift 2 ;;
    --settings) SETTINGS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --bandwidth-scale) BANDWIDTH_SCALE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --scenario) SCENARIO=$2; shift 2 ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "wan.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ $STEPS =~ ^[1-9][0-9]*$ ]] || { echo "wan.sh: --steps: '$STEPS' is not a positive whole number" >&2; exit 2; }
for bandwidth in $BANDWIDTHS; do
  [[ $bandwidth =~ ^[0-9]+$ ]] || { echo "wan.sh: --bandwidths: '$bandwidth' is not a whole number of Mbit/s" >&2; exit 2; }
done
[[ $BANDWIDTH_SCALE =~ ^[0-9]*\.?[0-9]+$ ]] && python3 -c "import sys; sys.exit(not 0 < $BANDWIDTH_SCALE <= 1)" ||
  { echo "wan.sh: --bandwidth-scale: '$BANDWIDTH_SCALE' is not a number in (0, 1]" >&2; exit 2; }
# The emulated rate of a nominal bandwidth (tbf takes whole Mbit/s; 0 stays unlimited).
emulated() { python3 -c "print(0 if $1 == 0 else max(1, round($1 * $BANDWIDTH_SCALE)))"; }
[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/geotrain-wan-bench.XXXXXX)
mkdir -p "$OUT"
echo "wan.sh: results and logs in $OUT" >&2

if [[ -n $SCENARIO ]]; then
  file=$REPO/scripts/wan/scenarios/$SCENARIO.scn
  [[ -f $file ]] || { echo "wan.sh: --scenario: no $file" >&2; exit 2; }
  rc=0
  bash "$REPO/scripts/wan/run-scenario.sh" --build-dir "$BUILD_DIR" --out "$OUT/$SCENARIO" \
    "$file" >"$OUT/$SCENARIO.summary" || rc=$?
  ((rc != 77)) || exit 77
  python3 "$REPO/bench/wan_report.py" scenario "$OUT/$SCENARIO" "$file"
  exit "$rc"
fi

# The job of one setting: the example with its data_parallel and compression sections replaced.
write_job() {
  local setting=$1 path=$2
  python3 - "$REPO/examples/wan/gpt2-wan-2x2.yaml" "$setting" "$STEPS" "$path" <<'PY'
import sys, yaml
source, setting, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
job = yaml.safe_load(open(source))
cocktail = {"mode": "cocktail", "overlap": True,
            "codec": {"codec": "cocktail", "random_ratio": 0.1, "topk_ratio": 0.2, "quant_bits": 4}}
allreduce = {"mode": "allreduce"}
fix8 = {"codec": "fixpoint", "bits": 8}
settings = {
    "none": (allreduce, {"codec": "none"}, {"codec": "none"}, None),
    "fixpoint8": (allreduce, fix8, fix8, None),
    "delta4-fixpoint8-cocktail": (cocktail, {"codec": "delta", "bits": 4}, fix8, None),
    "tah": (cocktail, {"codec": "tah", "high_bits": 4, "low_bits": 3}, fix8, None),
    "adaptive": (job["data_parallel"], job["compression"]["forward"],
                 job["compression"]["backward"], job["compression"]["adaptive"]),
}
if setting not in settings:
    sys.exit(f"wan.sh: unknown setting '{setting}' (known: {', '.join(settings)})")
dp, forward, backward, adaptive = settings[setting]
job["name"] = f"wan-{setting}"
job["data_parallel"] = {"replicas": job["data_parallel"]["replicas"], **dp}
job["compression"] = {"forward": forward, "backward": backward,
                      "warmup_steps": 0 if setting == "none" else job["compression"]["warmup_steps"]}
if adaptive:
    job["compression"]["adaptive"] = adaptive
job["training"]["steps"] = steps
job["training"]["eval_every"] = steps
job["data"]["cache_dir"] = f"/tmp/geotrain-wan-bench-tokens"
yaml.safe_dump(job, open(out, "w"), sort_keys=False)
PY
}

# Four regions of one worker each, every link between them at the bandwidth (0: unlimited).
write_scenario() {
  local job=$1 bandwidth=$2 path=$3 i
  {
    echo "job $job"
    for i in 1 2 3 4; do echo "region r$i"; done
    for i in 1 2 3 4; do echo "worker w$i r$i"; done
    echo "link * * $bandwidth"
  } >"$path"
}

# Lines already in --out DIR's results.jsonl are kept (the ratios read them), so an interrupted
# run goes on with the same --out and the bandwidths and settings it had not done.
RESULTS=$OUT/results.jsonl
touch "$RESULTS"
for bandwidth in $BANDWIDTHS; do
  for setting in $SETTINGS; do
    run=$OUT/$setting-$bandwidth
    mkdir -p "$run"
    write_job "$setting" "$run/job.yaml"
    emulated_mbit=$(emulated "$bandwidth")
    write_scenario "$run/job.yaml" "$emulated_mbit" "$run/scenario.scn"
    echo "wan.sh: $setting at $bandwidth Mbit/s (emulated $emulated_mbit)" >&2
    rc=0
    bash "$REPO/scripts/wan/run-scenario.sh" --quiet --build-dir "$BUILD_DIR" --out "$run/out" \
      "$run/scenario.scn" >"$run/summary.json" || rc=$?
    ((rc != 77)) || exit 77
    python3 "$REPO/bench/wan_report.py" run "$run" "$setting" "$bandwidth" "$emulated_mbit" "$RESULTS" |
      tee -a "$RESULTS"
  done
done
