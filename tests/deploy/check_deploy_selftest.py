#!/usr/bin/env python3
"""Shows that check_deploy.py can fail: it passes on a copy of the deploy kit, then each
mutation below (one mistake a person could make) must make it exit 1 naming the problem.

  python3 tests/deploy/check_deploy_selftest.py --source REPO

Fake daemons stand in for the built programs (their --help lists the flags the units pass), so
no build is needed. Mutations that only systemd-analyze or promtool can catch are skipped when
the tool is missing. Exit 0 when every case behaves, 1 otherwise.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = None  # set by main()

# What the check reads outside deploy/: the catalogue, and the files the Dockerfile copies.
EXTRA_FILES = ["docs/metrics.md", "docs/operations.md", "scripts/install-deps.sh"]
FAKE_HELP = ("--listen --state-dir --metrics-listen --heartbeat-interval-ms "
             "--heartbeat-timeout-ms --stop-timeout-seconds --reattach-grace-seconds "
             "--log-level --coordinator --advertise --region --work-dir --data-root --threads "
             "--stop-grace-seconds --port-min --port-max --tls-cert --tls-key --tls-ca "
             "--join-token-file --admin-token-file")

DASHBOARD = "deploy/grafana/dashboards/geotrain.json"
WORKER_UNIT = "deploy/systemd/geotrain-worker.service"
COORDINATOR_UNIT = "deploy/systemd/geotrain-coordinator.service"
DOCKERFILE = "deploy/docker/Dockerfile"

# (name, file, old text, new text, expected text in the output, tool the case needs or None)
MUTATIONS = [
    ("unknown metric", DASHBOARD, "geotrain_job_loss{", "geotrain_job_losss{",
     "metric geotrain_job_losss is not in docs/metrics.md", None),
    ("unknown label", DASHBOARD, 'geotrain_wire_bytes_total{direction=\\"sent\\"',
     'geotrain_wire_bytes_total{dir=\\"sent\\"', "label 'dir' is not one of", None),
    ("label in by()", DASHBOARD, "sum by (phase)", "sum by (phse)",
     "label 'phse' in by/on/ignoring/group_*", None),
    ("undefined variable", DASHBOARD, 'geotrain_job_step{job_id=\\"$job\\"}',
     'geotrain_job_step{job_id=\\"$jobs\\"}', "$jobs is no template variable", None),
    ("foreign datasource", DASHBOARD, '"uid": "geotrain-prometheus"', '"uid": "other"',
     "is not the provisioned one", None),
    ("PromQL syntax", DASHBOARD, "histogram_quantile(0.5, sum by (le, stage) (",
     "histogram_quantile(0.5, sum by (le, stage) ((", "promtool", "promtool"),
    ("misspelt unit key", COORDINATOR_UNIT, "ProtectClock=yes", "ProtectClok=yes",
     "Unknown key 'ProtectClok'", "systemd-analyze"),
    ("worker loses KillMode=mixed", WORKER_UNIT, "KillMode=mixed", "KillMode=control-group",
     "KillMode=mixed expected", None),
    ("stop timeout below the grace", WORKER_UNIT, "TimeoutStopSec=40s", "TimeoutStopSec=20s",
     "must be at least --stop-grace-seconds", None),
    ("GPU not reachable", WORKER_UNIT, "DeviceAllow=/dev/nvidia-uvm rw\n", "",
     "DeviceAllow must list /dev/nvidia-uvm", None),
    ("JIT forbidden on the worker", WORKER_UNIT, "LockPersonality=yes",
     "LockPersonality=yes\nMemoryDenyWriteExecute=yes", "MemoryDenyWriteExecute breaks", None),
    ("flag the daemon lacks", WORKER_UNIT, "--threads ${GEOTRAIN_THREADS}",
     "--thread ${GEOTRAIN_THREADS}", "passes --thread,", None),
    ("unset variable", WORKER_UNIT, "${GEOTRAIN_REGION}", "${GEOTRAIN_ZONE}",
     "uses ${GEOTRAIN_ZONE}", None),
    ("missing COPY source", DOCKERFILE, "COPY scripts/install-deps.sh",
     "COPY scripts/install-dep.sh", "does not exist in the build context", None),
    ("root runtime", DOCKERFILE, "USER geotrain", "USER root", "runs as root", None),
    ("unknown instruction", DOCKERFILE, "WORKDIR /src", "WORKDIRR /src",
     "unknown instruction 'WORKDIRR'", None),
    ("shell syntax in RUN", DOCKERFILE, "&& rm -rf /var/lib/apt/lists/*\nCOPY . .",
     "&& rm -rf /var/lib/apt/lists/* (\nCOPY . .", "shell syntax", None),
    ("worker on the wrong port", "deploy/prometheus/workers.d/asia-east1.json",
     "10.8.0.31:9401", "10.8.0.31:9400", "is not on port 9401", None),
    ("file_sd without region", "deploy/prometheus/workers.d/asia-east1.json",
     '"labels": {"region": "asia-east1"}', '"labels": {}', "needs a region label", None),
    ("alert on an unknown metric", "deploy/prometheus/rules/geotrain.yml",
     "expr: geotrain_worker_connected == 0", "expr: geotrain_worker_connectd == 0",
     "geotrain_worker_connectd is not in docs/metrics.md", None),
    ("cloud-init env drifts", "deploy/cloud-init/worker.yaml", "      GEOTRAIN_LOG_LEVEL=info",
     "      GEOTRAIN_LOGLEVEL=info", "worker.env lacks GEOTRAIN_LOG_LEVEL", None),
    ("cloud-init header", "deploy/cloud-init/worker.yaml", "#cloud-config\n", "# cloud-config\n",
     "exactly '#cloud-config'", None),
    ("README misses a file", "deploy/README.md", "`docker/runtime-packages.sh`", "`docker/`",
     "does not mention docker/runtime-packages.sh", None),
]


def copy_kit(destination):
    """Copies what the check reads into destination; returns the fake programs' directory."""
    shutil.copytree(os.path.join(SOURCE, "deploy"), os.path.join(destination, "deploy"))
    for relative in EXTRA_FILES:
        os.makedirs(os.path.join(destination, os.path.dirname(relative)), exist_ok=True)
        shutil.copy(os.path.join(SOURCE, relative), os.path.join(destination, relative))
    bin_dir = os.path.join(destination, "bin")
    os.makedirs(bin_dir)
    for program in ("geotrain-coordinator", "geotrain-worker"):
        path = os.path.join(bin_dir, program)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\necho '{FAKE_HELP}'\n")
        os.chmod(path, 0o755)
    return bin_dir


def run_check(source, bin_dir):
    return subprocess.run([sys.executable, os.path.join(HERE, "check_deploy.py"),
                           "--source", source, "--bin", bin_dir],
                          capture_output=True, text=True, timeout=300)


class CheckDeployTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.mkdtemp(prefix="geotrain-deploy-selftest-")
        self.bin_dir = copy_kit(self.scratch)

    def tearDown(self):
        shutil.rmtree(self.scratch)

    def test_the_kit_passes(self):
        run = run_check(self.scratch, self.bin_dir)
        self.assertIn(run.returncode, (0, 77), run.stdout + run.stderr)

    def test_each_mutation_fails(self):
        # Each case on its own copy, four at a time: the check mostly waits on systemd-analyze.
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(self._mutate_and_check, MUTATIONS))
        for (name, _, _, _, expected, tool), result in zip(MUTATIONS, results):
            with self.subTest(name):
                if result is None:
                    self.skipTest(f"{tool} is not installed")
                returncode, output = result
                self.assertEqual(returncode, 1, output)
                self.assertIn(expected, output)

    def _mutate_and_check(self, mutation):
        name, relative, old, new, _, tool = mutation
        if tool and shutil.which(tool) is None:
            return None
        root = os.path.join(self.scratch, "case-" + "".join(c if c.isalnum() else "-"
                                                            for c in name))
        bin_dir = copy_kit(root)
        path = os.path.join(root, relative)
        with open(path, encoding="utf-8") as f:
            original = f.read()
        if old not in original:
            return 99, f"{relative} no longer holds {old!r}: update the mutation '{name}'"
        with open(path, "w", encoding="utf-8") as f:
            f.write(original.replace(old, new, 1))
        run = run_check(root, bin_dir)
        return run.returncode, run.stdout + run.stderr

    def test_missing_binary_is_named(self):
        os.unlink(os.path.join(self.bin_dir, "geotrain-worker"))
        run = run_check(self.scratch, self.bin_dir)
        self.assertEqual(run.returncode, 1)
        self.assertIn("geotrain-worker is missing or not executable", run.stderr)


def main():
    global SOURCE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="the repository root")
    args, rest = parser.parse_known_args()
    SOURCE = os.path.abspath(args.source)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
