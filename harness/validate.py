"""``invoke validate``: every catalogue and system file checked by the loader the harness uses.

Catalogues and ``system.yaml``/``upstream.yaml`` by harness.catalogue, ``validity.yaml`` by
harness.validity. This module sits above both, so that the catalogue need not import validity
(which reads a point's driver from the catalogue's experiment through harness.plan).
"""
from __future__ import annotations

from pathlib import Path

from . import REPO_ROOT, validity
from .catalogue import SCHEMAS, load_schema, load_yaml, rel_path, schema_errors, upstream_errors, validate_catalogue
from .errors import HarnessError


def validate_file(path: Path) -> list[str]:
    """Errors of one file: a catalogue (``papers/*.yaml``), or a system's ``system.yaml``,
    ``upstream.yaml`` or ``validity.yaml``."""
    path = Path(path)
    if path.name == "validity.yaml":
        try:
            validity.load_rules(path.parent.name, path.parent.parent)
        except HarnessError as e:
            return [str(e)]
        return []
    doc = load_yaml(path)
    if path.name == "system.yaml":
        return schema_errors(doc, load_schema(SCHEMAS / "system.json"), path)
    if path.name == "upstream.yaml":
        return upstream_errors(doc, path)
    return validate_catalogue(doc, path, path.parent)


def validate_all(root: Path | None = None) -> dict[str, list[str]]:
    """Errors of every catalogue and system file under ``root``, keyed by file."""
    root = root or REPO_ROOT
    files = sorted((root / "papers").glob("*.yaml")) + [f for name in ("system.yaml", "upstream.yaml", "validity.yaml")
                                                       for f in sorted((root / "systems").glob(f"*/{name}"))]
    return {rel_path(f): validate_file(f) for f in files}
