"""deploy/cloud-init/worker.yaml: the #cloud-config header, valid YAML with known top-level
keys, well-formed write_files, a worker.env with the same settings as deploy/systemd/worker.env,
shell scripts that pass `bash -n`, and repository paths they install from that exist."""
import os
import re
import subprocess
import tempfile

from .problems import load_yaml, read_text, yaml
from .systemd_units import read_env_file

# Top-level keys of the cloud-config modules a Debian 12 image runs (cloud-init 22.4).
KNOWN_KEYS = {
    "apt", "bootcmd", "ca_certs", "chpasswd", "disable_root", "disk_setup", "fs_setup",
    "groups", "growpart", "hostname", "fqdn", "locale", "manage_etc_hosts", "mounts",
    "ntp", "package_reboot_if_required", "package_update", "package_upgrade", "packages",
    "power_state", "preserve_hostname", "resize_rootfs", "runcmd", "ssh_authorized_keys",
    "ssh_pwauth", "swap", "timezone", "users", "write_files", "final_message", "wireguard",
}


def check(source, problems):
    path = os.path.join(source, "deploy", "cloud-init", "worker.yaml")
    text = read_text(path, problems)
    if text is None:
        return
    if text.splitlines()[0:1] != ["#cloud-config"]:
        problems.add(path, "the first line must be exactly '#cloud-config'")
    if yaml is None:
        return
    config = load_yaml(path, problems)
    if config is None:
        return
    if not isinstance(config, dict):
        problems.add(path, "the document must be a mapping")
        return
    for key in sorted(set(config) - KNOWN_KEYS):
        problems.add(path, f"unknown top-level key '{key}'")
    for package in config.get("packages") or []:
        if not isinstance(package, str):
            problems.add(path, f"packages: {package!r} is not a package name")
    users = config.get("users") or []
    if not any(isinstance(u, dict) and u.get("name") == "geotrain" for u in users):
        problems.add(path, "users: no geotrain user")
    files = {}
    for entry in config.get("write_files") or []:
        if not isinstance(entry, dict) or not str(entry.get("path", "")).startswith("/") or \
                not isinstance(entry.get("content"), str):
            problems.add(path, f"write_files: every entry needs an absolute path and text "
                               f"content: {entry!r:.80}")
            continue
        permissions = entry.get("permissions")
        if permissions is not None and not (isinstance(permissions, str) and
                                            re.fullmatch(r"0?[0-7]{3,4}", permissions)):
            problems.add(path, f"write_files {entry['path']}: permissions {permissions!r} must "
                               "be a quoted octal string such as \"0644\"")
        files[entry["path"]] = entry["content"]
    for command in config.get("runcmd") or []:
        if not (isinstance(command, str) or
                (isinstance(command, list) and all(isinstance(c, str) for c in command))):
            problems.add(path, f"runcmd: {command!r} is neither a string nor a list of strings")
    _check_worker_env(path, source, files.get("/etc/geotrain/worker.env"), problems)
    for target, content in files.items():
        if content.startswith("#!") and "bash" in content.splitlines()[0]:
            _check_script(path, source, target, content, problems)


def _check_worker_env(path, source, content, problems):
    if content is None:
        problems.add(path, "write_files has no /etc/geotrain/worker.env")
        return
    example = os.path.join(source, "deploy", "systemd", "worker.env")
    with tempfile.NamedTemporaryFile("w", suffix=".env", delete=False) as f:
        f.write(content)
        written = f.name
    try:
        ours = read_env_file(written, problems)
    finally:
        os.unlink(written)
    theirs = read_env_file(example, problems)
    for key in sorted(set(theirs) - set(ours)):
        problems.add(path, f"worker.env lacks {key}, which {problems.rel(example)} sets")
    for key in sorted(set(ours) - set(theirs)):
        problems.add(path, f"worker.env sets {key}, which {problems.rel(example)} does not know")


def _check_script(path, source, target, content, problems):
    run = subprocess.run(["bash", "-n"], input=content, capture_output=True, text=True)
    if run.returncode != 0:
        problems.add(path, f"{target}: bash -n: {run.stderr.strip()}")
    for relative in sorted(set(re.findall(r"\b((?:deploy|docs|scripts)/[\w./-]+\w)", content))):
        if not os.path.exists(os.path.join(source, relative)):
            problems.add(path, f"{target} installs {relative}, which the repository lacks")
