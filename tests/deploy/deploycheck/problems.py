"""Problems found by the checks, and the optional YAML parser they share."""
import os

try:  # python3-yaml; the checks that need it say so and skip their YAML part without it
    import yaml
except ImportError:  # pragma: no cover - depends on the machine
    yaml = None


class Problems:
    """Collects 'FILE: problem' lines; FILE is shown relative to the source tree."""

    def __init__(self, source):
        self.source = source
        self.lines = []
        self.notes = []

    def rel(self, path):
        try:
            return os.path.relpath(path, self.source)
        except ValueError:
            return path

    def add(self, path, message):
        self.lines.append(f"{self.rel(path)}: {message}")

    def note(self, message):
        """Something that was not checked, and why (printed, never a failure)."""
        self.notes.append(message)

    def count(self):
        return len(self.lines)


def load_yaml(path, problems):
    """The parsed document, or None (a problem is recorded when the file is not valid YAML)."""
    if yaml is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as e:
        problems.add(path, f"cannot read: {e.strerror}")
    except yaml.YAMLError as e:
        problems.add(path, f"not valid YAML: {e}".replace("\n", " "))
    return None


def read_text(path, problems):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        problems.add(path, f"cannot read: {e.strerror}")
        return None
