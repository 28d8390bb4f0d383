"""The step reports as the scripts read them: the one Python module that knows their keys.

A step's figures reach the scripts in two forms:
- the step line (runtime/step_line.h): one JSON object per step and rank on a rank's stdout or in
  a task log, among log lines. read_step_lines() yields those objects as dicts and skips the
  rest as runtime::ParseStepLine does: a line that is not JSON, not an object, or has no "step"
  is a log line. raw_bytes and wire_bytes are objects with one count per part (BYTES_PARTS).
- `geotrain steps -o json` (the coordinator's JobStep in proto3 JSON), which writes 64-bit
  integers as strings: read_job_steps() gives them back as ints.

runtime/step_line.cc declares the step line's keys (BindStepLine); this module mirrors them, so
a key renamed there is renamed here. Standard library only.
"""
import json

# The parts of a step line's raw_bytes and wire_bytes (runtime/step_result.h, StepBytes).
BYTES_PARTS = ("forward", "backward", "dp", "embedding")

# The 64-bit JobStep fields the scripts read, which proto3 JSON writes as strings.
JOB_STEP_INTEGERS = ("step", "raw_bytes", "wire_bytes")


def read_step_lines(lines):
    """The step lines among `lines` (an open file, a list of strings), as dicts, in order."""
    for text in lines:
        text = text.strip()
        if not text.startswith("{"):
            continue
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and "step" in line:
            yield line


def wire_bytes_sent(line):
    """Every byte the rank of step line `line` sent in its step: its wire_bytes parts summed."""
    parts = line.get("wire_bytes") or {}
    return sum(parts.get(part, 0) for part in BYTES_PARTS)


def read_job_steps(path):
    """The steps of `geotrain steps -o json` saved at `path`, their 64-bit fields as ints."""
    with open(path) as f:
        steps = json.load(f).get("steps", [])
    for step in steps:
        for key in JOB_STEP_INTEGERS:
            step[key] = int(step.get(key, 0))
    return steps
