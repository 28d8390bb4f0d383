#!/usr/bin/env python3
"""One JSON line for one geotrain-run job from its ranks' step lines (scripts/gpu/check.sh).

  pipeline_report.py --setting NAME --mbit R --skip N [--device-name D] rank0.jsonl rank1.jsonl ...

tokens_per_s is the job's: every replica's tokens of a step (read on its last stage) over the
step's seconds (the slowest replica's), summed over the steps after the first N (warm-up,
uncompressed steps and first visits of the delta cache), divided by their seconds.
wire_bytes_per_step sums every rank's sent bytes (activations, gradients, data-parallel,
embedding) per measured step. Reads the step lines with scripts/step_lines.py. Needs only the
standard library.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import step_lines  # noqa: E402  (scripts/step_lines.py)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--setting", required=True)
    parser.add_argument("--mbit", type=float, required=True, help="emulated link rate, 0: none")
    parser.add_argument("--skip", type=int, default=2, help="steps left out at the start")
    parser.add_argument("--device-name", default="")
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args()

    steps = {}  # step -> list of step lines
    last_stage = 0
    for path in args.logs:
        with open(path) as f:
            for line in step_lines.read_step_lines(f):
                if "tokens" not in line:
                    continue
                steps.setdefault(line["step"], []).append(line)
                last_stage = max(last_stage, line["stage"])
    measured = sorted(s for s in steps if s > args.skip)
    if not measured:
        sys.exit(f"pipeline_report.py: no step after the first {args.skip} in {args.logs}")
    tokens = seconds = wire = 0
    step_seconds = []
    last_losses = []
    for s in measured:
        lines = steps[s]
        tokens += sum(l["tokens"] for l in lines if l["stage"] == last_stage)
        slowest = max(l["step_seconds"] for l in lines)
        seconds += slowest
        step_seconds.append(slowest)
        wire += sum(step_lines.wire_bytes_sent(l) for l in lines)
        last_losses = [l["loss"] for l in lines if "loss" in l]
    report = {
        "bench": "gpu-pipeline",
        "setting": args.setting,
        "emulated_mbit": args.mbit,
        "device_name": args.device_name,
        "steps_measured": len(measured),
        "tokens_per_s": tokens / seconds,
        "step_seconds_median": statistics.median(step_seconds),
        "wire_bytes_per_step": wire / len(measured),
        "final_loss": statistics.mean(last_losses) if last_losses else None,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
