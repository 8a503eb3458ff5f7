"""Progress a person can follow: one updating line on a terminal, plain lines otherwise.

On a terminal the current line is redrawn with points done of total, elapsed and
estimated remaining time, the point being run and its phase (the play, the role
and its hosts, the task or what a waiting task reported, e.g. ``measuring:
block 12``, each with its elapsed time). When output is not a terminal (CI, a
pipe, a log file) every event is one plain line, phases at each new play or
role (and a waiting task's report at most every ``PLAIN_EVERY_S``). Every event
also goes, with its UTC time, to the run's ``progress.log`` where one is given.
A failed point prints the log to look at in both modes.
"""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

#: Seconds between two plain lines (and progress.log lines) of a waiting task's report within one phase.
PLAIN_EVERY_S = 10.0


def clock(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour) for a duration in seconds."""
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Reports the progress of the points of one run."""

    def __init__(self, total: int, *, title: str = "", stream=None, tty: bool | None = None,
                 now=time.monotonic, log: Path | None = None):
        self.total = total
        self.done = 0
        self.failed = 0
        self.title = title
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.now = now
        self.started = now()
        self.log = Path(log) if log else None
        self._line_open = False
        self._point_started = self.started
        self._phase_key = None
        self._phase_shown = -PLAIN_EVERY_S

    def _record(self, text: str) -> None:
        if self.log:
            stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(f"{stamp} {text}\n")

    def _timing(self, now: float | None = None) -> str:
        elapsed = (self.now() if now is None else now) - self.started
        text = f"elapsed {clock(elapsed)}"
        if 0 < self.done < self.total:
            text += f", remaining ~{clock(elapsed / self.done * (self.total - self.done))}"
        return text

    def _counter(self) -> str:
        return f"[{self.done}/{self.total}]"

    def _emit(self, text: str, final: bool) -> None:
        self._record(text)
        if self.tty:
            self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
            self._line_open = not final
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A line of information that stays on screen (e.g. a skipped experiment)."""
        self._record(text)
        if self._line_open:
            self.stream.write("\n")
            self._line_open = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, point: str) -> None:
        """A point starts."""
        self._point_started = self.now()
        self._phase_key = None
        self._emit(f"{self.title} {self._counter()} running {point} ({self._timing(self._point_started)})".strip(),
                   final=not self.tty)

    def phase(self, point: str, phase: Phase) -> None:
        """The running point is in ``phase``: redrawn on a terminal; a plain line (and a progress.log line)
        at a new play or role, and for a waiting task's report at most every ``PLAIN_EVERY_S``."""
        now = self.now()
        text = f"{self.title} {self._counter()} {point} (elapsed {clock(now - self._point_started)}): {phase.text}"
        new = phase.key != self._phase_key
        self._phase_key = phase.key
        if self.tty:
            self._record_phase(text, new, now)
            self.stream.write("\r\x1b[2K" + text.strip())
            self.stream.flush()
            self._line_open = True
        elif new or (phase.report and now - self._phase_shown >= PLAIN_EVERY_S):
            self._phase_shown = now
            self._emit(text.strip(), final=True)

    def _record_phase(self, text: str, new: bool, now: float) -> None:
        if new or now - self._phase_shown >= PLAIN_EVERY_S:
            self._phase_shown = now
            self._record(text.strip())

    def finish(self, point: str, status: str, detail: str = "", log: str | None = None) -> None:
        """A point ended with ``status``; ``detail`` summarises it, ``log`` is where to look."""
        self.done += 1
        if status != "complete":
            self.failed += 1
        text = f"{self.title} {self._counter()} {point} {status}"
        text += f": {detail}" if detail else ""
        text += f" ({self._timing()})"
        final = status != "complete" or not self.tty or self.done == self.total
        self._emit(text.strip(), final=final)
        if log and status != "complete":
            self.message(f"  see {log}")


class Phase:
    """Where a running point is: ``key`` (its play, role and hosts) changes at each new step; ``text``
    says it with the step's elapsed time; ``report`` is what a waiting task last reported, if anything."""

    def __init__(self, key: tuple, text: str, report: str | None = None):
        self.key, self.text, self.report = key, text, report


#: Roles that component roles include to do their work (start and stop by PID, copy a tree from the
#: controller): a task of one stays in the including role's phase.
HELPER_ROLES = {"process", "copy_tree"}

#: ansible-playbook's lines (default callback) and the harness's progress callback's.
_PLAY = re.compile(r"^PLAY \[(?P<name>.*)\] \*+\s*$")
_TASK = re.compile(r"^TASK \[(?:(?P<role>[\w.-]+) : )?(?P<name>.*)\] \*+\s*$")
_REPORT = re.compile(r"^PROGRESS \[(?P<host>[^\]]+)\]: (?P<text>.*)$")


class PlaybookPhases:
    """The phase of a running playbook, read from its log as Ansible writes it.

    ``hosts`` maps an inventory group to its hosts: a role's hosts are those of
    the group named like it (each component's group, harness/providers).
    ``prefix`` names the step of the point the playbook is (``teardown``).
    """

    def __init__(self, log: Path, hosts: dict[str, list[str]] | None = None, prefix: str = "",
                 now=time.monotonic):
        self.path = Path(log)
        self.prefix = prefix
        self.hosts = hosts or {}
        self.now = now
        self.offset = 0
        self.tail = ""
        self.play = ""
        self.role = None
        self.task = ""
        self.report = None
        self.since = now()

    def _read(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        lines = (self.tail + data.decode("utf-8", errors="replace")).split("\n")
        self.tail = lines.pop()
        return lines

    def updates(self) -> list[Phase]:
        """Each play or role the log has begun since the last call, as it began (a step shorter than
        the poll still reaches the run log), then the phase after all of it (last)."""
        begun = []
        for line in self._read():
            if m := _PLAY.match(line):
                self.play, self.role, self.task, self.report, self.since = m["name"], None, "", None, self.now()
            elif m := _TASK.match(line):
                role = self.role if m["role"] in HELPER_ROLES and self.role else m["role"]
                if role != self.role:
                    self.since = self.now()
                self.role, self.task, self.report = role, m["name"], None
                if role and (not begun or begun[-1].key != (self.prefix, self.play, role)):
                    begun.append(self.phase(at=self.since))
            elif m := _REPORT.match(line):
                self.report = f"{m['text']} on {m['host']}"
        return begun + [self.phase()]

    def update(self) -> Phase:
        """The phase after what the log has gained since the last call."""
        return self.updates()[-1]

    def phase(self, at: float | None = None) -> Phase:
        """The current phase, its elapsed time taken at ``at`` (default: now)."""
        where = ""
        if self.role:
            hosts = self.hosts.get(self.role)
            where = f" / role {self.role}" + (f" on {', '.join(hosts)}" if hosts else "")
        doing = self.report or self.task
        text = (f"{self.prefix}: " if self.prefix else "") + f"{self.play or 'starting'}{where}" \
            + (f": {doing}" if doing else "")
        elapsed = (self.now() if at is None else at) - self.since
        return Phase((self.prefix, self.play, self.role), f"{text} ({clock(elapsed)})", self.report)

