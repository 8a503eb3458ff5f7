#!/usr/bin/python
"""Ansible module of the process role: watch a point's started components on one host until one fails.

The process role's ``start`` leaves a marker ``<name>.watch`` beside each
component's PID file (one line per start: ``background <log name>`` for a
server, ``completion <log name>`` for a command run to completion), and a
server's wrapper writes its exit status to ``<name>.exit`` when it ends.
``stop`` removes the marker before it signals the process, so a component the
playbook or the teardown stops on purpose is never reported.

Every ``interval_s`` this module reads what each marked component's log has
gained since the last look and matches every new line against ``patterns``
(the fatal log patterns of the point's system, harness/validity.py), and
checks each server's exit status. It fails, naming component, host and the
log line, as soon as a server has exited with a non-zero status (or by a
signal, or without a status) or a log line matches; it ends without failing
when the point's working directory is removed (teardown), when the
connection that started it is gone (its parent process changed: a stopped
playbook over ssh leaves no poller behind on the host) or ``deadline_s``
has passed. harness/watch.py runs it through ``playbooks/watch.yml`` beside
the driver's playbook and stops the point on its failure.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import time

DOCUMENTATION = r"""
module: process_watch
short_description: Fail as soon as a component started by the process role exits or logs a fatal line
options:
  work_dir: {type: path, required: true, description: "The point's working directory on the host."}
  host: {type: str, required: true, description: "The host's inventory name, for the message."}
  patterns:
    type: list
    elements: dict
    default: []
    description: "Fatal log patterns: name, regex, meaning, optional components / components_except (log file stems)."
  interval_s: {type: float, default: 1.0, description: "Seconds between two looks."}
  deadline_s: {type: float, required: true, description: "Seconds after which the watch ends without failing."}
"""

#: Where the process role's markers are: <work>/<role>/<name>.watch, or an instance's <work>/<role>/<i>/<name>.watch.
MARKER_GLOBS = ("*/*.watch", "*/*/*.watch")
#: Looks a dead server without a recorded exit status is given before it is reported (its wrapper may be writing).
NO_STATUS_GRACE_LOOKS = 2


def exit_text(status: int) -> str:
    """``exited with status 1`` or ``killed by SIGKILL`` for a shell's exit status (128 + signal)."""
    if status > 128:
        try:
            return f"killed by {signal.Signals(status - 128).name} (status {status})"
        except ValueError:
            pass
    return f"exited with status {status}"


class HostWatch:
    """What one host's components did since the last look (pure but for the files it reads)."""

    def __init__(self, work_dir: str, host: str, patterns: list[dict]):
        self.work_dir = work_dir
        self.host = host
        self.patterns = [(p, re.compile(p["regex"])) for p in patterns]
        self.offsets: dict[str, int] = {}  # log path -> bytes already read
        self.tails: dict[str, str] = {}  # log path -> an unfinished last line
        self.last_lines: dict[str, str] = {}  # log path -> its last complete non-empty line
        self.dead_looks: dict[str, int] = {}  # PID file -> looks it has been dead without an exit status
        self.seen_dir = False

    def markers(self) -> list[tuple[str, str, str]]:
        """``(marker path, mode, log name)`` of every component the process role started here."""
        out = []
        for pattern in MARKER_GLOBS:
            for marker in sorted(glob.glob(os.path.join(glob.escape(self.work_dir), pattern))):
                try:
                    with open(marker, encoding="utf-8") as f:
                        lines = f.read().splitlines()
                except OSError:
                    continue  # stopped on purpose meanwhile
                for line in lines:
                    mode, _, log_name = line.partition(" ")
                    if log_name:
                        out.append((marker, mode, log_name))
        return out

    def _new_lines(self, path: str) -> list[str]:
        try:
            with open(path, "rb") as f:
                f.seek(self.offsets.get(path, 0))
                data = f.read()
        except OSError:
            return []
        self.offsets[path] = self.offsets.get(path, 0) + len(data)
        text = self.tails.pop(path, "") + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines[-1]:
            self.tails[path] = lines[-1]
        lines = lines[:-1]
        for line in reversed(lines):
            if line.strip():
                self.last_lines[path] = line.strip()
                break
        return lines

    def _fatal_line(self, component: str, log: str) -> dict | None:
        for line in self._new_lines(log):
            for p, rx in self.patterns:
                if component not in p.get("components", [component]) or component in p.get("components_except", []):
                    continue
                if rx.search(line):
                    return {"msg": f"component {component} on host {self.host} logged a fatal line ({p['name']}: "
                                   f"{p['meaning']}): {os.path.basename(log)}: {line.strip()[:400]}",
                            "component": component, "log": os.path.basename(log), "line": line.strip()[:400]}
        return None

    def _exit(self, marker: str, component: str, log: str) -> dict | None:
        base = marker[:-len(".watch")]
        status_text = None
        try:
            with open(base + ".exit", encoding="utf-8") as f:
                status_text = f.read().strip()
        except OSError:
            pass
        if status_text is None:
            pid = _read_pid(base + ".pid")
            if pid is None or _alive(pid):
                self.dead_looks.pop(base, None)
                return None
            self.dead_looks[base] = self.dead_looks.get(base, 0) + 1
            if self.dead_looks[base] <= NO_STATUS_GRACE_LOOKS:
                return None
            what = f"exited (pid {pid}; no exit status recorded)"
        elif status_text == "0":
            return None  # it finished its work (a watcher that stops after its last block)
        else:
            what = exit_text(int(status_text)) if status_text.isdigit() else f"exited ({status_text})"
        if not os.path.exists(marker):
            return None  # stopped on purpose between the two looks
        fatal = self._fatal_line(component, log)  # what it wrote last: a fatal line says more than the exit
        if fatal:
            return fatal
        last = (self.last_lines.get(log) or "")[:400]
        return {"msg": f"component {component} on host {self.host} {what}"
                       + (f"; last line of {os.path.basename(log)}: {last}" if last
                          else f"; {os.path.basename(log)} is empty"),
                "component": component, "log": os.path.basename(log), "line": last}

    def look(self) -> dict | None:
        """The first failure since the last look (``msg``, ``component``, ``log`` file name, ``line``), or None."""
        if os.path.isdir(self.work_dir):
            self.seen_dir = True
        markers = self.markers()
        for marker, _, log_name in markers:
            folder = os.path.dirname(marker)
            for suffix in (".log", ".out"):
                found = self._fatal_line(log_name, os.path.join(folder, log_name + suffix))
                if found:
                    return found
        for marker, mode, log_name in markers:
            if mode == "background":
                found = self._exit(marker, log_name, os.path.join(os.path.dirname(marker), log_name + ".log"))
                if found:
                    return found
        return None

    def ended(self) -> bool:
        """Whether the point's working directory is gone after it existed (the teardown removed it)."""
        return self.seen_dir and not os.path.isdir(self.work_dir)


def _read_pid(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main():
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec={
        "work_dir": {"type": "path", "required": True},
        "host": {"type": "str", "required": True},
        "patterns": {"type": "list", "elements": "dict", "default": []},
        "interval_s": {"type": "float", "default": 1.0},
        "deadline_s": {"type": "float", "required": True},
    })
    p = module.params
    watch = HostWatch(p["work_dir"], p["host"], p["patterns"])
    deadline = time.monotonic() + p["deadline_s"]
    started = time.monotonic()
    parent = os.getppid()
    while time.monotonic() < deadline:
        if os.getppid() != parent:  # orphaned: nobody would read a failure any more
            module.exit_json(changed=False, ended="its connection is gone",
                             watched_s=round(time.monotonic() - started, 1))
        failure = watch.look()
        if failure:
            module.fail_json(**failure, watched_s=round(time.monotonic() - started, 1))
        if watch.ended():
            module.exit_json(changed=False, ended="the point's working directory was removed",
                             watched_s=round(time.monotonic() - started, 1))
        time.sleep(p["interval_s"])
    module.exit_json(changed=False, ended="deadline", watched_s=round(time.monotonic() - started, 1))


if __name__ == "__main__":
    main()
