"""The run directory: the contract between phases (docs/results-format.md).

    results/<paper>/<experiment>/<run-id>/      run-id = <UTC time>-<git short sha>[-dirty]
        metadata.json  experiment.yaml  resolved.yaml
        points/<point>/...  points/<point>/attempts/<n>/...  summary.json  figures/  report.md
    results/<paper>/<experiment>/latest -> <run-id>

A run directory is never overwritten. ``metadata.json`` is written when the run
starts (status ``running``) and rewritten when it ends with ``complete``,
``failed`` or ``interrupted`` and the reason. SIGINT and SIGTERM end a run as
``interrupted`` with everything it stored kept; ``--resume`` reopens it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import yaml

from . import REPO_ROOT, SCHEMA_VERSION, cpus
from .errors import HarnessError, Interrupted

#: A run's status (``metadata.json``). ``incomplete``: a run whose plan's points are not all there (a kit's run
#: ingested without some of the points its plan, kept at home, holds: harness/kit.py).
STATUSES = ("running", "complete", "failed", "interrupted", "incomplete")
#: ``points/<point>/attempts/<n>/``: what each earlier attempt of a resumed or retried point left.
ATTEMPTS = "attempts"


def write_json(path: Path, doc) -> None:
    """Write ``doc`` as stable JSON (sorted keys, 2-space indent) atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> dict:
    """Read a persisted JSON file, rejecting schema versions this harness does not know."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise HarnessError(f"{path}: schema_version {doc.get('schema_version')!r} is not supported "
                           f"(this harness reads {SCHEMA_VERSION})")
    return doc


def write_yaml(path: Path, doc) -> None:
    """Write ``doc`` as YAML with the keys in their given order."""
    Path(path).write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")


def utc_now() -> datetime:
    """The current time in UTC, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def iso(t: datetime) -> str:
    """``2025-01-31T12:00:00Z``."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def git_state(root: Path = REPO_ROOT) -> dict:
    """The repository's commit (full and short sha) and whether the tree has changes."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False).stdout.strip()
    sha = git("rev-parse", "HEAD") or "unknown"
    return {"sha": sha, "short": sha[:7] if sha != "unknown" else "nogit",
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def run_id(started: datetime, git: dict) -> str:
    """``<UTC time>-<git short sha>[-dirty]``, e.g. ``20250131T120000Z-1a2b3c4-dirty``."""
    return f"{started.strftime('%Y%m%dT%H%M%SZ')}-{git['short']}" + ("-dirty" if git["dirty"] else "")


def host_facts() -> dict:
    """CPU model, core count, memory and kernel of this machine."""
    model, memory = "unknown", None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
                break
    return {"cpu_model": model, "cpus_online": os.cpu_count(), "cpus_usable": len(cpus.usable()), "memory_bytes": memory,
            "kernel": platform.release(), "os": platform.system(), "machine": platform.machine()}


def _first_line(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else None


def tool_versions() -> dict:
    """Versions of the tools and libraries a run depends on (None when absent: a kit's target measures
    without the analysis libraries, harness/kit_run.py)."""
    from .tools import ansible_strategy
    return {
        "python": sys.version.split()[0],
        **{name: _module_version(name) for name in ("pandas", "pyarrow", "matplotlib")},
        "go": _first_line(["go", "version"]),
        "protoc": _first_line(["protoc", "--version"]),
        "ansible": _first_line(["ansible-playbook", "--version"]),
        "ansible_strategy": ansible_strategy(),
    }


def _module_version(name: str) -> str | None:
    """A Python package's ``__version__``, None when it is not installed."""
    try:
        return importlib.import_module(name).__version__
    except ImportError:
        return None


def pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


@dataclass
class Run:
    """One run directory and its metadata."""

    path: Path
    metadata: dict

    @property
    def id(self) -> str:
        return self.path.name

    def save(self) -> None:
        """Rewrite metadata.json from ``self.metadata``."""
        write_json(self.path / "metadata.json", self.metadata)

    @classmethod
    def create(cls, results: Path, paper: dict, experiment: dict, resolved: dict, *,
               provider: str, build: dict, seed=None,
               started: datetime | None = None, git: dict | None = None) -> "Run":
        """Create a new run directory and write its inputs and ``running`` metadata.

        ``paper`` is the catalogue's ``paper`` mapping and ``experiment`` one of
        its experiments; both are stored in ``experiment.yaml`` so that the run
        can be analysed and reported without the catalogue.
        The directory name is unique: if a run of the same second and commit
        exists, a counter is appended rather than overwriting it. ``git`` is the harness's commit when
        it is not this tree's (a kit's target has no repository: the commit the kit was built from).
        """
        started = started or utc_now()
        git = git or git_state()
        parent = Path(results) / paper["id"] / experiment["id"]
        parent.mkdir(parents=True, exist_ok=True)
        base = run_id(started, git)
        for n in range(1000):
            path = parent / (base if n == 0 else f"{base}.{n}")
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        (path / "points").mkdir()
        write_yaml(path / "experiment.yaml", {"schema_version": SCHEMA_VERSION, "paper": paper,
                                              "experiment": experiment})
        write_yaml(path / "resolved.yaml", resolved)
        run = cls(path=path, metadata={
            "schema_version": SCHEMA_VERSION,
            "paper": paper["id"],
            "experiment": experiment["id"],
            "run_id": path.name,
            "status": "running",
            "reason": None,
            "scale": resolved.get("scale"),
            "git": git,
            "build": build,
            "provider": provider,
            "roles": {},          # component -> hosts, set once the provider has made them
            "seed": seed,
            "host": host_facts(),
            "tool_versions": tool_versions(),
            "started_utc": iso(started),
            "ended_utc": None,
            "resumed_utc": [],
            "harness_pid": os.getpid(),
        })
        run.save()
        link = parent / "latest"
        tmp = parent / ".latest.tmp"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(path.name)
        os.replace(tmp, link)
        return run

    @classmethod
    def open(cls, path: Path) -> "Run":
        """Open an existing run directory (for ``--resume`` and for reports)."""
        path = Path(path).resolve()
        if not (path / "metadata.json").exists():
            raise HarnessError(f"{path} is not a run directory (no metadata.json)")
        return cls(path=path, metadata=read_json(path / "metadata.json"))

    def resume(self) -> None:
        """Mark a stored run as running again; refuses a run that is still running."""
        if self.metadata["status"] == "running" and pid_alive(self.metadata.get("harness_pid")) \
                and self.metadata.get("harness_pid") != os.getpid():
            raise HarnessError(f"run {self.path} is still running (pid {self.metadata['harness_pid']})")
        self.metadata.update(status="running", reason=None, ended_utc=None, harness_pid=os.getpid())
        self.metadata["resumed_utc"].append(iso(utc_now()))
        self.save()

    def finish(self, status: str, reason: str | None = None) -> None:
        """Record the run's final status, its reason and the end time."""
        if status not in STATUSES[1:]:
            raise ValueError(f"final status must be one of {STATUSES[1:]}")
        self.metadata.update(status=status, reason=reason, ended_utc=iso(utc_now()))
        self.save()

    def stored(self, name: str) -> dict:
        """A stored YAML input of the run (``experiment`` or ``resolved``)."""
        return yaml.safe_load((self.path / f"{name}.yaml").read_text(encoding="utf-8"))

    def planned_points(self) -> list[str]:
        """The points of the run's plan, controls included, as ``resolved.yaml`` lists them."""
        return [str(p) for p in self.stored("resolved").get("points") or []]

    def missing_points(self) -> list[str]:
        """The points of the run's plan that the run does not hold (no ``points/<point>/point.json``): a run
        missing one is not complete, whatever its metadata says (a point folder deleted since)."""
        return [p for p in self.planned_points() if not (self.path / "points" / p / "point.json").is_file()]

    def point_dir(self, point_id: str) -> Path:
        """``points/<point>/``, created on first use."""
        path = self.path / "points" / point_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def keep_attempt(self, point_id: str) -> Path | None:
        """Move what an earlier attempt of a point left (summary, logs, raw files, tables, metrics) to
        ``points/<point>/attempts/<n>/`` (n = 1, 2, ... in order) before the point runs again; returns it.

        None when the point has not run before. A resumed or retried point so
        never overwrites the attempt it replaces.
        """
        path = self.path / "points" / point_id
        left = [p for p in path.iterdir() if p.name != ATTEMPTS] if path.is_dir() else []
        if not left:
            return None
        attempts = path / ATTEMPTS
        attempts.mkdir(exist_ok=True)
        n = 1 + max((int(p.name) for p in attempts.iterdir() if p.name.isdigit()), default=0)
        dest = attempts / str(n)
        dest.mkdir()
        for p in left:
            os.replace(p, dest / p.name)
        return dest

    @contextlib.contextmanager
    def lifecycle(self):
        """Run the body with SIGINT/SIGTERM turned into ``Interrupted``, then finish the run.

        The body may set ``self.metadata['outcome']`` to ``("failed", reason)`` to
        end a run that raised nothing as failed (e.g. some points failed).
        Interrupts end it as ``interrupted``, errors as ``failed`` with the
        message as reason (a traceback goes to ``harness.log``); both re-raise.
        """
        with interrupts_raise():
            try:
                yield self
            except Interrupted as e:
                self.finish("interrupted", str(e))
                raise
            except BaseException as e:
                with open(self.path / "harness.log", "a", encoding="utf-8") as log:
                    traceback.print_exc(file=log)
                self.finish("failed", str(e).splitlines()[0] if str(e) else type(e).__name__)
                raise
            outcome = self.metadata.pop("outcome", None)
            self.finish(*(outcome or ("complete", None)))


@contextlib.contextmanager
def interrupts_raise():
    """Within the block, SIGINT and SIGTERM raise ``Interrupted`` in the main thread."""
    def handler(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextlib.contextmanager
def interrupts_deferred(say=None):
    """Within the block, SIGINT and SIGTERM are noted, not raised: a point's teardown, which stops the processes
    the point started, runs to its end first (its own timeout bounds it). Yields the list of the signals' names
    received; the caller raises ``Interrupted`` after the block. Outside the main thread, signals cannot be
    caught here and nothing changes."""
    got: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def handler(signum, _frame):
        got.append(signal.Signals(signum).name)
        if say and len(got) == 1:
            say(f"{got[0]}: the run stops once this point's processes are stopped (its teardown)")
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def list_runs(results: Path, paper: str | None = None) -> list[dict]:
    """Every stored run (optionally of one paper), oldest first, with its status.

    A run whose metadata says running but whose harness process is gone is
    reported as ``abandoned`` (killed without a chance to record it).
    """
    rows = []
    for meta_path in sorted(Path(results).glob(f"{paper or '*'}/*/*/metadata.json")):
        if meta_path.parent.is_symlink():
            continue
        try:
            meta = read_json(meta_path)
        except (HarnessError, json.JSONDecodeError) as e:
            rows.append({"path": str(meta_path.parent), "status": "unreadable", "reason": str(e)})
            continue
        status, reason = meta["status"], meta.get("reason")
        if status == "running" and not pid_alive(meta.get("harness_pid")):
            status = "abandoned"
        points = sorted((meta_path.parent / "points").glob("*/summary.json"))
        total = len(yaml.safe_load((meta_path.parent / "resolved.yaml").read_text()).get("points") or [])
        done = sum(1 for p in points if json.loads(p.read_text()).get("status") == "complete")
        missing = Run(meta_path.parent, meta).missing_points() if status == "complete" else []
        if missing:
            status, reason = "incomplete", missing_reason(missing)
        rows.append({"path": str(meta_path.parent), "paper": meta["paper"], "experiment": meta["experiment"],
                     "run_id": meta["run_id"], "status": status, "reason": reason,
                     "scale": meta.get("scale"), "started_utc": meta["started_utc"],
                     "points_done": done, "points_total": total})
    return sorted(rows, key=lambda r: (r.get("started_utc") or "", r["path"]))


def missing_reason(missing: list[str]) -> str:
    """Why a run missing points of its plan is not complete, naming them."""
    return (f"{len(missing)} planned point(s) missing (resolved.yaml lists them, points/ does not hold them): "
            + ", ".join(missing))


def latest_complete_run(results: Path, paper: str, experiment: str, build: str) -> Run | None:
    """The newest complete run of an experiment made with ``build`` (upstream or reference), if any: one
    holding every point of its plan."""
    found = None
    for meta_path in sorted(Path(results).glob(f"{paper}/{experiment}/*/metadata.json")):
        if meta_path.parent.is_symlink():
            continue
        meta = read_json(meta_path)
        if meta.get("status") == "complete" and (meta.get("build") or {}).get("kind") == build \
                and not Run(meta_path.parent, meta).missing_points():
            if found is None or meta["started_utc"] >= found[0]:
                found = (meta["started_utc"], meta_path.parent)
    return Run.open(found[1]) if found else None
