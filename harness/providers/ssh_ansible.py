"""The ssh provider's use of Ansible outside playbooks: reading the user's inventory, ad hoc commands on hosts.

Both run Ansible's own tools, so the inventory is read exactly as Ansible reads
it (group and host variables, ``group_vars/``, INI) and a host is reached
exactly as the playbooks will reach it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import yaml

from ..deploy import PLAYBOOKS, ansible_env, task_reason
from ..errors import HarnessError
from ..tools import require_tool

#: ssh arguments of checks and of down(): a new connection each time. A master connection kept
#: by an earlier playbook (ControlPersist) would answer for a host whose sshd is gone, or hang
#: on one whose network is gone, where a new connection fails within Ansible's timeout.
FRESH_SSH_ARGS = "-C -o ControlMaster=no -o ControlPath=none"


def load_inventory(path: Path) -> tuple[dict[str, list[str]], dict[str, dict]]:
    """``({group: [host, ...]}, {host: {var: value}})`` of an Ansible inventory.

    A group's hosts are its own, in inventory order, then those of its child
    groups; variables are merged as Ansible merges them (``all`` < parent group
    < group < host). Raises HarnessError for a missing or unparseable file.
    """
    path = Path(path)
    if not path.is_file():
        raise HarnessError(f"inventory {path} not found",
                           hint="give the inventory of your servers with --inventory "
                                "(see infra/inventories/*.example.yml)")
    exe = require_tool("ansible-inventory")
    env = ansible_env()
    # without this, an unparseable file is only a warning and the inventory is "localhost"
    env["ANSIBLE_INVENTORY_UNPARSED_FAILED"] = "True"
    # run beside the inventory: from playbooks/ it would add the harness's group_vars to the user's
    proc = subprocess.run([exe, "-i", str(path.resolve()), "--list"], capture_output=True, text=True,
                          env=env, cwd=path.resolve().parent, timeout=120, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"inventory {path} cannot be parsed: {_inventory_error(path, proc.stderr)}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError as e:
        raise HarnessError(f"inventory {path}: ansible-inventory printed no JSON ({e})") from None
    hostvars = doc.get("_meta", {}).get("hostvars", {})

    def members(group: str, seen: set[str]) -> list[str]:
        if group in seen:
            return []
        seen.add(group)
        out = list(doc.get(group, {}).get("hosts", []))
        for child in doc.get(group, {}).get("children", []):
            out += [h for h in members(child, seen) if h not in out]
        return out

    groups = {g: members(g, set()) for g in doc if g not in ("_meta",)}
    hosts = {h for hs in groups.values() for h in hs}
    return groups, {h: dict(hostvars.get(h, {})) for h in hosts}


def _inventory_error(path: Path, stderr: str) -> str:
    """The most useful line of ansible-inventory's complaint (a YAML error with its line if any)."""
    if path.suffix in (".yml", ".yaml"):
        try:
            yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            return "YAML: " + " ".join(str(e).split())
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith(("[ERROR]", "[WARNING]: Failed to parse"))]
    return " | ".join((picked or lines)[-3:]) or "ansible-inventory failed"


def adhoc(inventory: Path, pattern: str, command: str, out_dir: Path, timeout_s: float = 5,
          become: bool = False) -> dict[str, dict]:
    """Run a shell ``command`` with Ansible's ``raw`` module on ``pattern``; ``{host: result}``.

    ``raw`` needs no Python on the host, so it tells "cannot connect" apart from
    everything the preflight checks. It runs with Ansible's own strategy and ssh
    connection: the provider's first contact with a host, whose ``accept-new``
    records the host's key (Mitogen's connection would only check it, ssh.py).
    Results come from the ``tree`` callback
    (one JSON file per host in ``out_dir/tree``); a host without a result gets
    ``{"unreachable": True, "msg": "no result"}``.
    """
    exe = require_tool("ansible")
    out_dir = Path(out_dir)
    tree = out_dir / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True, exist_ok=True)
    env = ansible_env()
    env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "True", "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
                "ANSIBLE_CALLBACK_TREE_DIR": str(tree), "ANSIBLE_DEPRECATION_WARNINGS": "False",
                "ANSIBLE_SSH_ARGS": FRESH_SSH_ARGS, "ANSIBLE_STRATEGY": "linear"})
    argv = [exe, pattern, "-i", str(inventory), "-m", "ansible.builtin.raw", "-a", command,
            "-T", str(max(1, int(timeout_s)))] + (["--become"] if become else [])
    with open(out_dir / "ansible.log", "a", encoding="utf-8") as logf:
        logf.write("$ " + shlex.join(argv) + "\n")
        logf.flush()
        try:
            subprocess.run(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                           cwd=PLAYBOOKS, timeout=timeout_s * 4 + 60, check=False, start_new_session=True)
        except subprocess.TimeoutExpired:
            logf.write("(timed out)\n")
    hosts = _hosts_of(inventory, pattern)
    results = {}
    for h in hosts:
        try:
            results[h] = json.loads((tree / h).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            results[h] = {"unreachable": True, "msg": f"no result from Ansible (see {out_dir / 'ansible.log'})"}
    return results


def _hosts_of(inventory: Path, pattern: str) -> list[str]:
    """Hosts of our own generated inventory matching a comma-separated list of names or ``all``."""
    doc = yaml.safe_load(Path(inventory).read_text(encoding="utf-8")) or {}
    names = list((doc.get("all", {}) or {}).get("hosts", {}) or {})
    return names if pattern == "all" else [h for h in pattern.split(",") if h in names]


def adhoc_reason(result: dict) -> str | None:
    """Why an ``adhoc`` result is a failure, or None when it succeeded."""
    if result.get("unreachable"):
        return str(result.get("msg", "unreachable")).removeprefix("Task failed: ").strip()
    if result.get("failed") or result.get("rc", 0) != 0:
        return task_reason(result)
    return None

