"""One precedence order for every parameter, and a record of where each value came from.

Layers, lowest first: harness defaults (``harness/defaults.yaml``), the system
and workload files, the experiment (catalogue) file, the environment
(``FABRICREPRO_<NAME>=value``), the command line (``--set name=value``). Values
from the environment and the command line are parsed as YAML scalars, so
``--set transactions=2000`` gives an integer.

Every value is checked against its declaration (type and range) in
``harness/parameters.yaml`` or its system's ``systems/<system>/parameters.yaml`` when the plan is made, so that bad input is refused, naming
the parameter, where it came from and what was expected, before anything runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from .errors import HarnessError

LAYERS = ("defaults", "system", "experiment", "environment", "cli")
ENV_PREFIX = "FABRICREPRO_"
DEFAULTS_FILE = Path(__file__).resolve().parent / "defaults.yaml"
DECLARATIONS_FILE = Path(__file__).resolve().parent / "parameters.yaml"
SYSTEMS_DIR = Path(__file__).resolve().parent.parent / "systems"
#: How an error names each layer, so that a person finds the value to fix.
SOURCE_NAMES = {"defaults": "harness/defaults.yaml", "system": "the workload file",
                "experiment": "the experiment file", "environment": "the environment",
                "cli": "--set on the command line"}


class ParameterError(HarnessError):
    """A parameter value that does not match its declared type or range."""


def harness_defaults() -> dict:
    """The harness's own parameter defaults."""
    with open(DEFAULTS_FILE, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def parse_value(text: str):
    """Parse one override value as a YAML scalar (``"10"`` -> 10, ``"true"`` -> True)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def parse_assignments(items) -> dict:
    """Parse ``name=value`` overrides (a list, or one comma-separated string) into a mapping.

    A part without ``=`` adds a value to the name before it: ``cpus=1,2`` gives ``{"cpus": [1, 2]}``,
    which ``plan.make_plan`` sweeps.
    """
    if isinstance(items, str):
        items = [items]
    out = {}
    for item in items or []:
        name = None
        for part in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = part.partition("=")
            if sep and key:
                name = key.strip()
                out[name] = parse_value(value.strip())
            elif not sep and name is not None:
                out[name] = [*(out[name] if isinstance(out[name], list) else [out[name]]), parse_value(part)]
            else:
                raise HarnessError(f"bad override {part!r}: expected name=value")
    return out


def from_environment(environ=None, declared=None) -> dict:
    """Parameters set as ``FABRICREPRO_<NAME>=value`` (name lower-cased).

    Only declared parameter names count: other ``FABRICREPRO_`` variables
    configure tools and tests (e.g. ``FABRICREPRO_SEEDS``), not experiments.
    """
    environ = os.environ if environ is None else environ
    declared = declarations() if declared is None else declared
    out = {}
    for k, v in environ.items():
        name = k[len(ENV_PREFIX):].lower()
        if k.startswith(ENV_PREFIX) and name in declared:
            out[name] = parse_value(v)
    return out


def declarations() -> dict:
    """The declared type and range of every parameter: ``harness/parameters.yaml`` and each system's
    ``systems/<system>/parameters.yaml`` (found by discovery; a name declared twice is an error)."""
    out: dict = {}
    owner: dict = {}
    for path in [DECLARATIONS_FILE, *sorted(SYSTEMS_DIR.glob("*/parameters.yaml"))]:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for name, decl in doc.items():
            if name in out:
                raise HarnessError(f"parameter {name!r} is declared in both {owner[name]} and {path}")
            out[name], owner[name] = decl, path
    return out


def expected(decl: dict) -> str:
    """A declaration as a person reads it, e.g. ``an integer in [1, 100000]``."""
    kind = decl["type"]
    if kind == "enum":
        return "one of " + ", ".join(map(str, decl["values"]))
    text = {"integer": "an integer", "number": "a number", "boolean": "true or false",
            "string": "a string"}[kind]
    low, high = decl.get("min"), decl.get("max")
    if low is not None and high is not None:
        return f"{text} in [{low}, {high}]"
    if low is not None:
        return f"{text} >= {low}"
    return f"{text} <= {high}" if high is not None else text


def _fits(value, decl: dict) -> bool:
    kind = decl["type"]
    if kind == "enum":
        return value in decl["values"]
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    numeric = int if kind == "integer" else (int, float)
    if isinstance(value, bool) or not isinstance(value, numeric):
        return False
    return decl.get("min", value) <= value <= decl.get("max", value)


def check(name: str, value, source: str, declared: dict | None = None) -> None:
    """Raise ParameterError unless ``value`` fits the declaration of ``name``.

    ``source`` is a layer name (LAYERS) or a phrase naming where the value came from.
    """
    declared = declarations() if declared is None else declared
    where = SOURCE_NAMES.get(source, source)
    if source == "environment":
        where = f"the environment ({ENV_PREFIX}{name.upper()})"
    if name not in declared:
        raise ParameterError(f"unknown parameter {name!r} (from {where})",
                             hint="declared parameters are listed in harness/parameters.yaml")
    if not _fits(value, declared[name]):
        raise ParameterError(f"parameter {name}={value!r} (from {where}): expected {expected(declared[name])}")


def resolve(layers: dict[str, dict]) -> tuple[dict, dict]:
    """Merge ``layers`` (keyed by a name of LAYERS) in precedence order.

    Returns the resolved values and, for each key, the name of the layer that
    set it.
    """
    unknown = set(layers) - set(LAYERS)
    if unknown:
        raise ValueError(f"unknown configuration layers {sorted(unknown)}")
    values, sources = {}, {}
    for layer in LAYERS:
        for key, value in (layers.get(layer) or {}).items():
            values[key] = value
            sources[key] = layer
    return values, sources
