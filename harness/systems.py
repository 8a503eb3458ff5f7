"""The plugin loader: systems under test, one folder each under ``systems/``, found by discovery.

A system's folder holds everything specific to it (docs/adding-a-system.md):
``system.yaml`` (switches, reference build, the system it extends, its setup),
``upstream.yaml`` (recipe) and ``patches/``, ``validity.yaml``, its playbooks
and the roles only it uses, parsers of its programs' output, its metrics and
report parts, its tests, and ``plugin.py``: a class ``Plugin`` deriving from
``harness.plugin_api.SystemPlugin`` that overrides the hooks it needs. A
system's code imports nothing of the harness but ``harness.plugin_api``.

A system built on another names it once, as ``extends`` in ``system.yaml``:
its plugin is put over the base's (``super()`` in a hook reaches the base's),
and its validity rules over the base's (harness/validity.py). A plugin that
defines a public name that is not a hook, or a hook with other parameters than
the specification's, is refused when it loads.

The core never names a system: it asks this module for every system's tables,
metrics, report parts, commands and build kinds, and for the role variables of
the systems a point runs: each system's table (``variables`` in ``system.yaml``: parameter -> its roles'
variables), which the core applies, then its plugin's ``role_variables`` hook.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType

import yaml

from . import REPO_ROOT
from .errors import HarnessError
from .plugin_api import HOOKS, BuildKind, Command, IndependentCheck, ReportPart, SystemPlugin, Table

SYSTEMS_DIR = REPO_ROOT / "systems"

#: Parent of every system's plugin package: ``fabricrepro_systems.<name with _ for - and .>``.
PACKAGE = "fabricrepro_systems"


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


def declaration(name: str, systems_dir: Path | None = None) -> dict:
    """System ``name``'s ``system.yaml``."""
    root = Path(systems_dir or SYSTEMS_DIR)
    path = root / name / "system.yaml"
    if not path.is_file():
        raise HarnessError(f"unknown system {name!r}: no {path} (systems: {', '.join(names(root))})")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def base_of(name: str, systems_dir: Path | None = None) -> str | None:
    """The system ``name`` extends (``system.yaml`` ``extends``), or None."""
    return declaration(name, systems_dir).get("extends")


def lineage(name: str, systems_dir: Path | None = None) -> list[str]:
    """``name``, the system it extends, that one's, ...; a loop is an error."""
    out = [name]
    while (base := base_of(out[-1], systems_dir)) is not None:
        if base in out:
            raise HarnessError(f"systems/{name}/system.yaml: 'extends' loops through {' -> '.join([*out, base])}")
        out.append(base)
    return out


def _checked(cls: type, path: Path) -> type:
    """``cls`` if it derives from ``SystemPlugin`` and defines hooks only, each with the specification's parameters."""
    if not (isinstance(cls, type) and issubclass(cls, SystemPlugin)):
        raise HarnessError(f"{path}: defines no class Plugin deriving from harness.plugin_api.SystemPlugin")
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if attr not in HOOKS:
            raise HarnessError(f"{path}: Plugin.{attr} is not a hook (hooks: {', '.join(HOOKS)}); "
                               "name a helper with a leading underscore or move it to a module")
        wanted = list(inspect.signature(getattr(SystemPlugin, attr)).parameters)
        given = list(inspect.signature(value).parameters) if callable(value) else None
        if given != wanted:
            raise HarnessError(f"{path}: Plugin.{attr} takes ({', '.join(given or [])}), the hook takes "
                               f"({', '.join(wanted)})")
    return cls


def plugin_class(name: str, systems_dir: Path | None = None) -> type[SystemPlugin]:
    """The plugin class of system ``name``: its ``plugin.py``'s ``Plugin`` over the plugin class of the system
    it extends, so that ``super()`` in its hooks reaches the base's; the defaults where there is neither."""
    root = Path(systems_dir or SYSTEMS_DIR)
    lineage(name, root)  # a loop is an error before it recurses
    base = base_of(name, root)
    base_cls = plugin_class(base, root) if base else SystemPlugin
    module = _module(name, root)
    if module is None:
        return base_cls
    own = _checked(getattr(module, "Plugin", None), root / name / "plugin.py")
    if base_cls is SystemPlugin:
        return own
    return type(f"Plugin[{name}]", (own, base_cls), {"__module__": module.__name__})


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


def commands(systems_dir: Path | None = None) -> dict[tuple[str, str], Command]:
    """Every system's own commands by (system, command name); a system does not inherit its base's."""
    out = {}
    for p in plugins(systems_dir):
        inherited = {c.name for b in lineage(p.name, systems_dir)[1:] for c in plugin(b, systems_dir).commands()}
        out.update({(p.name, c.name): c for c in p.commands() if c.name not in inherited})
    return out


def build_kinds(systems_dir: Path | None = None) -> dict[str, BuildKind]:
    """Every system's component build kinds by name."""
    return _unique("build kind", ((p.name, k, v) for p in plugins(systems_dir) for k, v in p.build_kinds().items()))


def independent_check(system: str, name: str, systems_dir: Path | None = None) -> IndependentCheck:
    """System ``system``'s independent check ``name`` (its own or its base's)."""
    checks = {c.name: c for c in plugin(system, systems_dir).independent_checks()}
    if name not in checks:
        raise HarnessError(f"system {system} declares the independent check {name!r} in its validity.yaml, "
                           f"but its plugin has none of that name (it has: {', '.join(sorted(checks)) or 'none'})")
    return checks[name]


#: How a table passes a value to a role variable (an item ``{variable: transform}``; a bare name is ``int``):
#: the roles take whole seconds, milliseconds and counts; fractions, flags and names as they are; a rate as
#: the number it is (50 stays 50, 12.5 stays 12.5); and a size given in KiB (FastFabric's ``payload_kb``) as bytes.
TRANSFORMS = {"int": int, "float": float, "bool": bool, "str": str,
              "number": lambda v: v if isinstance(v, (int, float)) and not isinstance(v, bool) else float(v),
              "kib": lambda v: int(float(v) * 1024)}


def variables(name: str, systems_dir: Path | None = None) -> dict[str, list[str]]:
    """System ``name``'s table of role variables: for each parameter (or count the core derives from the
    parameters, ``harness.runner.derived_counts``), the variables of its roles it sets, declared once in
    ``system.yaml`` (``variables``), over those of the systems it extends. A variable the lineage names twice
    is an error: each has one source. (How each value is passed: ``transforms``.)"""
    return {k: [var for var, _ in v] for k, v in _variables(name, Path(systems_dir or SYSTEMS_DIR)).items()}


def transforms(name: str, systems_dir: Path | None = None) -> dict[str, str]:
    """Role variable -> the transform (``TRANSFORMS``) by which system ``name``'s table passes its value."""
    return {var: how for v in _variables(name, Path(systems_dir or SYSTEMS_DIR)).values() for var, how in v}


def table_items(table: dict, where: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """A table (parameter -> items: a role variable's name, or ``{name: transform}``) as parameter ->
    ((variable, transform), ...); an unknown transform is an error naming ``where``."""
    out = {}
    for parameter, items in table.items():
        pairs = []
        for item in items:
            for var, how in (item.items() if isinstance(item, dict) else ((item, "int"),)):
                if how not in TRANSFORMS:
                    raise HarnessError(f"{where}: variables: {parameter}: {var}: unknown transform {how!r} "
                                       f"(one of: {', '.join(TRANSFORMS)})")
                pairs.append((var, how))
        out[parameter] = tuple(pairs)
    return out


@functools.lru_cache(maxsize=None)
def _variables(name: str, systems_dir: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    out: dict[str, list[tuple[str, str]]] = {}
    owner: dict[str, str] = {}
    for system in reversed(lineage(name, systems_dir)):
        where = f"systems/{system}/system.yaml"
        for parameter, pairs in table_items(declaration(system, systems_dir).get("variables") or {}, where).items():
            for var, how in pairs:
                if var in owner:
                    raise HarnessError(f"{where}: variables: {var} is set from {parameter}, "
                                       f"but {owner[var]} sets it already")
                owner[var] = f"{parameter} ({where})"
                out.setdefault(parameter, []).append((var, how))
    return {k: tuple(v) for k, v in out.items()}


def apply_table(table: dict, values: dict, where: str = "the core's table") -> dict:
    """The role variables a table sets from ``values``: each value passed by its item's transform (``TRANSFORMS``;
    a bare name: an integer, a number's whole part). A parameter not in ``values`` sets nothing: its roles keep
    their defaults."""
    return _apply_pairs(table_items(table, where), values)


def _apply_pairs(table: dict[str, tuple[tuple[str, str], ...]], values: dict) -> dict:
    """``apply_table`` over a table already read (parameter -> ((variable, transform), ...))."""
    return {var: TRANSFORMS[how](values[name]) for name, pairs in table.items() if name in values
            for var, how in pairs}


def role_variables(systems: list[str], parameters: dict, systems_dir: Path | None = None,
                   counts: dict | None = None) -> dict:
    """The role variables of the systems a point runs (its own and its companions), from its parameters and
    the counts the core derived from them (``counts``): each system's table (``variables``), then its
    plugin's ``role_variables`` hook for what is more than a parameter's value under a role's name."""
    values = {**(counts or {}), **parameters}
    out: dict = {}
    for name in dict.fromkeys(systems):
        out.update(_apply_pairs(_variables(name, Path(systems_dir or SYSTEMS_DIR)), values))
        out.update(plugin(name, systems_dir).role_variables(parameters))
    return out


def prepares(systems: list[str], systems_dir: Path | None = None) -> bool:
    """Whether a plugin of these systems (a point's own and its companions) writes files before the driver's
    playbook (overrides ``before_playbook``): the measuring plan says so per point, so that the loop loads no
    plugin for a point that needs none (a kit carries no system's Python)."""
    return any(type(plugin(n, systems_dir)).before_playbook is not SystemPlugin.before_playbook
               for n in dict.fromkeys(systems))


def before_playbook(systems: list[str], spec: dict, variables: dict, inventory: dict,
                    systems_dir: Path | None = None) -> dict:
    """Each of these systems' ``before_playbook`` hook in turn (plugin_api); the variables they add."""
    out: dict = {}
    for name in dict.fromkeys(systems):
        out.update(plugin(name, systems_dir).before_playbook(spec, {**variables, **out}, inventory))
    return out
