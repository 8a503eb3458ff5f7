"""One precedence order for every parameter, and a record of where each value came from.

Layers, lowest first: harness defaults (``harness/defaults.yaml``), the system
and workload files, the experiment (catalogue) file, the environment
(``FABRICREPRO_<NAME>=value``), the command line (``--set name=value``). Values
from the environment and the command line are parsed as YAML scalars, so
``--set transactions=2000`` gives an integer.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from .errors import HarnessError

LAYERS = ("defaults", "system", "experiment", "environment", "cli")
ENV_PREFIX = "FABRICREPRO_"
DEFAULTS_FILE = Path(__file__).resolve().parent / "defaults.yaml"


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
    """Parse ``name=value`` overrides (a list, or one comma-separated string) into a mapping."""
    if isinstance(items, str):
        items = [items]
    out = {}
    for item in items or []:
        for part in filter(None, (p.strip() for p in item.split(","))):
            name, sep, value = part.partition("=")
            if not sep or not name:
                raise HarnessError(f"bad override {part!r}: expected name=value")
            out[name.strip()] = parse_value(value.strip())
    return out


def from_environment(environ=None) -> dict:
    """Parameters set as ``FABRICREPRO_<NAME>=value`` (name lower-cased)."""
    environ = os.environ if environ is None else environ
    return {k[len(ENV_PREFIX):].lower(): parse_value(v) for k, v in environ.items()
            if k.startswith(ENV_PREFIX) and len(k) > len(ENV_PREFIX)}


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
