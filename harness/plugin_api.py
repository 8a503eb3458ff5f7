"""The plugin API: the one harness module a system's code may import (docs/adding-a-system.md).

A system (``systems/<name>/``) is a folder the harness discovers; its ``plugin.py`` defines a class
``Plugin`` deriving from ``SystemPlugin`` and overrides the hooks it needs. Everything a plugin's
modules use from the harness is named here, so the rest of the core can change without breaking a
system; ``tests/harness/test_layout.py`` refuses any other harness import from ``systems/`` (its
``tests/`` excepted: tests drive the whole harness).

What is here:

* ``SystemPlugin`` and ``HOOKS``: the hooks, each with one signature and a default that adds nothing.
  The loader (``harness.systems``) refuses a plugin that defines a public name that is not a hook
  (``def table(self)`` for ``tables``), or a hook whose parameters differ from the specification.
* The types the hooks exchange: ``Table``, ``Metric``, ``BuildKind`` (with ``BuildContext``),
  ``IndependentCheck``, ``ReportPart``, ``Command`` (with ``CommandTools``).
* The helpers systems need, each documented where it is defined: errors, figure rendering, table
  arithmetic, the band a published claim allows, reading stored runs, the role settings a point ran
  with, and finding tools.

A system built on another declares it once, in ``system.yaml`` (``extends``). The loader then puts the
base's plugin under this one (``super()`` in a hook reaches the base's), and the validity rules and
role variables follow the same declaration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .claims import claim_band
from .cpus import started_components
from .errors import HarnessError
from .figure_png import FIGURE_RC, png_bytes
from .logscan import log_bytes_at_stop
from .metrics import (NS_PER_MS, NS_PER_S, Metric, commit_throughput_tps, committer_busy_ratio, data_blocks,
                      mean_block_latency_ms, percentile)
from .rundir import latest_complete_run, read_json
from .tools import require_tool

__all__ = [
    "HOOKS", "BuildContext", "BuildKind", "Command", "CommandTools", "FIGURE_RC", "HarnessError", "IndependentCheck",
    "Metric", "NS_PER_MS", "NS_PER_S", "ReportPart", "SystemPlugin", "Table", "claim_band", "commit_throughput_tps",
    "data_blocks", "latest_complete_run", "log_bytes_at_stop", "percentile", "png_bytes", "point_role_settings",
    "read_json",
    "require_tool",
]


@dataclass(frozen=True)
class Table:
    """A raw table of a point, stored as ``<name>.parquet`` (docs/results-format.md).

    Either read from the CSVs the hosts wrote (``raw/<host>/<name>.csv`` with
    exactly ``columns``; ``rename`` gives units; ``strings`` are the text
    columns, every other column is int64), or made by ``parse`` from the
    point directory (a program's own log): it returns the table, or None when
    the point has nothing for it. A CSV table with a ``block_number`` column
    is cut to the measured window.
    """
    name: str
    columns: tuple[str, ...] = ()
    rename: dict = field(default_factory=dict)
    strings: frozenset = frozenset()
    parse: Callable | None = None

    @property
    def per_block(self) -> bool:
        return self.parse is None and "block_number" in self.columns


@dataclass(frozen=True)
class BuildContext:
    """What the core gives a build kind's ``build``: ``fetch_source(spec, dest, source, log)`` puts a pinned
    tree (``{repository, commit}`` or a snapshot) at ``dest``; ``run_command(argv, what, cwd=, env=,
    timeout=)`` runs a program and raises ``HarnessError`` naming ``what`` and its output's tail when it
    fails; ``log(text)`` writes to the build's log."""
    fetch_source: Callable
    run_command: Callable
    log: Callable[[str], None]


@dataclass(frozen=True)
class BuildKind:
    """A way to build an upstream recipe's component (``components.<name>.build.kind`` of ``upstream.yaml``).

    ``build(system, name, tree, spec, source, context)`` builds the fetched tree in place and returns what
    else it fetched (or None); ``context`` is a ``BuildContext``. ``toolchain()`` says which toolchain
    builds it (part of the build's cache key); ``tools`` are the programs it runs (checked before a run,
    ``harness.preflight``); ``schema`` is the JSON schema of the kind's fields in ``build`` (beyond
    ``kind``, ``outputs`` and ``remove``), checked when the recipe is read.
    """
    build: Callable
    toolchain: Callable[[], str]
    tools: tuple[str, ...] = ()
    schema: dict = field(default_factory=dict)


@dataclass(frozen=True)
class IndependentCheck:
    """A second source for a point's counts where its system keeps no per-transaction validation codes
    (``evidence.<driver>.<build>.independent_check`` of its ``validity.yaml``, docs/validity.md).

    ``run(point_dir, tables)`` compares what the driver counted with something the driver did not write
    (the receivers' blocks against the leader's count, the peers' balances after the run) and returns
    ``(section, problems)``: ``section`` goes to the point's ``validity.independent_check``, and any
    problem fails the point. It fails closed: evidence it needs and cannot find is a problem, never a pass.
    """
    name: str
    what: str
    run: Callable


@dataclass(frozen=True)
class CommandTools:
    """The core's services a system's command may use: ``build_upstream(system)`` (the build, with ``path``
    and ``info``), ``run_playbook(playbook, inventory, variables, log, timeout=)`` and
    ``netns_cluster(directory, names, roles=)`` (a context manager of network-namespace hosts with
    ``write_inventory()`` and ``inventory_path``; needs root)."""
    build_upstream: Callable
    run_playbook: Callable
    netns_cluster: Callable


@dataclass(frozen=True)
class Command:
    """A command of a system's own, outside any experiment (``invoke system-command --system SYSTEM --name NAME --args "ARGS"``):
    ``run(args, tools)`` gets the arguments after the name and a ``CommandTools``, and returns the exit code."""
    name: str
    help: str
    run: Callable[[list, CommandTools], int]


#: A report part (``axes.figure`` of an experiment): (experiment, summary, figure prefix, build kind, run) -> blocks.
#: ``run`` is the newest pooled run: ``run.path`` (its directory) and ``run.metadata`` (its ``metadata.json``).
ReportPart = Callable[[dict, dict, str, str, object], list]


class SystemPlugin:
    """The hooks a system gives the core. Override what the system needs; call ``super()`` to keep a base's."""

    def __init__(self, name: str, folder: Path):
        self.name = name
        self.folder = folder

    def role_variables(self, parameters: dict) -> dict:
        """The role variables (each role's ``defaults/main.yml``) a point's parameters set for this system's
        roles. The only way a point's parameters reach a system's roles."""
        return {}

    def tables(self) -> list[Table]:
        """The raw tables this system's programs write or log, with their parsers."""
        return []

    def metrics(self) -> list[Metric]:
        """The metrics computed over this system's tables."""
        return []

    def report_parts(self) -> dict[str, ReportPart]:
        """Figures and judgements the report draws for an experiment naming them in ``axes.figure``."""
        return {}

    def build_kinds(self) -> dict[str, BuildKind]:
        """The component build kinds this system's upstream recipe uses (``make`` and ``go`` builds need
        none: a recipe's ``build`` commands run them)."""
        return {}

    def independent_checks(self) -> list[IndependentCheck]:
        """The checks that stand in for ledger codes where this system's drivers keep none."""
        return []

    def commands(self) -> list[Command]:
        """Commands of this system's own (a microbenchmark of its library, a probe of the host)."""
        return []

    def ordering_service(self, parameters: dict) -> str | None:
        """The ordering service a point with these parameters deploys, as a page names it ("Kafka", "Raft",
        "SmartBFT"), or None where the system has none to name. ``invoke regress`` across a line of systems
        compares two releases only where it is the same (harness/regress/lines.py)."""
        return None

    def upstream_ref(self, parameters: dict) -> dict | None:
        """A user's own commit of this system's upstream code that a run's parameters ask for, instead of its
        recipe's pin: ``{"ref": <tag, branch or commit of the recipe's repository>, "parameter": <its name>}``
        (fabric-3.1's ``--set fabric_ref=v3.1.2``), or None. The core resolves and builds it
        (``harness.user_refs``)."""
        return None

    def before_playbook(self, spec: dict, variables: dict, inventory: dict) -> dict:
        """Files this system writes on the controller before a point's driver playbook runs, and the variables
        it adds to the playbook's (v3.1's network: identities, genesis block, each node's configuration, placed
        on the inventory's hosts). The core calls it in the point loop (harness/point_loop.py), on every path
        that measures points, after the hosts are up and the inventory written. ``spec``: the driver
        (``playbook``, ``roles``); ``variables``: the playbook's variables over its roles' defaults as written
        (a default that is a template comes unrendered); ``inventory``: ``groups`` (group -> hosts), ``hosts``
        (host -> its variables) and ``vars`` (every host's). Nothing by default."""
        return {}


#: The hooks by name, as the loader checks plugins against them.
HOOKS = tuple(name for name, value in vars(SystemPlugin).items()
              if callable(value) and not name.startswith("_"))


def point_role_settings(point_dir: Path) -> dict:
    """The role settings a point ran with: the run's recorded role defaults (``metadata.json``
    ``build.role_settings``), overridden by the variables the harness passed (``logs/ansible-run.vars.json``)."""
    point_dir = Path(point_dir)
    out: dict = {}
    metadata = point_dir.parent.parent / "metadata.json"
    if metadata.is_file():
        for values in ((json.loads(metadata.read_text()).get("build") or {}).get("role_settings") or {}).values():
            out.update(values or {})
    run_vars = point_dir / "logs" / "ansible-run.vars.json"
    if run_vars.is_file():
        out.update(json.loads(run_vars.read_text()))
    return out
