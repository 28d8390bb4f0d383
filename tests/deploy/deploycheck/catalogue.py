"""The metric catalogue: the tables of docs/metrics.md (the contract the daemons export)."""
import re

from .problems import read_text

_ROW = re.compile(r"^\|\s*`(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)`\s*\|(?P<rest>.*)\|\s*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = {"counter", "gauge", "histogram", "summary"}


class Metric:
    def __init__(self, name, kind, labels, line):
        self.name = name
        self.kind = kind
        self.labels = labels
        self.line = line


def read_catalogue(path, problems):
    """{name: Metric} from every table row whose first cell is a `metric_name`."""
    text = read_text(path, problems)
    if text is None:
        return {}
    metrics = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _ROW.match(line)
        if not match:
            continue
        cells = [c.strip() for c in match.group("rest").split("|")]
        if len(cells) < 3:
            problems.add(path, f"line {number}: a metric row needs type, labels and meaning")
            continue
        name, kind = match.group("name"), cells[0]
        if kind not in TYPES:
            problems.add(path, f"line {number}: {name}: type '{kind}' is none of "
                               f"{', '.join(sorted(TYPES))}")
        # "state (idle, busy)": the parentheses list values, not labels.
        label_cell = re.sub(r"\([^)]*\)", "", cells[1])
        labels = set()
        for label in (part.strip() for part in label_cell.split(",")):
            if not label:
                continue
            if not _LABEL.match(label):
                problems.add(path, f"line {number}: {name}: cannot read label '{label}'")
                continue
            labels.add(label)
        if name in metrics:
            problems.add(path, f"line {number}: {name} is listed twice (first on line "
                               f"{metrics[name].line})")
        metrics[name] = Metric(name, kind, labels, number)
    if len(metrics) < 5:
        problems.add(path, "found fewer than 5 metric rows (| `name` | type | labels | meaning |)")
    return metrics


def resolve(name, catalogue):
    """The catalogue metric a series name belongs to (histogram _bucket/_sum/_count included),
    and whether the name is a histogram's _bucket series; (None, False) when unknown."""
    if name in catalogue:
        return catalogue[name], False
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            base = catalogue.get(name[: -len(suffix)])
            if base is None:
                continue
            if suffix == "_bucket" and base.kind != "histogram":
                return None, False
            if base.kind in ("histogram", "summary"):
                return base, suffix == "_bucket"
    return None, False
