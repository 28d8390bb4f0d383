#!/usr/bin/env python3
"""Turns the results of scripts/wan/run-scenario.sh into bench/wan.sh's JSON lines.

  wan_report.py run RUN_DIR SETTING BANDWIDTH_MBIT EMULATED_MBIT RESULTS_JSONL   one run
  wan_report.py scenario OUT_DIR SCENARIO_FILE                     the link-drop scenario

RUN_DIR holds job.yaml, summary.json and out/ (run-scenario.sh's --out); RESULTS_JSONL the lines
printed so far in this invocation (for the ratios to the unlimited and uncompressed runs).
"""

import json
import os
import statistics
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import step_lines  # noqa: E402  (scripts/step_lines.py)


def load_steps(out_dir):
    return step_lines.read_job_steps(f"{out_dir}/steps.json")


def steady(steps, warmup):
    """The steps after the compression warm-up and the two after it (codec caches filling)."""
    return [s for s in steps if s["step"] > warmup + 2] or steps


def final_loss(steps):
    evals = [s["eval_loss"] for s in steps if "eval_loss" in s]
    if evals:
        return evals[-1]
    return statistics.mean(s["loss"] for s in steps[-5:]) if steps else None


def report_run(run_dir, setting, bandwidth, emulated, results_path):
    bandwidth = int(bandwidth)
    with open(f"{run_dir}/summary.json") as f:
        summary = json.loads(f.read().strip().splitlines()[-1])
    with open(f"{run_dir}/job.yaml") as f:
        warmup = yaml.safe_load(f)["compression"].get("warmup_steps", 0)
    steps = load_steps(f"{run_dir}/out")
    line = {"bench": "wan", "bandwidth_mbit": bandwidth, "emulated_mbit": int(emulated),
            "setting": setting, "state": summary["state"], "steps": len(steps)}
    if steps:
        measured = steady(steps, warmup)
        line.update({
            "step_seconds": round(statistics.median(s["step_seconds"] for s in measured), 4),
            "wire_bytes_per_step": round(statistics.mean(s["wire_bytes"] for s in measured)),
            "raw_bytes_per_step": round(statistics.mean(s["raw_bytes"] for s in measured)),
            "final_loss": round(final_loss(steps), 4),
        })
    earlier = []
    with open(results_path) as f:
        earlier = [json.loads(l) for l in f if l.strip()]
    def figure(bw, name, key):
        for e in earlier:
            if e["bandwidth_mbit"] == bw and e["setting"] == name and key in e:
                return e[key]
        return None
    if "step_seconds" in line:
        for key, unlimited in (("ratio_to_unlimited", figure(0, setting, "step_seconds")),
                               ("ratio_to_unlimited_none", figure(0, "none", "step_seconds"))):
            if bandwidth == 0 and setting == "none" or bandwidth == 0 and key == "ratio_to_unlimited":
                unlimited = line["step_seconds"]
            if unlimited:
                line[key] = round(line["step_seconds"] / unlimited, 3)
        if setting == "none" and bandwidth > 0 and figure(0, "none", "step_seconds"):
            # Uncompressed communication that did not hide, in units of the unlimited step.
            line["comm_over_compute"] = round(line["ratio_to_unlimited"] - 1, 3)
        none_loss = line["final_loss"] if setting == "none" else figure(bandwidth, "none", "final_loss")
        if none_loss:
            line["loss_vs_none"] = round(line["final_loss"] / none_loss, 4)
    line["wall_seconds"] = round(float(summary["wall_seconds"]), 1)
    print(json.dumps(line), flush=True)


def scenario_changes(scenario_file):
    changes = []
    with open(scenario_file) as f:
        for raw in f:
            words = raw.split("#")[0].split()
            if words[:2] == ["at", "step"]:
                changes.append((int(words[2]), " <-> ".join(words[4:6]), int(words[6])))
    return changes


def report_scenario(out_dir, scenario_file):
    steps = load_steps(out_dir)
    by_step = {s["step"]: s["step_seconds"] for s in steps}
    changes = scenario_changes(scenario_file)
    timeline = []
    with open(f"{out_dir}/compression.jsonl") as f:
        for l in f:
            entry = json.loads(l)
            settings = {}
            for c in entry["compression"]:
                key = f"s{c.get('stage', 0)}r{c.get('replica', 0)}-{c['kind'].replace('TRAFFIC_KIND_', '').lower()}"
                settings[key] = {"bits": c.get("bits", 0), "effective_step": int(c.get("effective_step", 0)),
                                 "seen_at_step": entry["step"]}
                if c.get("topk_ratio"):
                    settings[key]["topk_ratio"] = c["topk_ratio"]
            timeline.append({"seen_at_step": entry["step"], "settings": settings})
    def median_between(first, last):
        values = [by_step[s] for s in range(first, last + 1) if s in by_step]
        return round(statistics.median(values), 4) if values else None
    line = {"bench": "wan", "scenario": "link-drop", "steps": len(steps),
            "changes": [{"step": s, "link": l, "mbit": m} for s, l, m in changes]}
    if len(changes) >= 1:
        drop = changes[0][0]
        end = changes[1][0] if len(changes) > 1 else max(by_step, default=drop)
        line["pre_drop_step_seconds"] = median_between(max(1, drop - 6), drop)
        line["first_steps_after_drop_seconds"] = [by_step.get(s) for s in range(drop + 1, drop + 4)]
        line["recovered_step_seconds"] = median_between(max(drop + 1, end - 4), end)
        # The first step after the drop from which three steps in a row are within 1.3x of before.
        pre = line["pre_drop_step_seconds"]
        line["back_within_1_3x_at_step"] = next(
            (s for s in range(drop + 2, end + 1)
             if all(by_step.get(t, float("inf")) <= 1.3 * pre for t in range(s, s + 3))), None)
        if line["pre_drop_step_seconds"] and line["recovered_step_seconds"]:
            line["recovered_vs_pre_drop"] = round(
                line["recovered_step_seconds"] / line["pre_drop_step_seconds"], 3)
        def first_change_after(step, lower):
            before = None
            for entry in timeline:
                if entry["seen_at_step"] < step:
                    before = entry["settings"]
                    continue
                for key, value in entry["settings"].items():
                    # (bits, topk ratio): cocktail lowers its top-k ratio below min_bits.
                    level = lambda v: (v.get("bits", 0), v.get("topk_ratio", 1))
                    old = level((before or {}).get(key, {}))
                    new = level(value)
                    if value["effective_step"] > step and (new < old if lower else new > old):
                        return {"link": key, "from": list(old), "to": list(new),
                                "decided_at_step": entry["seen_at_step"],
                                "effective_step": value["effective_step"],
                                "steps_after_change": value["effective_step"] - step}
                before = entry["settings"]
            return None
        line["lowered"] = first_change_after(drop, lower=True)
        if len(changes) > 1:
            line["raised"] = first_change_after(changes[1][0], lower=False)
            line["after_restore_step_seconds"] = median_between(changes[1][0] + 4, max(by_step))
    line["bits_timeline"] = timeline
    print(json.dumps(line), flush=True)


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "run":
        report_run(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "scenario":
        report_scenario(*sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
