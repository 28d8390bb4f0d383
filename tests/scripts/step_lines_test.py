#!/usr/bin/env python3
"""scripts/step_lines.py against the format runtime/step_line.cc declares.

  step_lines_test.py --source REPO

Checks that BYTES_PARTS are BindBytes's keys in runtime/step_line.cc, that read_step_lines skips
what runtime::ParseStepLine calls log lines, and the sums and conversions the reports rely on.
"""
import argparse
import json
import os
import re
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source, "scripts"))
    import step_lines

    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)

    with open(os.path.join(args.source, "runtime", "step_line.cc")) as f:
        source = f.read()
    bind_bytes = re.search(r"void BindBytes\(.*?\n}\n", source, re.S)
    check(bind_bytes is not None, "runtime/step_line.cc has no BindBytes")
    if bind_bytes:
        keys = tuple(re.findall(r'b\.Field\("(\w+)"', bind_bytes.group(0)))
        check(keys == step_lines.BYTES_PARTS,
              f"BYTES_PARTS {step_lines.BYTES_PARTS} != BindBytes's keys {keys}")

    line = {"rank": 1, "stage": 1, "replica": 0, "step": 7, "tokens": 64, "step_seconds": 0.5,
            "wire_bytes": {"forward": 10, "backward": 20, "dp": 300, "embedding": 4000}}
    log = ["[info] starting", "{not json", "[1, 2]", '{"loss": 1.0}', json.dumps(line), "",
           json.dumps({**line, "step": 8})]
    read = list(step_lines.read_step_lines(log))
    check([l["step"] for l in read] == [7, 8], f"read_step_lines read {read}")
    check(step_lines.wire_bytes_sent(line) == 4330, "wire_bytes_sent does not sum the parts")
    check(step_lines.wire_bytes_sent({"step": 1}) == 0, "wire_bytes_sent of a line without bytes")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "steps.json")
        with open(path, "w") as f:
            json.dump({"steps": [{"step": "3", "wire_bytes": "12345678901", "loss": 2.5}]}, f)
        steps = step_lines.read_job_steps(path)
        check(steps == [{"step": 3, "raw_bytes": 0, "wire_bytes": 12345678901, "loss": 2.5}],
              f"read_job_steps read {steps}")

    for failure in failures:
        print("FAIL:", failure)
    print("step_lines_test:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
