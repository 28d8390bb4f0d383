"""A small PromQL scanner: which metric names, label names and functions an expression uses.

It is no full parser (promtool checks the syntax where it is installed); it knows enough of the
grammar to tell a metric from a function, a keyword or a label, so that every name an
expression reads can be checked against the catalogue.
"""
import re

from .catalogue import resolve

AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
    "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
    "delta", "deriv", "exp", "floor", "histogram_avg", "histogram_count", "histogram_fraction",
    "histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum",
    "holt_winters", "hour", "idelta", "increase", "irate", "label_join", "label_replace",
    "last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time",
    "minute", "month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad",
    "rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt",
    "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time",
    "timestamp", "vector", "year",
}
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
OPERATOR_KEYWORDS = {"and", "or", "unless", "atan2", "bool"}
CONSTANTS = {"inf", "nan"}
MATCH_OPS = {"=", "!=", "=~", "!~"}
# Series Prometheus makes itself for every target.
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                     "scrape_samples_post_metric_relabeling", "scrape_series_added"}

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<duration>\d+(?:ms|s|m|h|d|w|y)(?:\d+(?:ms|s|m|h|d|w|y))*(?![a-zA-Z0-9_]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^=<>(){},@])
    """,
    re.VERBOSE,
)


class Scan:
    def __init__(self):
        self.metrics = []    # metric names, in order
        self.matchers = []   # (metric or None, label) of every selector matcher
        self.label_lists = []  # labels named in by/without/on/ignoring/group_left/group_right
        self.errors = []


def tokenize(expr):
    tokens, pos = [], 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if not match:
            raise ValueError(f"cannot read '{expr[pos:pos + 20]}' at character {pos}")
        pos = match.end()
        if match.lastgroup != "ws":
            tokens.append((match.lastgroup, match.group()))
    return tokens


def scan(expr):
    result = Scan()
    try:
        tokens = tokenize(expr)
    except ValueError as e:
        result.errors.append(str(e))
        return result
    depth = 0
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else None
        if kind == "op" and text in "()":
            depth += 1 if text == "(" else -1
            if depth < 0:
                result.errors.append("unbalanced ')'")
                return result
            i += 1
            continue
        if kind == "op" and text == "{":
            i = _selector(tokens, i, None, result)
            continue
        if kind != "ident":
            i += 1
            continue
        if text in LABEL_LIST_KEYWORDS:
            if following == "(":
                i = _label_list(tokens, i + 1, result)
            elif text in ("by", "without", "on", "ignoring"):
                result.errors.append(f"'{text}' needs a label list in parentheses")
                i += 1
            else:
                i += 1  # group_left / group_right without labels
            continue
        if text.lower() in OPERATOR_KEYWORDS or text.lower() in CONSTANTS:
            i += 1
            continue
        if text == "offset":
            i += 2  # the duration after it
            continue
        if following == "(" or text in AGGREGATIONS:
            if text not in FUNCTIONS and text not in AGGREGATIONS:
                result.errors.append(f"unknown function '{text}'")
            i += 1
            continue
        result.metrics.append(text)
        i += 1
        if i < len(tokens) and tokens[i][1] == "{":
            i = _selector(tokens, i, text, result)
    if depth != 0:
        result.errors.append("unbalanced '('")
    return result


def _selector(tokens, i, metric, result):
    """Reads {label op "value", ...} from tokens[i] == '{'; returns the index after '}'."""
    i += 1
    while i < len(tokens) and tokens[i][1] != "}":
        kind, text = tokens[i]
        if kind == "ident":
            op = tokens[i + 1][1] if i + 1 < len(tokens) else None
            value = tokens[i + 2][0] if i + 2 < len(tokens) else None
            if op not in MATCH_OPS or value != "string":
                result.errors.append(f"matcher on '{text}' is not label op \"value\"")
            result.matchers.append((metric, text))
            i += 3
        elif text == ",":
            i += 1
        else:
            result.errors.append(f"unexpected '{text}' in a selector")
            i += 1
    if i >= len(tokens):
        result.errors.append("unclosed '{'")
    return i + 1


def _label_list(tokens, i, result):
    """Reads (a, b, ...) from tokens[i] == '('; returns the index after ')'."""
    i += 1
    while i < len(tokens) and tokens[i][1] != ")":
        kind, text = tokens[i]
        if kind == "ident":
            result.label_lists.append(text)
        elif text != ",":
            result.errors.append(f"unexpected '{text}' in a label list")
        i += 1
    if i >= len(tokens):
        result.errors.append("unclosed label list")
    return i + 1


class ExprCheck:
    """Checks expressions against the catalogue and remembers which metrics they used."""

    def __init__(self, catalogue, target_labels):
        self.catalogue = catalogue
        self.target_labels = set(target_labels)
        self.used = set()

    def check(self, expr, legend=""):
        """The problems of one expression (strings, empty when fine)."""
        result = scan(expr)
        problems = list(result.errors)
        available = set(self.target_labels)
        for name in result.metrics:
            if name in PROMETHEUS_SERIES:
                continue
            metric, bucket = resolve(name, self.catalogue)
            if metric is None:
                problems.append(f"metric {name} is not in docs/metrics.md")
                continue
            self.used.add(metric.name)
            available |= metric.labels | ({"le"} if bucket else set())
        if not result.metrics:
            problems.append("reads no metric")
        for metric, label in result.matchers:
            if label == "__name__":
                continue
            if metric is None or metric in PROMETHEUS_SERIES:
                allowed = available
            else:
                found, bucket = resolve(metric, self.catalogue)
                if found is None:
                    continue  # already reported
                allowed = found.labels | self.target_labels | ({"le"} if bucket else set())
            if label not in allowed:
                where = f"{metric}{{{label}=...}}" if metric else f"{{{label}=...}}"
                problems.append(f"{where}: label '{label}' is not one of "
                                f"{', '.join(sorted(allowed))}")
        for label in result.label_lists:
            if label not in available:
                problems.append(f"label '{label}' in by/on/ignoring/group_* is on none of the "
                                f"metrics read ({', '.join(sorted(available))})")
        for label in re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend or ""):
            if label not in available:
                problems.append(f"legend names label '{label}', which none of the metrics read "
                                "carries")
        return problems
