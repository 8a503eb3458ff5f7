"""Ansible callback of the harness: how far a waiting task has got, and when each task started.

A task that waits with ``until``/``retries`` (e.g. the block watcher's wait for
every transfer) may print a JSON object with a ``progress`` text on stdout;
each retry then adds ``PROGRESS [host]: <text>`` to the log, which the harness
shows as the point's phase (harness/progress.py).

Where ``FABRICREPRO_TIMINGS`` names a file, every task's start is appended to
it as one JSON line (wall time, play, role, task): the harness turns them into
the point's per-play and per-role times (harness/timing.py). A line per start,
written at once, so a playbook that is killed still leaves its times.
Enabled by harness/deploy.py (``ANSIBLE_CALLBACKS_ENABLED``); the default output is unchanged.
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "fabricrepro_progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._timings = os.environ.get("FABRICREPRO_TIMINGS")
        self._play = ""

    def _started(self, what: dict) -> None:
        if self._timings:
            with open(self._timings, "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": time.time(), "play": self._play, **what}) + "\n")

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name().strip()
        self._started({"role": None, "task": None})

    def v2_playbook_on_task_start(self, task, is_conditional):
        role = task._role.get_name() if getattr(task, "_role", None) else None
        self._started({"role": role, "task": (task.name or task.action or "").strip()})

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_runner_retry(self, result):
        values = getattr(result, "result", None)
        if not isinstance(values, dict):
            values = result._result  # Ansible before 2.19
        try:
            text = json.loads(values.get("stdout") or "").get("progress")
        except (ValueError, AttributeError):
            return
        if text:
            self._display.display(f"PROGRESS [{result._host.get_name()}]: {text}")
