"""Progress a person can follow: one updating line on a terminal, plain lines otherwise.

On a terminal the current line is redrawn with points done of total, elapsed and
estimated remaining time and the point being run. When output is not a terminal
(CI, a pipe, a log file) every event is one plain line. A failed point prints
the log to look at in both modes.
"""

from __future__ import annotations

import sys
import time


def clock(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour) for a duration in seconds."""
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Reports the progress of the points of one run."""

    def __init__(self, total: int, *, title: str = "", stream=None, tty: bool | None = None,
                 now=time.monotonic):
        self.total = total
        self.done = 0
        self.failed = 0
        self.title = title
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.now = now
        self.started = now()
        self._line_open = False

    def _timing(self) -> str:
        elapsed = self.now() - self.started
        text = f"elapsed {clock(elapsed)}"
        if 0 < self.done < self.total:
            text += f", remaining ~{clock(elapsed / self.done * (self.total - self.done))}"
        return text

    def _counter(self) -> str:
        return f"[{self.done}/{self.total}]"

    def _emit(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
            self._line_open = not final
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A line of information that stays on screen (e.g. a skipped experiment)."""
        if self._line_open:
            self.stream.write("\n")
            self._line_open = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, point: str) -> None:
        """A point starts."""
        self._emit(f"{self.title} {self._counter()} running {point} ({self._timing()})".strip(), final=not self.tty)

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
