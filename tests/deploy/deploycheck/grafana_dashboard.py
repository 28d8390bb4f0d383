"""deploy/grafana/: the provisioning files and the dashboard. Every panel has a datasource (the
provisioned one, by uid) and targets; every metric an expression reads is in docs/metrics.md,
with labels the metric has; every catalogue metric is drawn somewhere or listed below with a
reason; with promtool, every expression parses as PromQL."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from .problems import load_yaml, read_text, yaml

# Catalogue metrics deliberately not on the dashboard, and why. A metric listed here that a
# panel does use, or that left the catalogue, is a problem too (the list must stay true).
NOT_ON_DASHBOARD = {
    "geotrain_loss": "the coordinator's geotrain_job_loss is the same figure per job; the "
                     "worker's series carries no job label",
    "geotrain_eval_loss": "the coordinator's geotrain_job_eval_loss is the same figure per job; "
                          "the worker's series carries no job label",
    "geotrain_eval_score": "the coordinator's geotrain_job_eval_score is the same figure per "
                           "job; the worker's series carries no job label",
    "geotrain_coordinator_state_store_failed": "a 0/1 condition that needs an operator, not a "
                                               "curve: the alert GeotrainStateStoreFailed pages "
                                               "on it",
}
PANEL_TYPES = {"timeseries", "stat", "bargauge", "gauge", "table", "heatmap", "xychart",
               "state-timeline", "status-history", "barchart", "piechart", "row"}
TRANSFORMATIONS = {"joinByField", "groupingToMatrix", "merge", "organize", "labelsToFields",
                   "reduce", "sortBy", "filterFieldsByName", "calculateField", "seriesToRows",
                   "renameByRegex"}
# Grafana's own variables, and a value each takes when an expression is handed to promtool.
BUILTIN_VARIABLES = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h",
                     "__range_s": "3600", "__range_ms": "3600000", "__interval_ms": "60000",
                     "__all": ".*"}
SCHEMA_VERSIONS = range(36, 40)
_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
                       r"|\[\[([A-Za-z0-9_]+)\]\]")


def paths(source):
    base = os.path.join(source, "deploy", "grafana")
    return {
        "datasource": os.path.join(base, "provisioning", "datasources", "geotrain.yaml"),
        "provider": os.path.join(base, "provisioning", "dashboards", "geotrain.yaml"),
        "dashboard": os.path.join(base, "dashboards", "geotrain.json"),
    }


def check(source, catalogue, expr_check, scrape_interval, problems):
    files = paths(source)
    uid = _datasource_uid(files["datasource"], scrape_interval, problems)
    _check_provider(files["provider"], problems)
    text = read_text(files["dashboard"], problems)
    if text is None:
        return
    try:
        dashboard = json.loads(text)
    except ValueError as e:
        problems.add(files["dashboard"], f"not valid JSON: {e}")
        return
    path = files["dashboard"]
    _check_header(path, dashboard, problems)
    variables = _check_variables(path, dashboard, uid, expr_check, problems)
    panels = list(_panels(dashboard.get("panels") or []))
    if not panels:
        problems.add(path, "has no panels")
        return
    _check_layout(path, dashboard.get("panels") or [], problems)
    expressions = []
    for panel in panels:
        expressions += _check_panel(path, panel, uid, variables, expr_check, problems)
    _check_coverage(path, catalogue, expr_check.used, problems)
    _promtool_syntax(path, expressions, variables, problems)


def _datasource_uid(path, scrape_interval, problems):
    """The provisioned Prometheus datasource's uid (None when it cannot be read)."""
    if yaml is None:
        text = read_text(path, problems) or ""
        match = re.search(r"^\s*uid:\s*['\"]?([A-Za-z0-9_-]+)", text, re.MULTILINE)
        return match.group(1) if match else None
    document = load_yaml(path, problems)
    if document is None:
        return None
    sources = [d for d in document.get("datasources") or [] if d.get("type") == "prometheus"]
    if len(sources) != 1:
        problems.add(path, f"expected one prometheus datasource, found {len(sources)}")
        return None
    source = sources[0]
    if not source.get("uid"):
        problems.add(path, "the datasource has no uid (the dashboard refers to it by uid)")
    if not source.get("url"):
        problems.add(path, "the datasource has no url")
    interval = (source.get("jsonData") or {}).get("timeInterval")
    if scrape_interval and interval != scrape_interval:
        problems.add(path, f"jsonData.timeInterval is {interval}, prometheus.yml scrapes every "
                           f"{scrape_interval} ($__rate_interval depends on it)")
    return source.get("uid")


def _check_provider(path, problems):
    document = load_yaml(path, problems)
    if document is None:
        return
    providers = document.get("providers") or []
    if not providers:
        problems.add(path, "no providers")
    for provider in providers:
        if provider.get("type") != "file" or not (provider.get("options") or {}).get("path"):
            problems.add(path, f"provider {provider.get('name')}: needs type: file and "
                               "options.path")


def _check_header(path, dashboard, problems):
    if not dashboard.get("uid"):
        problems.add(path, "no uid (links and provisioning need a stable one)")
    if not dashboard.get("title"):
        problems.add(path, "no title")
    if dashboard.get("schemaVersion") not in SCHEMA_VERSIONS:
        problems.add(path, f"schemaVersion {dashboard.get('schemaVersion')} is outside "
                           f"{SCHEMA_VERSIONS.start}..{SCHEMA_VERSIONS.stop - 1}")


def _check_variables(path, dashboard, uid, expr_check, problems):
    """{name: sample value} of the template variables (for substitution)."""
    variables = {}
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        name = variable.get("name")
        where = f"variable ${name}"
        if variable.get("type") == "query":
            _check_datasource(path, where, variable.get("datasource"), uid, problems)
            query = variable.get("query")
            query = query.get("query") if isinstance(query, dict) else query
            match = re.fullmatch(r"\s*label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)\s*",
                                 query or "")
            if not match:
                problems.add(path, f"{where}: query '{query}' is not label_values(SERIES, LABEL)")
            else:
                for problem in expr_check.check(match.group(1), "{{" + match.group(2) + "}}"):
                    problems.add(path, f"{where}: {problem}")
        variables[name] = variable.get("allValue") or "x1"
    job = next((v for v in (dashboard.get("templating") or {}).get("list") or []
                if v.get("name") == "job"), None)
    if job is None or "geotrain_job_info" not in json.dumps(job.get("query")):
        problems.add(path, "needs a 'job' template variable over geotrain_job_info")
    return variables


def _panels(panels):
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])


def _check_layout(path, panels, problems):
    seen, cells = {}, {}
    for panel in _panels(panels):
        pid = panel.get("id")
        if pid in seen:
            problems.add(path, f"panel id {pid} used by '{seen[pid]}' and '{panel.get('title')}'")
        seen[pid] = panel.get("title")
    for panel in panels:  # nested panels of collapsed rows are laid out when expanded
        pos = panel.get("gridPos") or {}
        x, y, w, h = (pos.get(k) for k in ("x", "y", "w", "h"))
        if not all(isinstance(v, int) for v in (x, y, w, h)) or w <= 0 or h <= 0:
            problems.add(path, f"panel '{panel.get('title')}': gridPos needs integers x, y, w, h")
            continue
        if x < 0 or x + w > 24:
            problems.add(path, f"panel '{panel.get('title')}': x + w = {x + w} is beyond 24")
        for cx in range(x, x + w):
            for cy in range(y, y + h):
                other = cells.get((cx, cy))
                if other is not None:
                    problems.add(path, f"panel '{panel.get('title')}' overlaps '{other}'")
                    break
                cells[(cx, cy)] = panel.get("title")
            else:
                continue
            break


def _check_datasource(path, where, datasource, uid, problems):
    if not isinstance(datasource, dict) or datasource.get("type") != "prometheus":
        problems.add(path, f"{where}: needs a prometheus datasource {{type, uid}}, has "
                           f"{json.dumps(datasource)}")
    elif uid and datasource.get("uid") != uid:
        problems.add(path, f"{where}: datasource uid {datasource.get('uid')} is not the "
                           f"provisioned one ({uid})")


def _substitute(text, variables, where, path, problems):
    def replace(match):
        name = match.group(1) or match.group(2) or match.group(3)
        if name in BUILTIN_VARIABLES:
            return BUILTIN_VARIABLES[name]
        if name in variables:
            return variables[name]
        problems.add(path, f"{where}: ${name} is no template variable")
        return "x1"
    return _VARIABLE.sub(replace, text)


def _check_panel(path, panel, uid, variables, expr_check, problems):
    """Returns [(name, expr with variables substituted)] for promtool."""
    kind, title = panel.get("type"), panel.get("title") or "(untitled)"
    where = f"panel '{title}' (id {panel.get('id')})"
    if kind not in PANEL_TYPES:
        problems.add(path, f"{where}: type '{kind}' is none of {', '.join(sorted(PANEL_TYPES))}")
    _substitute(title, variables, where, path, problems)
    if kind == "row":
        return []
    _check_datasource(path, where, panel.get("datasource"), uid, problems)
    for transformation in panel.get("transformations") or []:
        if transformation.get("id") not in TRANSFORMATIONS:
            problems.add(path, f"{where}: unknown transformation '{transformation.get('id')}'")
    targets = panel.get("targets") or []
    if not targets:
        problems.add(path, f"{where}: no targets")
    expressions, refs = [], set()
    for target in targets:
        ref = target.get("refId")
        if not ref or ref in refs:
            problems.add(path, f"{where}: target refId '{ref}' missing or repeated")
        refs.add(ref)
        if "datasource" in target:
            _check_datasource(path, f"{where} target {ref}", target["datasource"], uid, problems)
        expr = target.get("expr") or ""
        if not expr.strip():
            problems.add(path, f"{where} target {ref}: empty expr")
            continue
        concrete = _substitute(expr, variables, f"{where} target {ref}", path, problems)
        legend = target.get("legendFormat") or ""
        legend = "" if legend == "__auto" else legend
        _substitute(legend, variables, f"{where} target {ref} legend", path, problems)
        for problem in expr_check.check(concrete, legend):
            problems.add(path, f"{where} target {ref}: {problem}")
        expressions.append((f"panel_{panel.get('id')}_{ref}", where, ref, concrete))
    return expressions


def _check_coverage(path, catalogue, used, problems):
    for name in sorted(catalogue):
        if name not in used and name not in NOT_ON_DASHBOARD:
            problems.add(path, f"{name} (docs/metrics.md) is on no panel; draw it or add it to "
                               "NOT_ON_DASHBOARD in tests/deploy/deploycheck/grafana_dashboard.py "
                               "with a reason")
    for name in sorted(NOT_ON_DASHBOARD):
        if name not in catalogue:
            problems.add(path, f"NOT_ON_DASHBOARD lists {name}, which docs/metrics.md no longer "
                               "has")
        elif name in used:
            problems.add(path, f"NOT_ON_DASHBOARD lists {name}, but a panel draws it")


def _promtool_syntax(path, expressions, variables, problems):
    """Every expression, variables substituted, as a recording rule for `promtool check rules`:
    its parser is Prometheus' own."""
    promtool = shutil.which("promtool")
    if promtool is None or not expressions:
        return
    by_record = {record: (where, ref) for record, where, ref, _ in expressions}
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for record, _, _, expr in expressions:
        lines.append(f"      - record: geotrain_dashboard:{record}")
        lines.append(f"        expr: {json.dumps(expr)}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", prefix="geotrain-dashboard-",
                                     delete=False) as f:
        f.write("\n".join(lines) + "\n")
        rules = f.name
    try:
        run = subprocess.run([promtool, "check", "rules", rules], capture_output=True,
                             text=True, timeout=120)
    finally:
        os.unlink(rules)
    if run.returncode == 0:
        return
    output = (run.stdout + run.stderr).replace(rules, "(dashboard expressions)")
    named = False
    for record, (where, ref) in by_record.items():
        for line in output.splitlines():
            if f"geotrain_dashboard:{record}" in line or f'"{record}"' in line:
                problems.add(path, f"{where} target {ref}: promtool: {line.strip()}")
                named = True
    if not named:
        for line in output.splitlines():
            if line.strip():
                problems.add(path, f"promtool check rules on the panels' expressions: "
                                   f"{line.strip()}")
