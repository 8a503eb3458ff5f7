"""Deploy through Ansible: one playbook per driver, one role per component.

Roles live in ``playbooks/roles/<component>/``; providers only change the
inventory. Each playbook run writes its whole output to a log file in the run
directory; a failure raises with the path of that log.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

from . import REPO_ROOT
from .errors import HarnessError
from .tools import require_tool

PLAYBOOKS = REPO_ROOT / "playbooks"


def ansible_env() -> dict:
    """The environment of ``ansible-playbook``: the project's config, plain output."""
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0", "PYTHONUNBUFFERED": "1"})
    return env


def _stop(proc: subprocess.Popen) -> None:
    """Terminate ``proc``'s process group, then kill it if it does not exit within 10 s."""
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
_FAILURE = re.compile(r"^(?:fatal|failed): \[(?P<host>[^\]]+)\](?: \(item=.*?\))?(?:: (?P<kind>UNREACHABLE|FAILED)!)? => (?P<body>\{.*)$")


def ansible_failures(log: Path) -> list[dict]:
    """The hosts a playbook failed on, in order: ``{host, kind, msg}`` (kind UNREACHABLE or FAILED)."""
    failures = []
    try:
        lines = Path(log).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return failures
    for line in lines:
        m = _FAILURE.match(line.strip())
        if not m:
            continue
        try:
            body = json.loads(m["body"])
            msg = body.get("msg") or body.get("stderr") or body.get("module_stderr") or ""
        except ValueError:
            msg = m["body"]
        failures.append({"host": m["host"], "kind": m["kind"] or "FAILED", "msg": " ".join(str(msg).split())[:300]})
    return failures


def _failure_text(log: Path) -> str:
    """``host: reason`` of the first failure in a playbook log ("" when none is found)."""
    failures = ansible_failures(log)
    if not failures:
        return ""
    f = failures[0]
    what = "unreachable" if f["kind"] == "UNREACHABLE" else "failed"
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    return f": host {f['host']} {what}: {f['msg']}{more}"


def run_playbook(playbook: str, inventory: Path, variables: dict, log: Path, *,
                 timeout: float | None = None, tags: list[str] | None = None) -> None:
    """Run ``playbooks/<playbook>`` with ``variables`` as extra vars, output to ``log``.

    The playbook runs in its own session, so a Ctrl-C at the terminal reaches
    only the harness, which then stops the playbook and tears down by PID.
    Raises HarnessError (with the log path) when it fails or exceeds ``timeout``.
    """
    exe = require_tool("ansible-playbook")
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    vars_file = log.with_suffix(".vars.json")
    vars_file.write_text(json.dumps(variables, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    cmd = [exe, "-i", str(inventory), str(PLAYBOOKS / playbook), "-e", f"@{vars_file}"]
    if tags:
        cmd += ["--tags", ",".join(tags)]
    with open(log, "a", encoding="utf-8") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=ansible_env(), cwd=PLAYBOOKS, start_new_session=True)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise HarnessError(f"playbook {playbook} did not finish within {timeout:.0f} s", log=str(log)) from None
        except BaseException:
            _stop(proc)
            raise
    if rc != 0:
        raise HarnessError(f"playbook {playbook} failed (exit {rc}){_failure_text(log)}", log=str(log))
