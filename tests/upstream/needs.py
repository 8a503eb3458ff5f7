"""Why an upstream test cannot run on this machine, as the one-line reason pytest prints when it skips.

A user's clone has no ``../shared/upstream`` snapshots and may lack a toolchain; its tests then skip
with the first thing missing instead of failing (``invoke test`` lists the reasons).
"""
from __future__ import annotations

import shutil
from typing import Iterable

import pytest

from harness import upstream


def missing(tools: Iterable[str] = (), system: str | None = None, label: str | None = None) -> str | None:
    """The first of ``tools`` not on PATH, else the reason ``system``'s source snapshot is not at hand."""
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if system:
        why = upstream.source_available(upstream.load_recipe(system), "snapshot")
        if why:
            return f"no {label or system} source to build ({why})"
    return None


def skip_unless_ready(tools: Iterable[str] = (), system: str | None = None, label: str | None = None,
                      also: Iterable[str | None] = ()) -> pytest.MarkDecorator:
    """A skipif mark with the first reason from ``missing`` or, after it, from ``also`` (reasons or None)."""
    reason = missing(tools, system, label) or next((r for r in also if r), None)
    return pytest.mark.skipif(reason is not None, reason=reason or "")
