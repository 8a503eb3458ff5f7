"""User-facing errors: a message a person can act on, without a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """An error caused by input or environment, reported as one clear message.

    ``hint`` says what to do about it (e.g. which ``invoke`` command installs a
    missing tool); ``log`` points at the file to read when a phase failed.
    """

    def __init__(self, message: str, hint: str | None = None, log: str | None = None):
        super().__init__(message)
        self.hint = hint
        self.log = log

    def __str__(self) -> str:
        text = self.args[0]
        if self.hint:
            text += f"\n  hint: {self.hint}"
        if self.log:
            text += f"\n  see: {self.log}"
        return text


class Interrupted(Exception):
    """Raised in the main thread when the run receives SIGINT or SIGTERM."""

    def __init__(self, signal_name: str):
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name


def choose(kind: str, value: str, valid) -> str:
    """Return ``value`` if it is one of ``valid``, else raise listing the valid ones."""
    valid = sorted(valid)
    if value not in valid:
        listed = ", ".join(valid) if valid else "(none)"
        raise HarnessError(f"unknown {kind} {value!r}; valid {kind}s: {listed}")
    return value
