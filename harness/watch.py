"""The watcher of a running point: a component that dies or logs a fatal line ends the point in seconds.

Beside the driver's playbook, ``PointWatch`` runs ``playbooks/watch.yml``: on
every host of the inventory, the process role's ``process_watch`` module
(``playbooks/roles/process/library/process_watch.py``) looks every second at
each component the process role started in the point's working directory: a
server's exit status (its wrapper records it) and every new line of its log,
matched against the fatal patterns of the point's system
(``harness/validity.py`` ``fatal_patterns``: ``fatal: true`` in
``validity.yaml``, plus Go panics, taken ports, uncaught Java exceptions and
log4j's FATAL for every system). The module fails, naming component, host and
line; Ansible prints that failure in the watch playbook's log at once, and the
harness reads it there (``check``, called every half second while the driver's
playbook runs), then stops the driver's playbook: its teardown by PID follows.

Why this way: the same Ansible connection reaches a host on every provider
(``local``: this machine; ``netns``/``ssh``/``aws``: over SSH), one long task
per host costs one connection per point, and the poller runs where the PID
and the log are. A component stopped on purpose (``process`` ``stop``) is
forgotten first, so it is never reported; a server that ends with status 0
(the block watcher after its last block) is not a failure.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from .deploy import failed_results, start_playbook, stop_playbook, task_reason
from .errors import HarnessError

#: Seconds ``settle`` waits for the watcher's word after the driver's playbook failed on its own
#: (a component that died makes the playbook fail too; the watcher names it): two of its looks.
SETTLE_S = 2.5


class WatchFailure(HarnessError):
    """A watched component failed: ``host``, ``component``, its log file's name and the line."""

    def __init__(self, message: str, host: str, component: str | None, log_name: str | None, line: str | None):
        super().__init__(message)
        self.host, self.component, self.log_name, self.line = host, component, log_name, line
        self.detected_utc = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def record(self) -> dict:
        """The ``watch`` section of the point's summary.json."""
        return {"host": self.host, "component": self.component, "log": self.log_name, "line": self.line,
                "detected_utc": self.detected_utc}


class PointWatch:
    """``playbooks/watch.yml`` for one point, its output in ``log``."""

    def __init__(self, inventory: Path, variables: dict, log: Path, patterns: list[dict], deadline_s: float):
        self.inventory = inventory
        self.variables = {**variables, "fabricrepro_watch_patterns": patterns,
                          "fabricrepro_watch_deadline_s": deadline_s}
        self.log = Path(log)
        self.proc = None

    def start(self) -> PointWatch:
        """Start watching (the components need not have started yet)."""
        self.proc = start_playbook("watch.yml", self.inventory, self.variables, self.log)
        return self

    def failure(self) -> WatchFailure | None:
        """The first failure the watch playbook's log reports, or None."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        for host, result in failed_results(text).items():
            if result.get("component"):
                return WatchFailure(str(result["msg"]), host, result["component"], result.get("log"),
                                    result.get("line"))
            message = (f"host {host} unreachable (seen by the point's watcher): {task_reason(result)}"
                       if result.get("unreachable") else
                       f"the point's watcher failed on host {host}: {task_reason(result)}")
            return WatchFailure(message, host, None, None, None)
        return None

    def check(self) -> None:
        """Raise the watcher's failure, if it has reported one."""
        failure = self.failure()
        if failure:
            raise failure

    def settle(self, timeout: float = SETTLE_S) -> WatchFailure | None:
        """The watcher's failure, waiting up to ``timeout`` for one (after the driver's playbook failed)."""
        end = time.monotonic() + timeout
        while True:
            ended = self.proc is None or self.proc.poll() is not None
            failure = self.failure()
            if failure or ended or time.monotonic() >= end:
                return failure
            time.sleep(0.25)

    def stop(self) -> None:
        """Stop the watch playbook (before the teardown, which stops the components)."""
        if self.proc:
            stop_playbook(self.proc)
