#!/usr/bin/env bash
# The GPU checks of issue 10 in one run, on a machine the device tool lends (docs/gpu.md):
#   1. build       scripts/gpu/build.sh build (needs .gpu-deps, named in the tool's `carry`)
#   2. tests       ctest -L gpu: the CUDA codecs against the CPU codecs byte for byte, the stages
#                  on the GPU against the CPU
#   3. codecs      geotrain-bench codecs --device cuda: each kernel's GB/s next to the
#                  device-to-device copy bandwidth of the same run
#   4. pipeline    GPT-2 small (124M, random weights) in 2 stages x 2 replicas on the one GPU,
#                  compressed (delta 4 / fixpoint 8 / CocktailSGD) and uncompressed, every link
#                  paced at --mbit (200) by geotrain-run --emulate-link-mbit: tokens/s of each
#
#   bash scripts/gpu/check.sh [--out DIR] [--build-dir DIR] [--only "build tests codecs pipeline"]
#                             [--steps N] [--mbit R] [--dry-run-cpu]
#
# Results go to --out (default: $OUT, the device tool's folder, else /tmp/geotrain-gpu-check):
# build.log, ctest-gpu.log, codecs-cuda.jsonl, pipeline.jsonl (one line per setting, from
# scripts/gpu/pipeline_report.py) and pipeline-logs.tar.gz (every rank's output). A part that
# fails is reported and the next one still runs; the exit code is 1 if any failed.
# --dry-run-cpu runs the pipeline part on this machine's CPU build (GPT-2 tiny, a few steps), to
# check the script itself where no GPU is.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

OUT_DIR=${OUT:-/tmp/geotrain-gpu-check}
BUILD_DIR=build-gpu
PARTS="build tests codecs pipeline"
STEPS=10
MBIT=200
DRY_RUN=0
while (($# > 0)); do
  case $1 in
    --out) OUT_DIR=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --only) PARTS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --mbit) MBIT=$2; shift 2 ;;
    --dry-run-cpu) DRY_RUN=1; shift ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ $STEPS =~ ^[1-9][0-9]*$ ]] || { echo "check.sh: --steps: '$STEPS' is not a positive whole number" >&2; exit 2; }
[[ $MBIT =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "check.sh: --mbit: '$MBIT' is not a number of Mbit/s" >&2; exit 2; }
for part in $PARTS; do
  case $part in build | tests | codecs | pipeline) ;; *) echo "check.sh: --only: unknown part '$part'" >&2; exit 2 ;; esac
done
mkdir -p "$OUT_DIR"
BIN=$BUILD_DIR/bin
FAILED=()
wants() { [[ " $PARTS " == *" $1 "* ]]; }
note() { echo "check.sh: $*" >&2; }

if wants build; then
  note "building into $BUILD_DIR"
  TARGETS=${TARGETS:-"compression_cuda_tests runtime_gpu_tests geotrain-run geotrain-bench"} \
    bash scripts/gpu/build.sh build "$BUILD_DIR" >"$OUT_DIR/build.log" 2>&1 || FAILED+=(build)
  tail -5 "$OUT_DIR/build.log" >&2
fi

if wants tests; then
  note "ctest -L gpu"
  timeout 300 ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -j 4 >"$OUT_DIR/ctest-gpu.log" 2>&1 ||
    FAILED+=(tests)
  tail -4 "$OUT_DIR/ctest-gpu.log" >&2
fi

if wants codecs; then
  note "geotrain-bench codecs --device cuda"
  timeout 300 "$BIN/geotrain-bench" codecs --device cuda >"$OUT_DIR/codecs-cuda.jsonl" ||
    FAILED+=(codecs)
fi

# One job of 4 geotrain-run processes; prints its report line. $1 setting, $2 job file.
run_job() {
  local setting=$1 job=$2 logs=$WORK/$1 pids=() rank status=0
  mkdir -p "$logs"
  rm -f "$WORK/rdzv-$setting"
  for rank in 0 1 2 3; do
    timeout 600 "$BIN/geotrain-run" --dist-url "file://$WORK/rdzv-$setting" --world-size 4 \
      --rank "$rank" --config "$job" --emulate-link-mbit "$MBIT" \
      >"$logs/rank-$rank.jsonl" 2>"$logs/rank-$rank.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  if ((status != 0)); then
    note "$setting: a rank failed:"; tail -3 "$logs"/rank-*.log >&2
    return 1
  fi
  python3 scripts/gpu/pipeline_report.py --setting "$setting" --mbit "$MBIT" --skip 3 \
    --device-name "$DEVICE_NAME" "$logs"/rank-*.jsonl
}

if wants pipeline; then
  WORK=$(mktemp -d /tmp/geotrain-gpu-pipeline.XXXXXX)
  DEVICE_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
  # The job as written (compressed) and its uncompressed twin; --dry-run-cpu shrinks both.
  python3 - "$WORK" "$STEPS" "$DRY_RUN" <<'PY' || FAILED+=(pipeline)
import sys, yaml
work, steps, dry_run = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
job = yaml.safe_load(open("examples/gpu/gpt2-124m-2x2.yaml"))
job["training"]["steps"] = steps
if dry_run:
    job["model"].update(dir="examples/models/gpt2-tiny", device="cpu", autocast="off",
                        layers=[[0, 2], [2, 4]])
    job["data"]["seq_length"] = 64
    job["pipeline"]["micro_batch_size"] = 2
job["data"]["cache_dir"] = work + "/token-cache"
yaml.safe_dump(job, open(work + "/compressed.yaml", "w"))
job["name"] += "-uncompressed"
job["compression"] = {"forward": {"codec": "none"}, "backward": {"codec": "none"}}
job["data_parallel"] = {"replicas": 2, "mode": "allreduce"}
yaml.safe_dump(job, open(work + "/uncompressed.yaml", "w"))
PY
  : >"$OUT_DIR/pipeline.jsonl"
  for setting in compressed uncompressed; do
    note "pipeline: $setting at $MBIT Mbit/s"
    run_job "$setting" "$WORK/$setting.yaml" >>"$OUT_DIR/pipeline.jsonl" || FAILED+=("pipeline-$setting")
  done
  tar -czf "$OUT_DIR/pipeline-logs.tar.gz" -C "$WORK" compressed uncompressed 2>/dev/null || true
  cat "$OUT_DIR/pipeline.jsonl" >&2
fi

if ((${#FAILED[@]} > 0)); then
  note "failed: ${FAILED[*]}"
  exit 1
fi
note "all parts passed; results in $OUT_DIR"
