"""Ansible callback of the harness: how far a waiting task has got, one line in the playbook's log.

A task that waits with ``until``/``retries`` (e.g. the block watcher's wait for
every transfer) may print a JSON object with a ``progress`` text on stdout;
each retry then adds ``PROGRESS [host]: <text>`` to the log, which the harness
shows as the point's phase (harness/progress.py). Enabled by
harness/deploy.py (``ANSIBLE_CALLBACKS_ENABLED``); the default output is unchanged.
"""

import json

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "fabricrepro_progress"
    CALLBACK_NEEDS_ENABLED = True

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
