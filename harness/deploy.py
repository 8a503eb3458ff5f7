"""Deploy through Ansible: one playbook per driver, one role per component.

Shared playbooks and roles live in ``playbooks/`` and ``playbooks/roles/``;
a system's own in ``systems/<system>/playbooks/`` and ``systems/<system>/roles/``
(found by discovery: Ansible's roles path lists every system's roles folder).
Providers only change the inventory. Each playbook run writes its whole output to a log file in the run
directory; a failure raises with the path of that log.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from . import REPO_ROOT
from .errors import HarnessError
from .timing import mark_playbook, timings_path
from .tools import ansible_strategy, require_tool

PLAYBOOKS = REPO_ROOT / "playbooks"
SYSTEMS = REPO_ROOT / "systems"


def roles_dirs() -> list[Path]:
    """Where roles are found: the shared ``playbooks/roles`` first, then each system's ``roles/``."""
    return [PLAYBOOKS / "roles", *sorted(SYSTEMS.glob("*/roles"))]


def role_dir(role: str) -> Path | None:
    """The folder of ``role`` (None if no roles folder has it)."""
    return next((d / role for d in roles_dirs() if (d / role).is_dir()), None)


def role_defaults(role: str) -> dict:
    """``defaults/main.yml`` of ``role`` ({} when it has none)."""
    import yaml

    folder = role_dir(role)
    path = folder / "defaults" / "main.yml" if folder else None
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path and path.is_file() else {}


#: A role's own file of what the harness checks before deploying it and how it lays out its instances
#: (its format: harness/preflight.py; ``instances_over_hosts``: harness/topology.py).
PREFLIGHT_META = "meta/preflight.yml"


def role_preflight(role: str) -> dict:
    """A role's ``meta/preflight.yml`` ({} when it has none)."""
    import yaml

    folder = role_dir(role)
    path = folder / PREFLIGHT_META if folder else None
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path and path.is_file() else {}


def playbook_path(playbook: str) -> Path:
    """``playbooks/<playbook>``, else the one system playbook of that name (``systems/*/playbooks/``)."""
    shared = PLAYBOOKS / playbook
    if shared.is_file():
        return shared
    found = sorted(SYSTEMS.glob(f"*/playbooks/{playbook}"))
    if len(found) != 1:
        raise HarnessError(f"playbook {playbook}: " + ("not in playbooks/ nor in any systems/*/playbooks/" if not found
                                                       else "in several systems: " + ", ".join(map(str, found))))
    return found[0]


#: The harness's Ansible callback: a retried task's ``progress`` shown in the playbook's log (harness/progress.py).
CALLBACKS = PLAYBOOKS / "callback_plugins"


#: The harness's strategy plugins.
STRATEGIES = PLAYBOOKS / "strategy_plugins"


def _strategy_env() -> dict:
    strategy = ansible_strategy()
    if strategy == "linear":
        return {"ANSIBLE_STRATEGY": "linear"}
    if importlib.util.find_spec("ansible_mitogen") is None:
        raise HarnessError("Mitogen for Ansible is not installed (run `invoke setup`), "
                           "or set FABRICREPRO_ANSIBLE_STRATEGY=linear for Ansible's own strategy")
    return {"ANSIBLE_STRATEGY": strategy, "ANSIBLE_STRATEGY_PLUGINS": str(STRATEGIES)}


def ansible_env() -> dict:
    """The environment of ``ansible-playbook``: the project's config, every roles folder, plain output,
    the progress callback, the strategy (``ansible_strategy``)."""
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_ROLES_PATH": os.pathsep.join(str(d) for d in roles_dirs()),
                "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS), "ANSIBLE_CALLBACKS_ENABLED": "fabricrepro_progress",
                "ANSIBLE_FORCE_COLOR": "0", "PYTHONUNBUFFERED": "1", **_strategy_env()})
    return env


def stop_playbook(proc: subprocess.Popen) -> None:
    """Terminate a started playbook's process group, then kill it if it does not exit within 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


#: Ansible's line for a task that failed on a host: ``fatal: [peer]: FAILED! => {...}``.
_FAIL_LINE = re.compile(r"^(?:fatal|failed): \[(?P<host>[^\]]+)\](?: \(item=.*?\))?"
                        r"(?:: (?P<kind>UNREACHABLE|FAILED)!)? => (?P<json>\{.*\})\s*$")


def task_reason(result: dict) -> str:
    """One line from an Ansible task result: the assertion's message, or the command and its stderr."""
    msg = str(result.get("msg") or "").strip()
    out = str(result.get("stderr") or result.get("stdout") or "").strip()
    if result.get("module_stderr"):  # the module did not run (no Python, wrong interpreter...): say why
        msg = f"{msg}: {' '.join(str(result['module_stderr']).split())[:300]}"
    if result.get("cmd") and (not msg or msg == "non-zero return code"):
        cmd = result["cmd"] if isinstance(result["cmd"], str) else " ".join(map(str, result["cmd"]))
        return f"`{cmd}` exited {result.get('rc')}: {out or msg}"
    if msg in ("", "non-zero return code") and out:
        return out
    return msg or out or "failed"


def failed_results(text: str) -> dict[str, dict]:
    """``{host: task result}`` of the ``fatal:``/``failed:`` lines of an ansible-playbook log (first per host);
    an unreachable host's result has ``unreachable: true``."""
    out: dict[str, dict] = {}
    for line in text.splitlines():
        m = _FAIL_LINE.match(line.strip())
        if not m or m["host"] in out:
            continue
        try:
            result = json.loads(m["json"])
        except ValueError:
            result = {"msg": m["json"]}
        if m["kind"] == "UNREACHABLE":
            result["unreachable"] = True
        out[m["host"]] = result
    return out


def ansible_failures(text: str) -> dict[str, str]:
    """``{host: reason}`` of the ``fatal:``/``failed:`` lines of an ansible-playbook log (first per host)."""
    return {host: ("unreachable: " + task_reason(result)) if result.get("unreachable") else task_reason(result)
            for host, result in failed_results(text).items()}


def _failure_text(log: Path) -> str:
    """``: host H: reason`` of the first host a playbook log says failed ("" when none is named)."""
    try:
        failures = ansible_failures(Path(log).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
    if not failures:
        return ""
    host, reason = next(iter(failures.items()))
    more = f" (and {len(failures) - 1} more host(s))" if len(failures) > 1 else ""
    what = reason if reason.startswith("unreachable: ") else f"failed: {reason}"
    return f": host {host} {what}{more}"


def start_playbook(playbook: str, inventory: Path, variables: dict, log: Path, *,
                   tags: list[str] | None = None) -> subprocess.Popen:
    """Start ``playbook`` (``playbook_path``) with ``variables`` as extra vars, its output appended to ``log``,
    its launch and each task's start to ``timing.timings_path(log)`` (read by ``timing.playbook_times``).

    It runs in its own session, so a Ctrl-C at the terminal reaches only the
    harness; stop it with ``stop_playbook``.
    """
    exe = require_tool("ansible-playbook")
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    vars_file = log.with_suffix(".vars.json")
    vars_file.write_text(json.dumps(variables, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    cmd = [exe, "-i", str(inventory), str(playbook_path(playbook)), "-e", f"@{vars_file}"]
    if tags:
        cmd += ["--tags", ",".join(tags)]
    timings = timings_path(log)
    timings.unlink(missing_ok=True)
    mark_playbook(timings, "launched")
    with open(log, "a", encoding="utf-8") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**ansible_env(), "FABRICREPRO_TIMINGS": str(timings)}, cwd=PLAYBOOKS,
                                start_new_session=True)


#: Seconds between two calls of ``run_playbook``'s ``poll`` while the playbook runs.
POLL_S = 0.5


def run_playbook(playbook: str, inventory: Path, variables: dict, log: Path, *,
                 timeout: float | None = None, tags: list[str] | None = None,
                 poll: Callable[[], None] | None = None) -> None:
    """Run ``playbooks/<playbook>`` with ``variables`` as extra vars, output to ``log``.

    The playbook runs in its own session, so a Ctrl-C at the terminal reaches
    only the harness, which then stops the playbook and tears down by PID.
    ``poll`` is called every ``POLL_S`` while it runs (progress, the point's
    watcher): a HarnessError it raises stops the playbook and is raised.
    Raises HarnessError (with the log path) when it fails or exceeds ``timeout``.
    """
    log = Path(log)
    proc = start_playbook(playbook, inventory, variables, log, tags=tags)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise HarnessError(f"playbook {playbook} did not finish within {timeout:.0f} s", log=str(log))
            try:
                rc = proc.wait(POLL_S if left is None else min(POLL_S, left))
                break
            except subprocess.TimeoutExpired:
                if poll:
                    poll()
    except BaseException:
        stop_playbook(proc)
        raise
    finally:
        mark_playbook(timings_path(log), "exited")
    if rc != 0:
        raise HarnessError(f"playbook {playbook} failed (exit {rc}){_failure_text(log)}", log=str(log))
