"""deploy/prometheus/: `promtool check config` (rule files and file_sd files included), every
glob matching something, the ports of the targets, and the alert rules' metrics."""
import glob
import json
import os
import shutil
import subprocess

from .problems import load_yaml

PORTS = {"geotrain-coordinator": "9400", "geotrain-worker": "9401"}
# Labels Prometheus puts on every series whatever the configuration says.
BUILTIN_TARGET_LABELS = {"job", "instance"}


def config_path(source):
    return os.path.join(source, "deploy", "prometheus", "prometheus.yml")


def check(source, problems):
    """Returns the tools that were missing."""
    path = config_path(source)
    if not os.path.isfile(path):
        problems.add(path, "missing")
        return []
    missing = []
    promtool = shutil.which("promtool")
    if promtool is None:
        missing.append("promtool")
    else:
        run = subprocess.run([promtool, "check", "config", path], capture_output=True, text=True,
                             timeout=120)
        if run.returncode != 0:
            failures = [line.strip() for line in (run.stdout + run.stderr).splitlines()
                        if "FAILED" in line or "error" in line.lower()]
            for line in failures or [f"exit status {run.returncode}"]:
                problems.add(path, "promtool check config: " + line)
    config = load_yaml(path, problems)
    if config is None:
        return missing
    base = os.path.dirname(path)
    for pattern in config.get("rule_files") or []:
        if not glob.glob(os.path.join(base, pattern)):
            problems.add(path, f"rule_files: '{pattern}' matches no file")
    seen_jobs = set()
    for scrape in config.get("scrape_configs") or []:
        job = scrape.get("job_name")
        seen_jobs.add(job)
        port = PORTS.get(job)
        for static in scrape.get("static_configs") or []:
            _check_targets(path, job, port, static.get("targets") or [], problems)
        for sd in scrape.get("file_sd_configs") or []:
            for pattern in sd.get("files") or []:
                files = glob.glob(os.path.join(base, pattern))
                if not files:
                    problems.add(path, f"{job}: file_sd '{pattern}' matches no file (ship an "
                                       "example so the path resolves)")
                for file in files:
                    _check_sd_file(file, job, port, problems)
    for job in PORTS:
        if job not in seen_jobs:
            problems.add(path, f"no scrape job named {job}")
    return missing


def target_labels(source, problems):
    """Every label the scrape configuration puts on series: job, instance, the static and
    file_sd labels, and relabel targets (dashboards may filter and group by these)."""
    labels = set(BUILTIN_TARGET_LABELS)
    path = config_path(source)
    config = load_yaml(path, problems) if os.path.isfile(path) else None
    if config is None:
        return labels | {"region", "role"}
    base = os.path.dirname(path)
    for scrape in config.get("scrape_configs") or []:
        for static in scrape.get("static_configs") or []:
            labels |= set((static.get("labels") or {}).keys())
        for sd in scrape.get("file_sd_configs") or []:
            for pattern in sd.get("files") or []:
                for file in glob.glob(os.path.join(base, pattern)):
                    try:
                        with open(file, encoding="utf-8") as f:
                            for group in json.load(f):
                                labels |= set((group.get("labels") or {}).keys())
                    except (OSError, ValueError, AttributeError):
                        pass  # reported by _check_sd_file
        for relabel in scrape.get("relabel_configs") or []:
            target = relabel.get("target_label")
            if target and not target.startswith("__"):
                labels.add(target)
    return labels


def rule_expressions(source, problems):
    """[(file, rule name, expr)] of the alerting and recording rules prometheus.yml loads."""
    path = config_path(source)
    config = load_yaml(path, problems) if os.path.isfile(path) else None
    if config is None:
        return []
    found = []
    for pattern in config.get("rule_files") or []:
        for file in sorted(glob.glob(os.path.join(os.path.dirname(path), pattern))):
            rules = load_yaml(file, problems) or {}
            for group in rules.get("groups") or []:
                for rule in group.get("rules") or []:
                    name = rule.get("alert") or rule.get("record") or "?"
                    found.append((file, name, str(rule.get("expr", ""))))
    return found


def _check_targets(path, job, port, targets, problems):
    for target in targets:
        if port and not str(target).endswith(":" + port):
            problems.add(path, f"{job}: target {target} is not on port {port}")


def _check_sd_file(file, job, port, problems):
    try:
        with open(file, encoding="utf-8") as f:
            groups = json.load(f)
    except OSError as e:
        problems.add(file, f"cannot read: {e.strerror}")
        return
    except ValueError as e:
        problems.add(file, f"not valid JSON: {e}")
        return
    if not isinstance(groups, list):
        problems.add(file, "file_sd content must be a list of {targets, labels}")
        return
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("targets"), list):
            problems.add(file, "every entry needs a list of targets")
            continue
        if "region" not in (group.get("labels") or {}):
            problems.add(file, "every entry needs a region label (dashboards group by it)")
        _check_targets(file, job, port, group["targets"], problems)
