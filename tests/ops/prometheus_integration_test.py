#!/usr/bin/env python3
"""A real Prometheus server scrapes a running local cluster (issue 6's done-when).

Starts geotrain-coordinator and 4 geotrain-workers on loopback with their metrics endpoints on free
ports, a Prometheus server (Debian package `prometheus`) scraping them every second, submits a
short 2 stages x 2 replicas job and checks with PromQL that tokens/s, wire bytes and loss have
values while it runs and after; then that every metric the Grafana dashboard
(deploy/grafana/dashboards/geotrain.json) references was scraped.

Exit 0: passed; 1: failed (with the reason); 77: skipped (no prometheus binary).

  python3 tests/ops/prometheus_integration_test.py --source . --bin build/bin
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SKIP = 77


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The processes of the test, stopped (and their directory removed) however the test ends."""

    def __init__(self, root):
        self.root = root
        self.processes = []

    def start(self, name, argv, cwd=None):
        out = open(os.path.join(self.root, name + ".out"), "w")
        err = open(os.path.join(self.root, name + ".log"), "w")
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd, start_new_session=True)
        self.processes.append((name, process))
        return process

    def wait_for_line(self, name, pattern, timeout=60):
        """The first match of `pattern` in NAME.out (the daemons print their bound addresses)."""
        path = os.path.join(self.root, name + ".out")
        deadline = time.time() + timeout
        process = dict(self.processes)[name]
        while time.time() < deadline:
            with open(path) as f:
                match = re.search(pattern, f.read())
            if match:
                return match.group(1)
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}: {self.tail(name)}")
            time.sleep(0.1)
        raise RuntimeError(f"{name} printed no line matching {pattern!r} in {timeout} s")

    def tail(self, name):
        with open(os.path.join(self.root, name + ".log")) as f:
            return f.read()[-2000:]

    def stop(self):
        for _, process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.time() + 15
        for _, process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def query(prometheus, promql):
    """The vector an instant PromQL query returns ([] when it has no series)."""
    url = f"http://{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError(f"query {promql!r}: {body}")
    return body["data"]["result"]


def value(prometheus, promql):
    result = query(prometheus, promql)
    return float(result[0]["value"][1]) if result else None


def metric_names(prometheus):
    url = f"http://{prometheus}/api/v1/label/__name__/values"
    with urllib.request.urlopen(url, timeout=10) as response:
        return set(json.load(response)["data"])


def dashboard_metrics(path):
    """Every geotrain_* name in the dashboard's queries, without histogram suffixes."""
    with open(path) as f:
        dashboard = json.load(f)
    names = set()

    def visit(node):
        if isinstance(node, dict):
            for key, item in node.items():
                if key in ("expr", "query", "definition") and isinstance(item, str):
                    for name in re.findall(r"\bgeotrain_[a-z0-9_]+", item):
                        names.add(re.sub(r"_(bucket|sum|count)$", "", name))
                else:
                    visit(item)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(dashboard)
    return names


def check(condition, message, failures):
    print(("ok:   " if condition else "FAIL: ") + message, flush=True)
    if not condition:
        failures.append(message)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("--bin", required=True, help="directory of the geotrain binaries")
    parser.add_argument("--prometheus", default=shutil.which("prometheus") or "")
    parser.add_argument("--keep", action="store_true", help="keep the test directory")
    args = parser.parse_args()
    if not args.prometheus:
        print("skipped: no prometheus binary (apt-get install prometheus)")
        return SKIP
    source = os.path.abspath(args.source)
    bin_dir = os.path.abspath(args.bin)

    root = tempfile.mkdtemp(prefix="geotrain-prometheus-test.")
    cluster = Cluster(root)
    failures = []
    try:
        cluster.start("coordinator", [
            f"{bin_dir}/geotrain-coordinator", "--listen", "127.0.0.1:0",
            "--metrics-listen", "127.0.0.1:0", "--state-dir", f"{root}/state"])
        coordinator = cluster.wait_for_line("coordinator", r"listening on (\S+)")
        targets = [cluster.wait_for_line("coordinator", r"metrics on (\S+)")]
        for i in range(4):
            name = f"worker-{i}"
            cluster.start(name, [
                f"{bin_dir}/geotrain-worker", "--coordinator", coordinator,
                "--advertise", "127.0.0.1", "--region", "region-a" if i < 2 else "region-b",
                "--work-dir", f"{root}/{name}", "--data-root", source, "--allow-path", root,
                "--threads", "1",
                "--metrics-listen", "127.0.0.1:0"])
            targets.append(cluster.wait_for_line(name, r"metrics on (\S+)"))

        prometheus = f"127.0.0.1:{free_port()}"
        with open(f"{root}/prometheus.yml", "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: geotrain\n    static_configs:\n"
                    f"      - targets: {json.dumps(targets)}\n")
        cluster.start("prometheus", [
            args.prometheus, f"--config.file={root}/prometheus.yml",
            f"--storage.tsdb.path={root}/tsdb", f"--web.listen-address={prometheus}"])

        # The bundled job, shortened, with its directories under the test's.
        with open(f"{source}/examples/gpt2-tiny-2x2.yaml") as f:
            spec = f.read().replace("runs/gpt2-tiny-2x2", f"{root}/job")
        spec = re.sub(r"(?m)^  steps: \d+", "  steps: 40", spec)
        with open(f"{root}/job.yaml", "w") as f:
            f.write(spec)
        os.environ["GEOTRAIN_COORDINATOR"] = coordinator  # for the CLI
        cli = [f"{bin_dir}/geotrain"]
        deadline = time.time() + 60
        while True:
            workers = subprocess.run(cli + ["workers", "-o", "json"], capture_output=True, text=True)
            if workers.returncode == 0 and workers.stdout.count("WORKER_STATE_IDLE") >= 4:
                break
            if time.time() > deadline:
                raise RuntimeError("the 4 workers did not register: " + workers.stdout + workers.stderr)
            time.sleep(0.2)
        submit = cluster.start("submit", cli + ["submit", f"{root}/job.yaml", "--wait"])

        # While it runs: every target up, tokens flowing, bytes on the wire, a loss.
        running = {}
        deadline = time.time() + 300
        while time.time() < deadline and submit.poll() is None:
            try:
                running = {
                    "up": value(prometheus, "sum(up)"),
                    "tokens_per_second": value(prometheus, "sum(rate(geotrain_tokens_total{stage=\"0\"}[10s]))"),
                    "wire_bytes": value(prometheus, "sum(geotrain_wire_bytes_total)"),
                    "loss": value(prometheus, "max(geotrain_loss)"),
                    "job_tokens_per_second": value(prometheus, "max(geotrain_job_tokens_per_second)"),
                }
            except OSError:
                pass  # Prometheus still starting
            if all(v for v in running.values()):
                break
            time.sleep(1)
        print("while running:", running, flush=True)
        check(running.get("up") == 5, "Prometheus scrapes the coordinator and 4 workers", failures)
        check((running.get("tokens_per_second") or 0) > 0, "rate(geotrain_tokens_total) > 0", failures)
        check((running.get("job_tokens_per_second") or 0) > 0, "geotrain_job_tokens_per_second > 0", failures)
        check((running.get("wire_bytes") or 0) > 0, "geotrain_wire_bytes_total > 0", failures)
        check((running.get("loss") or 0) > 0, "geotrain_loss has a value", failures)

        submit.wait(timeout=max(1, deadline - time.time()))
        check(submit.returncode == 0, f"the job succeeded (submit --wait exit {submit.returncode})", failures)
        time.sleep(3)  # a few more scrapes after the last step

        after = {
            "job_step": value(prometheus, "max(geotrain_job_step)"),
            "job_loss": value(prometheus, "max(geotrain_job_loss)"),
            "job_eval_loss": value(prometheus, "max(geotrain_job_eval_loss)"),
            "succeeded": value(prometheus, "geotrain_coordinator_jobs{state=\"succeeded\"}"),
            "raw_over_wire": value(prometheus, "sum(geotrain_raw_bytes_total{direction=\"sent\"}) / "
                                               "sum(geotrain_wire_bytes_total{direction=\"sent\"})"),
            "checkpoint_step": value(prometheus, "max(geotrain_checkpoint_step)"),
        }
        print("after:", after, flush=True)
        check(after["job_step"] == 40, "geotrain_job_step reached 40", failures)
        check((after["job_loss"] or 0) > 0, "geotrain_job_loss has a value", failures)
        check((after["job_eval_loss"] or 0) > 0, "geotrain_job_eval_loss has a value", failures)
        check(after["succeeded"] == 1, "geotrain_coordinator_jobs{state=succeeded} is 1", failures)
        check((after["raw_over_wire"] or 0) > 1, "raw bytes exceed wire bytes (compression)", failures)
        check(after["checkpoint_step"] == 40, "geotrain_checkpoint_step reached 40", failures)

        scraped = metric_names(prometheus)
        # Series that exist only for jobs with compression.adaptive or of a sequence classifier,
        # which this job (a language model, fixed compression) is not.
        other_jobs_only = {"geotrain_job_link_bits", "geotrain_job_link_topk_ratio",
                           "geotrain_job_link_compression_changes_total",
                           "geotrain_job_eval_score"}
        wanted = (dashboard_metrics(f"{source}/deploy/grafana/dashboards/geotrain.json") -
                  other_jobs_only)
        missing = sorted(name for name in wanted
                         if not any(s == name or s.startswith(name + "_") and
                                    s[len(name) + 1:] in ("bucket", "sum", "count")
                                    for s in scraped))
        check(bool(wanted), f"the dashboard references {len(wanted)} metrics", failures)
        check(not missing, "every metric the dashboard uses was scraped" +
              (f" (missing: {', '.join(missing)})" if missing else ""), failures)
    except Exception as e:  # a broken cluster is a failure with its reason, not a traceback only
        failures.append(str(e))
        print("FAIL:", e, flush=True)
    finally:
        cluster.stop()
        if failures:
            for name, _ in cluster.processes:
                print(f"--- {name} log (tail) ---\n{cluster.tail(name)}")
        if args.keep:
            print("kept", root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
