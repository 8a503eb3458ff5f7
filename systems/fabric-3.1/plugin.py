"""Fabric v3.1 (and v2.5, which extends it): the network's configuration by release is network.py; its
smoke, a command of this system (``invoke system-command --system fabric-3.1 --name smoke``), smoke.py;
no catalogue driver runs these systems yet (issue 33)."""

from harness.plugin_api import SystemPlugin

from . import smoke


class Plugin(SystemPlugin):
    def commands(self) -> list:
        return [smoke.COMMAND]
