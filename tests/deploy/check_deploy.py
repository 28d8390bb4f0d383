#!/usr/bin/env python3
"""Checks the deploy kit under deploy/ (tests/deploy/README.md).

  python3 tests/deploy/check_deploy.py --source REPO --bin BUILD/bin

(a) the systemd units: `systemd-analyze verify` on copies whose ExecStart runs the built
    programs (nothing else changed), `systemd-analyze security --offline`, the hardening they
    promise, their environment files and the daemons' --help;
(b) prometheus.yml: `promtool check config`, its globs, ports and alert rules;
(c) the Grafana provisioning and dashboard: datasources, targets, every metric and label in
    docs/metrics.md, every catalogue metric drawn or excused, PromQL syntax;
(d) the Dockerfile, parsed strictly;
(e) the cloud-init worker file;
and that deploy/README.md names every file of deploy/.

Exit 0: all good. 1: problems, each printed as 'FILE: problem'. 2: bad arguments. 77 (skip):
everything that could run passed, but systemd-analyze or promtool is not installed (named).
"""
import argparse
import os
import sys

# No __pycache__ in the source tree, which may be read-only or under version control.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from deploycheck import (catalogue, cloud_init, dockerfile, grafana_dashboard,  # noqa: E402
                         prometheus_config, promql, systemd_units)
from deploycheck.problems import Problems, load_yaml, yaml  # noqa: E402

SKIP = 77


def check_readme(source, problems):
    """deploy/README.md mentions every file under deploy/ (by its path below deploy/)."""
    deploy = os.path.join(source, "deploy")
    readme = os.path.join(deploy, "README.md")
    if not os.path.isfile(readme):
        problems.add(readme, "missing")
        return
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    for directory, _, files in os.walk(deploy):
        for name in files:
            relative = os.path.relpath(os.path.join(directory, name), deploy)
            if relative != "README.md" and relative not in text:
                problems.add(readme, f"does not mention {relative}")


def scrape_interval(source, problems):
    config = load_yaml(prometheus_config.config_path(source), problems)
    return ((config or {}).get("global") or {}).get("scrape_interval")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("--bin", required=True,
                        help="directory holding the built geotrain-coordinator and geotrain-worker")
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    if not os.path.isdir(os.path.join(source, "deploy")):
        print(f"check_deploy: --source {args.source}: no deploy/ directory there",
              file=sys.stderr)
        return 2
    if not os.path.isdir(args.bin):
        print(f"check_deploy: --bin {args.bin}: not a directory", file=sys.stderr)
        return 2

    problems = Problems(source)
    sections = []

    def run(name, function):
        before = problems.count()
        result = function()
        sections.append((name, problems.count() - before))
        return result

    missing = []
    missing += run("systemd units", lambda: systemd_units.check(source, args.bin, problems))
    missing += run("prometheus", lambda: prometheus_config.check(source, problems))
    metrics = catalogue.read_catalogue(os.path.join(source, "docs", "metrics.md"), problems)
    labels = prometheus_config.target_labels(source, problems)
    exprs = promql.ExprCheck(metrics, labels)
    run("alert rules", lambda: [
        problems.add(file, f"rule {name}: {problem}")
        for file, name, expr in prometheus_config.rule_expressions(source, problems)
        for problem in promql.ExprCheck(metrics, labels).check(expr)])
    run("grafana", lambda: grafana_dashboard.check(source, metrics, exprs,
                                                    scrape_interval(source, problems), problems))
    run("dockerfile", lambda: dockerfile.check(source, problems))
    run("cloud-init", lambda: cloud_init.check(source, problems))
    run("deploy/README.md", lambda: check_readme(source, problems))

    if yaml is None:
        problems.note("python3-yaml is not installed: the YAML files (prometheus.yml's globs, "
                      "alert rules, Grafana provisioning, cloud-init) were checked for less")
    for line in problems.lines:
        print(f"check_deploy: {line}", file=sys.stderr)
    for note in problems.notes:
        print(f"check_deploy: note: {note}")
    for name, count in sections:
        print(f"check_deploy: {name}: {'ok' if count == 0 else f'{count} problem(s)'}")
    failed = sum(1 for _, count in sections if count)
    print(f"{len(sections) - failed} passed, {failed} failed")
    if problems.count():
        return 1
    if missing:
        print(f"check_deploy: SKIP: not installed: {', '.join(missing)} (Debian: "
              "apt-get install systemd prometheus); everything else passed")
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
