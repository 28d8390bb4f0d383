"""deploy/docker/Dockerfile, parsed strictly: known instructions, continuation lines, FROM
first, stages, COPY sources that exist in the build context (the repository root) and are not
ignored, JSON forms, shell syntax of RUN, and a runtime stage that runs as non-root and exposes
the daemons' ports. dockerfile-parse (PyPI), when importable, must read the same instructions."""
import glob
import io
import json
import os
import re
import shlex
import shutil
import subprocess

from .problems import read_text

INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY",
                "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL",
                "HEALTHCHECK", "SHELL"}
PORTS = {"7070", "9400", "9401"}
COPY_FLAGS = {"--from", "--chown", "--chmod", "--link", "--parents", "--exclude",
              "--keep-git-dir", "--checksum"}


class Instruction:
    def __init__(self, line, name, value):
        self.line = line
        self.name = name
        self.value = value


def parse(text, path, problems):
    """[Instruction] in order; problems for anything Docker would refuse."""
    escape = "\\"
    lines = text.splitlines()
    # Parser directives: "# name=value" lines before anything else.
    for raw in lines:
        match = re.match(r"^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$", raw)
        if not match:
            break
        if match.group(1).lower() == "escape":
            escape = match.group(2)
            if escape not in ("\\", "`"):
                problems.add(path, f"escape directive '{escape}' is neither \\ nor `")
                escape = "\\"
    instructions, current, start, heredoc = [], None, 0, None
    for number, raw in enumerate(lines, 1):
        if heredoc is not None:
            current += "\n" + raw
            if raw.strip() == heredoc:
                heredoc = None
                instructions.append(_instruction(start, current, path, problems))
                current = None
            continue
        stripped = raw.strip()
        if current is None and (not stripped or stripped.startswith("#")):
            continue
        if current is not None and (not stripped or stripped.startswith("#")):
            continue  # Docker drops comment and empty lines inside a continuation
        if current is None:
            current, start = "", number
        continues = stripped.endswith(escape)
        piece = stripped[:-1] if continues else stripped
        current = (current + " " + piece).strip() if current else piece
        if continues:
            continue
        marker = re.search(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?", current)
        if marker and current.split()[0].upper() in ("RUN", "COPY", "ADD"):
            heredoc = marker.group(1)
            continue
        instructions.append(_instruction(start, current, path, problems))
        current = None
    if heredoc is not None:
        problems.add(path, f"line {start}: heredoc '{heredoc}' never ends")
    elif current is not None:
        problems.add(path, f"line {start}: the last instruction ends in a continuation "
                           f"('{escape}') with nothing after it")
    return [i for i in instructions if i is not None]


def _instruction(line, text, path, problems):
    name, _, value = text.partition(" ")
    if name.upper() not in INSTRUCTIONS:
        problems.add(path, f"line {line}: unknown instruction '{name}'")
        return None
    if name != name.upper():
        problems.add(path, f"line {line}: write instructions in capitals ('{name.upper()}')")
    if not value.strip():
        problems.add(path, f"line {line}: {name.upper()} without arguments")
    return Instruction(line, name.upper(), value.strip())


def check(source, problems):
    path = os.path.join(source, "deploy", "docker", "Dockerfile")
    text = read_text(path, problems)
    if text is None:
        return
    instructions = parse(text, path, problems)
    _cross_check(path, text, instructions, problems)
    ignore = _read_ignore(path + ".dockerignore", problems)
    stages = _check_stages(path, instructions, problems)
    current = -1  # index of the stage an instruction belongs to; COPY --from names an earlier
    for instruction in instructions:
        if instruction.name == "FROM":
            current += 1
        earlier = stages[: max(current, 0)]
        _check_instruction(path, source, instruction, earlier, ignore, problems)
    _check_runtime_stage(path, instructions, problems)
    for script in glob.glob(os.path.join(source, "deploy", "docker", "*.sh")):
        syntax = subprocess.run(["bash", "-n", script], capture_output=True, text=True)
        if syntax.returncode != 0:
            problems.add(script, "bash -n: " + syntax.stderr.strip())


def _cross_check(path, text, instructions, problems):
    try:
        from dockerfile_parse import DockerfileParser  # optional, PyPI dockerfile-parse
    except ImportError:
        return
    try:
        parser = DockerfileParser(fileobj=io.BytesIO(text.encode("utf-8")))
        theirs = [item["instruction"].upper() for item in parser.structure
                  if item["instruction"].upper() != "COMMENT"]
    except Exception as e:  # noqa: BLE001 - a third-party parser's failure is a finding
        problems.add(path, f"dockerfile-parse could not read it: {e}")
        return
    ours = [i.name for i in instructions]
    if theirs != ours:
        problems.add(path, f"dockerfile-parse reads {theirs}, this check reads {ours}")


def _check_stages(path, instructions, problems):
    """[stage names or None], in order; FROM must come first (after ARGs)."""
    stages = []
    seen_from = False
    for instruction in instructions:
        if instruction.name == "FROM":
            seen_from = True
            words = [w for w in instruction.value.split() if not w.startswith("--platform=")]
            if len(words) == 3 and words[1].upper() == "AS":
                name = words[2].lower()
                if name in stages:
                    problems.add(path, f"line {instruction.line}: stage '{name}' named twice")
                stages.append(name)
            elif len(words) == 1:
                stages.append(None)
            else:
                problems.add(path, f"line {instruction.line}: FROM IMAGE [AS NAME] expected, "
                                   f"got 'FROM {instruction.value}'")
                stages.append(None)
        elif not seen_from and instruction.name != "ARG":
            problems.add(path, f"line {instruction.line}: {instruction.name} before the first "
                               "FROM (only ARG may come first)")
    if not stages:
        problems.add(path, "no FROM")
    return stages


def _check_instruction(path, source, instruction, stages, ignore, problems):
    where = f"line {instruction.line}: {instruction.name}"
    value = instruction.value
    if instruction.name in ("CMD", "ENTRYPOINT", "RUN", "SHELL", "VOLUME") and \
            value.startswith("["):
        try:
            form = json.loads(value)
            if not isinstance(form, list) or not all(isinstance(s, str) for s in form):
                raise ValueError("not a list of strings")
        except ValueError as e:
            problems.add(path, f"{where}: the JSON form is not a JSON list of strings ({e})")
        return
    if instruction.name == "RUN" and "<<" not in value:
        _check_shell(path, where, value, problems)
    elif instruction.name in ("ENV", "LABEL"):
        try:
            words = shlex.split(value)
        except ValueError as e:
            problems.add(path, f"{where}: {e}")
            return
        if not all("=" in w for w in words) and not (instruction.name == "ENV" and
                                                        len(words) >= 2 and "=" not in words[0]):
            problems.add(path, f"{where}: expected KEY=VALUE pairs")
    elif instruction.name == "ARG":
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(=.*)?", value):
            problems.add(path, f"{where}: expected NAME or NAME=DEFAULT")
    elif instruction.name == "EXPOSE":
        for port in value.split():
            if not re.fullmatch(r"\d{1,5}(/(tcp|udp))?", port):
                problems.add(path, f"{where}: '{port}' is not PORT[/tcp|/udp]")
    elif instruction.name in ("COPY", "ADD"):
        _check_copy(path, source, where, instruction, stages, ignore, problems)


def _check_shell(path, where, command, problems):
    shell = shutil.which("sh")
    if shell is None:
        return
    run = subprocess.run([shell, "-n", "-c", command], capture_output=True, text=True)
    if run.returncode != 0:
        problems.add(path, f"{where}: shell syntax: {run.stderr.strip()}")


def _check_copy(path, source, where, instruction, stages, ignore, problems):
    try:
        words = shlex.split(instruction.value)
    except ValueError as e:
        problems.add(path, f"{where}: {e}")
        return
    flags = {}
    while words and words[0].startswith("--"):
        flag, _, flag_value = words.pop(0).partition("=")
        if flag not in COPY_FLAGS:
            problems.add(path, f"{where}: unknown flag {flag}")
        flags[flag] = flag_value
    if len(words) < 2:
        problems.add(path, f"{where}: needs SOURCE... DEST")
        return
    sources = words[:-1]
    origin = flags.get("--from")
    if origin is not None:
        if origin.lower() not in stages and not (origin.isdigit() and int(origin) < len(stages)) \
                and not re.search(r"[:/]", origin):
            problems.add(path, f"{where}: --from={origin} names no earlier stage")
        return
    for item in sources:
        if re.match(r"^[a-z]+://", item):
            continue  # ADD URL
        matches = glob.glob(os.path.join(source, item))
        if not matches:
            problems.add(path, f"{where}: source '{item}' does not exist in the build context "
                               "(the repository root)")
            continue
        for match in matches:
            relative = os.path.relpath(match, source)
            if _ignored(relative, ignore):
                problems.add(path, f"{where}: source '{relative}' is excluded by "
                                   "Dockerfile.dockerignore")


def _read_ignore(path, problems):
    """[(negated, regex)] of a .dockerignore; last match wins, as in Docker."""
    if not os.path.isfile(path):
        problems.add(path, "missing: without it the build context carries every build "
                           "directory")
        return []
    patterns = []
    for line in (read_text(path, problems) or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex += "(?:.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                regex += ".*"
                i += 2
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        patterns.append((negated, re.compile(regex + "(?:/.*)?")))
    return patterns


def _ignored(relative, patterns):
    ignored = False
    for negated, regex in patterns:
        if regex.fullmatch(relative):
            ignored = not negated
    return ignored


def _check_runtime_stage(path, instructions, problems):
    starts = [i for i, instruction in enumerate(instructions) if instruction.name == "FROM"]
    if not starts:
        return
    final = instructions[starts[-1]:]
    if len(starts) < 2:
        problems.add(path, "expected a multi-stage build (a build stage and a runtime stage)")
    users = [i.value.split(":")[0] for i in final if i.name == "USER"]
    if not users:
        problems.add(path, "the runtime stage sets no USER: the daemons would run as root")
    elif users[-1] in ("root", "0"):
        problems.add(path, f"the runtime stage runs as {users[-1]}")
    exposed = {p.split("/")[0] for i in final if i.name == "EXPOSE" for p in i.value.split()}
    if not PORTS <= exposed:
        problems.add(path, f"the runtime stage exposes {' '.join(sorted(exposed)) or 'nothing'}; "
                           f"expected {' '.join(sorted(PORTS))}")
