"""deploy/systemd/: `systemd-analyze verify` and `security --offline`, the hardening the units
promise, and their agreement with the example environment files and the daemons' flags."""
import os
import re
import shutil
import subprocess
import tempfile

from .problems import read_text

UNITS = ("geotrain-coordinator.service", "geotrain-worker.service")
INSTALLED_BIN = "/usr/local/bin/"
# Highest overall exposure `systemd-analyze security --offline` may give, in tenths (its scale
# is 0.0 safe .. 10.0 exposed). Both units score about 2 today.
EXPOSURE_THRESHOLD = 30
# TimeoutStopSec must exceed the worker's --stop-grace-seconds by this much: after the grace the
# daemon still reaps its tasks, reports them STOPPED and closes its session.
STOP_MARGIN_SECONDS = 15

BOTH = {
    "User": "geotrain",
    "Restart": "on-failure",
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "RestrictNamespaces": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "KillMode": "mixed",
}
PER_UNIT = {
    "geotrain-coordinator.service": {"PrivateDevices": "yes", "MemoryDenyWriteExecute": "yes"},
    "geotrain-worker.service": {"PrivateDevices": "no"},
}
ADDRESS_FAMILIES = {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}
# What CUDA opens: each must be allowed by a path or by a char-<group> glob that covers it.
GPU_NODES = {"/dev/nvidiactl": "nvidiactl", "/dev/nvidia-uvm": "nvidia-uvm"}


def parse_unit(text):
    """{section: [(key, value, line)]}, continuation lines joined as systemd joins them."""
    sections, section, pending, start = {}, None, None, 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if pending is None and (not line or line[0] in "#;"):
            continue
        if pending is not None:
            if line and line[0] in "#;":
                continue
            line = pending + " " + line
        else:
            start = number
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = None
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            sections.setdefault(section, [])
            continue
        key, _, value = line.partition("=")
        sections.setdefault(section, []).append((key.strip(), value.strip(), start))
    return sections


def values(sections, section, key):
    return [v for k, v, _ in sections.get(section, []) if k == key]


def last(sections, section, key):
    found = values(sections, section, key)
    return found[-1] if found else None


def parse_timespan(text):
    """Seconds of a systemd time span ("40s", "1min 30s", "90"); None when unreadable."""
    units = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1, "sec": 1,
             "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60, "minutes": 60,
             "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600}
    total, text = 0.0, text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]+)", text)
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([a-z]+)|\s", "", text):
        return None
    for number, unit in parts:
        if unit not in units:
            return None
        total += float(number) * units[unit]
    return total


def read_env_file(path, problems):
    """{KEY: value} of a KEY=value file (comments and blank lines skipped)."""
    text = read_text(path, problems)
    if text is None:
        return {}
    env = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
            problems.add(path, f"line {number}: not KEY=value")
            continue
        if key in env:
            problems.add(path, f"line {number}: {key} set twice")
        env[key] = value
    return env


def check(source, bin_dir, problems):
    """Returns the tools that were missing (for the skip message)."""
    missing_tools = []
    directory = os.path.join(source, "deploy", "systemd")
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        missing_tools.append("systemd-analyze")
    with tempfile.TemporaryDirectory(prefix="geotrain-units-") as scratch:
        for unit in UNITS:
            path = os.path.join(directory, unit)
            text = read_text(path, problems)
            if text is None:
                continue
            sections = parse_unit(text)
            _check_policy(path, unit, sections, problems)
            env = _check_environment(path, directory, sections, problems)
            if unit == "geotrain-worker.service":
                _check_stop_timeout(path, sections, env, problems)
            program = _program(path, unit, sections, problems)
            if program is None:
                continue
            built = os.path.join(bin_dir, program)
            if not (os.path.isfile(built) and os.access(built, os.X_OK)):
                problems.add(path, f"--bin {bin_dir}: {program} is missing or not executable "
                                   f"(build it: ninja {program})")
                continue
            _check_flags(path, sections, built, problems)
            if analyze is not None:
                copy = os.path.join(scratch, unit)
                with open(copy, "w", encoding="utf-8") as f:
                    f.write(_point_at(text, bin_dir))
                _verify(analyze, path, copy, unit, problems)
        _check_sysusers(os.path.join(directory, "geotrain.sysusers.conf"), scratch, problems)
    return missing_tools


def _check_sysusers(path, scratch, problems):
    """The sysusers.d file creates the units' user (a dry run into an empty root)."""
    text = read_text(path, problems)
    if text is None:
        return
    if not re.search(r"^u\s+geotrain\s", text, re.MULTILINE):
        problems.add(path, "does not create the user geotrain the units run as")
    sysusers = shutil.which("systemd-sysusers")
    if sysusers is None:
        return
    root = os.path.join(scratch, "sysusers-root")
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    run = subprocess.run([sysusers, "--dry-run", f"--root={root}", os.path.abspath(path)],
                         capture_output=True, text=True, timeout=60)
    output = (run.stdout + run.stderr).splitlines()
    complaints = [line for line in output if not line.startswith(("Creating ", "Would write"))]
    if run.returncode != 0 or complaints:
        for line in complaints or [f"exit status {run.returncode}"]:
            problems.add(path, "systemd-sysusers --dry-run: " + line.strip())


def _program(path, unit, sections, problems):
    starts = values(sections, "Service", "ExecStart")
    if len(starts) != 1:
        problems.add(path, f"needs exactly one ExecStart=, has {len(starts)}")
        return None
    command = starts[0].lstrip("-+!@:").split()[0]
    expected = INSTALLED_BIN + unit[: -len(".service")]
    if command != expected:
        problems.add(path, f"ExecStart runs {command}, expected {expected}")
        return None
    return os.path.basename(command)


def _point_at(text, bin_dir):
    """The unit with ExecStart's program taken from bin_dir; every other line unchanged."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("ExecStart=" + INSTALLED_BIN):
            line = "ExecStart=" + os.path.join(os.path.abspath(bin_dir), "") + \
                line[len("ExecStart=" + INSTALLED_BIN):]
        out.append(line)
    return "".join(out)


def _check_policy(path, unit, sections, problems):
    expected = dict(BOTH, **PER_UNIT[unit])
    for key, want in expected.items():
        have = last(sections, "Service", key)
        if have != want:
            problems.add(path, f"[Service] {key}={want} expected, found "
                               f"{key}={have if have is not None else '(unset)'}")
    for key in ("StateDirectory", "TimeoutStopSec"):
        if not last(sections, "Service", key):
            problems.add(path, f"[Service] {key}= is missing")
    families = set(" ".join(values(sections, "Service", "RestrictAddressFamilies")).split())
    if families != ADDRESS_FAMILIES:
        problems.add(path, "RestrictAddressFamilies should be exactly "
                           f"{' '.join(sorted(ADDRESS_FAMILIES))}, is {' '.join(sorted(families))}")
    if unit == "geotrain-worker.service":
        if last(sections, "Service", "MemoryDenyWriteExecute") not in (None, "no"):
            problems.add(path, "MemoryDenyWriteExecute breaks CUDA's and oneDNN's JIT; "
                               "the worker must not set it")
        allowed = [v.split()[0] for v in values(sections, "Service", "DeviceAllow")]
        for node, group in GPU_NODES.items():
            by_path = node in allowed
            by_group = any(a.startswith("char-") and _glob(a[5:], group) for a in allowed)
            if not (by_path and by_group):
                problems.add(path, f"DeviceAllow must list {node} and a char- group matching "
                                   f"'{group}' (the GPU must stay reachable)")
    if not last(sections, "Install", "WantedBy"):
        problems.add(path, "[Install] WantedBy= is missing (systemctl enable would do nothing)")


def _glob(pattern, name):
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, name) is not None


def _check_environment(path, directory, sections, problems):
    """Every ${VAR} of ExecStart is set by Environment= or the example env file, and every line
    of the example env file is used. Returns the example env file's settings."""
    env_files = values(sections, "Service", "EnvironmentFile")
    if len(env_files) != 1:
        problems.add(path, f"needs one EnvironmentFile=, has {len(env_files)}")
        return {}
    example = os.path.join(directory, os.path.basename(env_files[0].lstrip("-")))
    if not os.path.isfile(example):
        problems.add(path, f"EnvironmentFile={env_files[0]}: no example "
                           f"{problems.rel(example)} in the repository")
        return {}
    env = read_env_file(example, problems)
    defaults = {}
    for assignment in values(sections, "Service", "Environment"):
        key, _, value = assignment.partition("=")
        defaults[key] = value
    used = set()
    for key in ("ExecStart", "ExecStartPre"):
        for command in values(sections, "Service", key):
            used |= set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", command))
            used |= set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", command))
    for name in sorted(used):
        if name not in defaults and name not in env:
            problems.add(path, f"ExecStart uses ${{{name}}}, which neither Environment= nor "
                               f"{problems.rel(example)} sets")
    for name in sorted(env):
        if name not in used and name not in defaults:
            problems.add(example, f"{name} is set but the unit never uses it")
    return dict(defaults, **env)


def _check_stop_timeout(path, sections, env, problems):
    grace_text = env.get("GEOTRAIN_STOP_GRACE_SECONDS")
    timeout_text = last(sections, "Service", "TimeoutStopSec")
    if grace_text is None or timeout_text is None:
        problems.add(path, "cannot compare TimeoutStopSec with GEOTRAIN_STOP_GRACE_SECONDS "
                           "(one is unset)")
        return
    timeout = parse_timespan(timeout_text)
    try:
        grace = float(grace_text)
    except ValueError:
        problems.add(path, f"GEOTRAIN_STOP_GRACE_SECONDS={grace_text} is not a number")
        return
    if timeout is None:
        problems.add(path, f"TimeoutStopSec={timeout_text}: cannot read the time span")
    elif timeout < grace + STOP_MARGIN_SECONDS:
        problems.add(path, f"TimeoutStopSec={timeout_text} must be at least "
                           f"--stop-grace-seconds ({grace_text}) + {STOP_MARGIN_SECONDS} s, or "
                           "systemd kills the tasks before the worker has stopped them")


def _check_flags(path, sections, program, problems):
    """Every --flag of ExecStart appears in the daemon's --help."""
    command = values(sections, "Service", "ExecStart")[0]
    try:
        run = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        problems.add(path, f"{program} --help did not run: {e}")
        return
    if run.returncode != 0:
        problems.add(path, f"{program} --help exited {run.returncode}")
        return
    help_text = run.stdout + run.stderr
    for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", command):
        if not re.search(re.escape(flag) + r"(?![a-z0-9-])", help_text):
            problems.add(path, f"ExecStart passes {flag}, which {os.path.basename(program)} "
                               "--help does not list")


def _verify(analyze, path, copy, unit, problems):
    """systemd-analyze verify, strict: it exits 0 on unknown keys and unparsable values, so any
    line it prints about the unit counts as a problem."""
    env = dict(os.environ, SYSTEMD_LOG_COLOR="0", SYSTEMD_PAGER="", LC_ALL="C")
    run = subprocess.run([analyze, "verify", copy], capture_output=True, text=True, timeout=120,
                         env=env)
    output = (run.stdout + run.stderr).splitlines()
    about_unit = [line for line in output if copy in line or unit in line]
    if run.returncode != 0 and not about_unit:
        about_unit = output or [f"exit status {run.returncode}"]
    for line in about_unit:
        problems.add(path, "systemd-analyze verify: " + line.replace(copy, unit).strip())
    security = subprocess.run(
        [analyze, "security", "--offline=true", f"--threshold={EXPOSURE_THRESHOLD}",
         "--no-pager", copy],
        capture_output=True, text=True, timeout=120, env=env)
    if "--offline" in security.stderr and "unrecognized" in security.stderr:
        problems.note(f"{unit}: this systemd-analyze has no security --offline; exposure not "
                      "rated")
        return
    if security.returncode != 0:
        score = re.search(r"Overall exposure level for [^:]*: ([0-9.]+)", security.stdout)
        problems.add(path, "systemd-analyze security --offline: overall exposure "
                           f"{score.group(1) if score else '?'} is above "
                           f"{EXPOSURE_THRESHOLD / 10:.1f}")
