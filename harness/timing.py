"""Where a point's wall time goes: per play and per role of its playbooks, beside its measured window.

The harness's Ansible callback (playbooks/callback_plugins/fabricrepro_progress.py)
appends one JSON line per started play and task to ``<playbook log>.timings.jsonl``;
the harness writes the lines before and after them, when it launches
ansible-playbook and when that has exited (``mark_playbook``).
A task lasts until the next one starts (the last until the playbook exits), so
the times of one playbook add up to its wall time: Ansible's own start-up before
its first play, then each play. A task of a helper role (the process role that
starts and stops components) counts for the role that included it, as the
progress line shows it (harness/progress.py).

The measured window is what the point's tables say was measured: from the first
measured block's arrival at the committer to the last one's commit. A point's
``timing`` in ``summary.json`` (docs/results-format.md) puts the two side by side.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .progress import HELPER_ROLES


def timings_path(log: Path) -> Path:
    """The file the callback writes a playbook's task starts to, beside the playbook's log."""
    return Path(log).with_suffix(".timings.jsonl")


def mark_playbook(path: Path, event: str) -> None:
    """Append the harness's own line (``launched`` or ``exited``) to a playbook run's timings file,
    on a line of its own even after a callback line that a kill cut short."""
    with open(path, "a+b") as f:
        cut = f.tell() > 0 and (f.seek(-1, 2), f.read(1))[1] != b"\n"
        f.write((("\n" if cut else "") + json.dumps({"t": time.time(), "playbook": event}) + "\n").encode())


def _read_lines(path: Path) -> list[dict]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line cut by a kill mid-write
            continue
    return out


def _starts(lines: list[dict]) -> list[dict]:
    return [line for line in lines if "playbook" not in line]  # the harness's own lines name the playbook


def read_starts(path: Path) -> list[dict]:
    """The callback's lines of one playbook run, in order (none when it wrote none)."""
    return _starts(_read_lines(path))


def _mark(lines: list[dict], event: str) -> float | None:
    return next((line["t"] for line in lines if line.get("playbook") == event), None)


def _r(seconds: float) -> float:
    return round(max(seconds, 0.0), 2)


def playbook_times(path: Path) -> dict:
    """One playbook run's wall time (from the harness's ``launched`` line to its ``exited`` line) split into
    ``startup_s`` (before its first play), ``plays`` (``[{play, s}]`` in order; a play run twice is
    listed twice) and ``roles`` (``{role: s}``, tasks outside a role not included). Without those
    lines (a harness killed mid-playbook) the wall time spans the callback's own lines."""
    lines = _read_lines(path)
    starts = _starts(lines)
    if not lines:
        return {"wall_s": 0.0, "startup_s": 0.0, "plays": [], "roles": {}}
    started = _mark(lines, "launched") or lines[0]["t"]
    ended = _mark(lines, "exited") or lines[-1]["t"]
    out = {"wall_s": _r(ended - started), "startup_s": _r((starts[0]["t"] if starts else ended) - started),
           "plays": [], "roles": {}}
    role_of_play = None
    for i, start in enumerate(starts):
        end = starts[i + 1]["t"] if i + 1 < len(starts) else ended
        seconds = max(end - start["t"], 0.0)
        if start.get("task") is None:  # a play starts
            out["plays"].append({"play": start["play"], "s": seconds})
            role_of_play = None
            continue
        if not out["plays"]:
            out["plays"].append({"play": start.get("play", ""), "s": 0.0})
        out["plays"][-1]["s"] += seconds
        role = start.get("role")
        if role in HELPER_ROLES and role_of_play:
            role = role_of_play
        if role:
            role_of_play = role
            out["roles"][role] = out["roles"].get(role, 0.0) + seconds
    out["plays"] = [{"play": p["play"], "s": _r(p["s"])} for p in out["plays"]]
    out["roles"] = {role: _r(s) for role, s in sorted(out["roles"].items(), key=lambda kv: -kv[1])}
    return out


def measured_window_s(tables: dict) -> float | None:
    """Seconds from the first measured block's arrival at the committer to the last one's commit
    (None when the point's tables hold no timed block)."""
    from .metrics import NS_PER_S, data_blocks  # pandas: not needed to measure (a kit's target has none)
    blocks = tables.get("blocks")
    if blocks is None or blocks.empty or not {"received_ns", "committed_ns"} <= set(blocks.columns):
        return None
    b = data_blocks(blocks)
    if b.empty:
        return None
    span = (b["committed_ns"].max() - b["received_ns"].min()) / NS_PER_S
    return round(float(span), 3) if span > 0 else None


def point_timing(wall_s: float, playbooks: dict[str, dict], collect_s: float) -> dict:
    """A point's ``timing``: its wall time, each playbook's split (``run``, ``teardown``) and the
    controller's conversion of raw files (``collect_s``); ``with_window`` adds the measured window."""
    return {"wall_s": _r(wall_s), "collect_s": _r(collect_s), **playbooks}


def with_window(timing: dict, window_s: float | None) -> dict:
    """``timing`` with the point's measured window and its wall time over that window."""
    return {"wall_s": timing["wall_s"], "measured_window_s": window_s,
            "wall_over_window": round(timing["wall_s"] / window_s, 1) if window_s else None,
            **{k: v for k, v in timing.items() if k != "wall_s"}}
