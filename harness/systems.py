"""Systems under test as plugins: one folder each under ``systems/``, found by discovery.

A system's folder holds everything specific to it (docs/adding-a-system.md):
``system.yaml`` (switches, reference build), ``upstream.yaml`` (recipe) and
``patches/``, ``validity.yaml``, its playbooks and the roles only it uses,
parsers of its programs' output, its metrics and report parts, its tests, and
``plugin.py``: a class ``Plugin`` deriving from ``SystemPlugin`` that
overrides the hooks it needs. Every hook has one signature and a default that
adds nothing, so a system without code needs no ``plugin.py``.

A system built on another names it in ``system.yaml`` (``baseline``) and its
``Plugin`` derives from the base's (``plugin_class(base)``), so it inherits
the base's hooks and adds to them.

The core never names a system: it asks this module for every system's tables,
metrics and report parts, for the role variables of the systems a point runs,
and for the component build kinds of the upstream recipes.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable

import yaml

from . import REPO_ROOT
from .errors import HarnessError

SYSTEMS_DIR = REPO_ROOT / "systems"

#: Parent of every system's plugin package: ``fabricrepro_systems.<name with _ for - and .>``.
PACKAGE = "fabricrepro_systems"


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
class BuildKind:
    """A way to build an upstream recipe's component (``components.<name>.build.kind``).

    ``build(system, name, tree, spec, source, log)`` builds the fetched tree in
    place and returns what else it fetched (or None); ``toolchain()`` says
    which toolchain builds it (part of the build's cache key); ``tools`` are
    the programs it runs (checked before a run, ``harness.preflight``).
    """
    build: Callable
    toolchain: Callable[[], str]
    tools: tuple[str, ...] = ()


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


#: A report part (``axes.figure`` of an experiment): (experiment, summary, figure prefix, build kind, run) -> blocks.
ReportPart = Callable[[dict, dict, str, str, object], list]


class SystemPlugin:
    """The hooks a system gives the core. Override what the system needs; call ``super()`` to keep a base's."""

    def __init__(self, name: str, folder: Path):
        self.name = name
        self.folder = folder

    def role_variables(self, parameters: dict) -> dict:
        """The role variables (each role's ``defaults/main.yml``) a point's parameters set for this system's roles."""
        return {}

    def tables(self) -> list[Table]:
        """The raw tables this system's programs write or log, with their parsers."""
        return []

    def metrics(self) -> list:
        """The metrics (``harness.metrics.Metric``) computed over this system's tables."""
        return []

    def report_parts(self) -> dict[str, ReportPart]:
        """Figures and judgements the report draws for an experiment naming them in ``axes.figure``."""
        return {}

    def build_kinds(self) -> dict[str, BuildKind]:
        """Component build kinds this system's recipe uses beyond the core's (``ant``)."""
        return {}

    def independent_checks(self) -> list[IndependentCheck]:
        """The checks that stand in for ledger codes where this system's drivers keep none."""
        return []


def _ident(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def names(systems_dir: Path | None = None) -> list[str]:
    """Every system: the folders of ``systems/`` holding a ``system.yaml``."""
    root = Path(systems_dir or SYSTEMS_DIR)
    return sorted(p.parent.name for p in root.glob("*/system.yaml"))


def _module(name: str, systems_dir: Path) -> ModuleType | None:
    """Import ``systems/<name>/plugin.py`` as the package ``fabricrepro_systems.<ident>`` (None if it has none)."""
    folder = systems_dir / name
    path = folder / "plugin.py"
    if not path.is_file():
        return None
    if PACKAGE not in sys.modules:
        parent = ModuleType(PACKAGE)
        parent.__path__ = []
        sys.modules[PACKAGE] = parent
    qualified = f"{PACKAGE}.{_ident(name)}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, path, submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[qualified]
        raise
    return module


def _extends(name: str, systems_dir: Path) -> str | None:
    doc = yaml.safe_load((systems_dir / name / "system.yaml").read_text(encoding="utf-8")) or {}
    return doc.get("baseline")


def plugin_class(name: str, systems_dir: Path | None = None) -> type[SystemPlugin]:
    """The plugin class of system ``name``: its ``plugin.py``'s ``Plugin``, else its base's, else the defaults."""
    root = Path(systems_dir or SYSTEMS_DIR)
    if not (root / name / "system.yaml").is_file():
        raise HarnessError(f"unknown system {name!r}: no {root / name / 'system.yaml'} (systems: {', '.join(names(root))})")
    module = _module(name, root)
    if module is not None:
        cls = getattr(module, "Plugin", None)
        if not (isinstance(cls, type) and issubclass(cls, SystemPlugin)):
            raise HarnessError(f"{root / name / 'plugin.py'}: defines no class Plugin deriving from "
                               "harness.systems.SystemPlugin")
        return cls
    base = _extends(name, root)
    return plugin_class(base, root) if base else SystemPlugin


@functools.cache
def _plugin(name: str, systems_dir: Path) -> SystemPlugin:
    return plugin_class(name, systems_dir)(name, systems_dir / name)


def plugin(name: str, systems_dir: Path | None = None) -> SystemPlugin:
    """System ``name``'s plugin instance."""
    return _plugin(name, Path(systems_dir or SYSTEMS_DIR))


def plugins(systems_dir: Path | None = None) -> list[SystemPlugin]:
    """Every system's plugin, in name order."""
    return [plugin(n, systems_dir) for n in names(systems_dir)]


def _unique(what: str, pairs) -> dict:
    """``{key: value}`` over (system, key, value); one key defined differently by two systems is an error
    (a base's entry inherited by a system that extends it is the same object and counts once)."""
    out: dict = {}
    owner: dict = {}
    for system, key, value in pairs:
        if key in out and out[key] is not value and out[key] != value:
            raise HarnessError(f"{what} {key!r} is defined by both system {owner[key]} and system {system}")
        out.setdefault(key, value)
        owner.setdefault(key, system)
    return out


def tables(systems_dir: Path | None = None) -> dict[str, Table]:
    """Every system's tables by name."""
    return _unique("table", ((p.name, t.name, t) for p in plugins(systems_dir) for t in p.tables()))


def metrics(systems_dir: Path | None = None) -> list:
    """Every system's metrics; one that a system inherits from its base counts once (same name and tables)."""
    out: dict = {}
    for p in plugins(systems_dir):
        for m in p.metrics():
            out.setdefault((m.name, tuple(m.tables)), m)
    return list(out.values())


def report_parts(systems_dir: Path | None = None) -> dict[str, ReportPart]:
    """Every system's report parts by the name an experiment's ``axes.figure`` gives."""
    return _unique("report part", ((p.name, k, v) for p in plugins(systems_dir) for k, v in p.report_parts().items()))


def build_kinds(systems_dir: Path | None = None) -> dict[str, BuildKind]:
    """Every system's component build kinds by name."""
    return _unique("build kind", ((p.name, k, v) for p in plugins(systems_dir) for k, v in p.build_kinds().items()))


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


def independent_check(system: str, name: str, systems_dir: Path | None = None) -> IndependentCheck:
    """System ``system``'s independent check ``name`` (its own or its base's)."""
    checks = {c.name: c for c in plugin(system, systems_dir).independent_checks()}
    if name not in checks:
        raise HarnessError(f"system {system} declares the independent check {name!r} in its validity.yaml, "
                           f"but its plugin has none of that name (it has: {', '.join(sorted(checks)) or 'none'})")
    return checks[name]


def role_variables(systems: list[str], parameters: dict, systems_dir: Path | None = None) -> dict:
    """The role variables of the systems a point runs (its own and its companions), from its parameters."""
    out: dict = {}
    for name in dict.fromkeys(systems):
        out.update(plugin(name, systems_dir).role_variables(parameters))
    return out
