"""A system's own commands (``invoke system-command --system SYSTEM --name NAME --args "..."``; plugin_api.Command):
what a system runs outside any experiment, such as a microbenchmark of its library. The command gets
the core's services through ``plugin_api.CommandTools``, never by importing the core."""

from __future__ import annotations

import shlex

from . import systems, upstream
from .deploy import run_playbook
from .errors import HarnessError
from .plugin_api import CommandTools
from .providers import netns


def run(system: str, name: str, args: str = "") -> int:
    """Run command ``name`` of ``system`` with ``args`` (split as a shell would); its exit code."""
    commands = systems.commands()
    if (system, name) not in commands:
        known = ", ".join(f"{s} {n}" for s, n in sorted(commands)) or "none"
        raise HarnessError(f"system {system!r} has no command {name!r} (commands: {known})")
    tools = CommandTools(build_upstream=upstream.build, run_playbook=run_playbook, netns_cluster=netns.NetnsCluster)
    return commands[(system, name)].run(shlex.split(args), tools)
