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
from dataclasses import dataclass, field
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


def _pid_alive(pid) -> bool:
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
        if self.metadata["status"] == "running" and _pid_alive(self.metadata.get("harness_pid")) \
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
        if status == "running" and not _pid_alive(meta.get("harness_pid")):
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


#: plan.make_plan's reason for a variant that ``--variant`` did not choose: such a run is restricted.
LEFT_OUT = "left out of this run"


def build_identity(meta: dict) -> dict:
    """What identifies a run's build: for upstream builds each variant's build key (commit, patches,
    flavours, toolchain; and its companions'), for the reference build this repository's commit (and
    whether the tree had changes)."""
    build = meta.get("build") or {}
    if build.get("kind") == "upstream":
        per = build.get("variants") or build.get("systems") or {}
        return {"kind": "upstream",
                "keys": {name: {"key": b.get("key") or b.get("built_commit"),
                                **({"companions": {c: x.get("key") for c, x in sorted(b["companions"].items())}}
                                   if b.get("companions") else {})}
                         for name, b in sorted(per.items())}}
    return {"kind": build.get("kind", "reference"),
            "source": str(build.get("source")) + ("-dirty" if (meta.get("git") or {}).get("dirty") else "")}


def configuration(run: "Run") -> dict:
    """What must be equal for runs of one experiment to be pooled: scale, build, provider, the cores its
    points ran on (``run_cores``) and the host's CPU model, the values of the parameters the run did
    not sweep (``cpus`` counts through the cores), and whether it planned control points (a run made with
    ``--no-control`` never pools with controlled ones)."""
    host = run.metadata.get("host") or {}
    resolved = run.stored("resolved")
    return {"scale": run.metadata.get("scale"), "controlled": bool(resolved.get("control")),
            "build": build_identity(run.metadata),
            "provider": run.metadata.get("provider"), "cores": run_cores(run, resolved),
            "cpu_model": host.get("cpu_model"),
            "parameters": {k: v.get("value") if isinstance(v, dict) else v
                           for k, v in sorted((resolved.get("parameters") or {}).items()) if k != "cpus"}}


def run_cores(run: "Run", resolved: dict | None = None) -> int | list[int] | None:
    """The cores a run's points ran on: the effective CPUs their processes were allowed, read back from
    the hosts (``cpus.of_point``; one value, or the sorted values where points differ, e.g. a ``cpus``
    sweep). Where no point recorded them: the ``cpus`` parameter's values, else the host's usable CPUs.

    Read back even without the ``cpus`` parameter: a process can be confined by something the harness
    did not ask for (Mitogen's strategy pinned every component to one CPU of two), and such a run must
    not be pooled with runs that had both."""
    resolved = resolved if resolved is not None else run.stored("resolved")
    fixed = (resolved.get("parameters") or {}).get("cpus")
    asked = (resolved.get("sweep") or {}).get("cpus") or (fixed.get("value") if isinstance(fixed, dict) else fixed)
    effective = sorted({ran["effective"] for point in sorted((run.path / "points").iterdir())
                        if (ran := cpus.of_point(point))}) if (run.path / "points").is_dir() else []
    if not effective and asked is None:
        return cpus.host_usable(run.metadata.get("host") or {})
    values = effective or (asked if isinstance(asked, list) else [asked])
    return values[0] if len(values) == 1 else values


def _build_difference(a: dict, b: dict) -> str:
    """``another build of fastfabric (0123abcd, not 4567ef01)`` from two ``build_identity`` values."""
    if a.get("kind") != b.get("kind"):
        return f"{a.get('kind')} build, not {b.get('kind')}"
    if "keys" not in a:
        return f"build of commit {a.get('source', '')[:12]}, not {b.get('source', '')[:12]}"
    keys_a, keys_b = a["keys"], b.get("keys") or {}
    changed = sorted(n for n in {**keys_a, **keys_b} if keys_a.get(n) != keys_b.get(n))
    return "another build of " + ", ".join(
        f"{n} ({str((keys_a.get(n) or {}).get('key'))[:8]}, not {str((keys_b.get(n) or {}).get('key'))[:8]})"
        if (keys_a.get(n) or {}).get("key") != (keys_b.get(n) or {}).get("key") else f"{n} (its companions)"
        for n in changed)


def configuration_difference(a: dict, b: dict) -> str:
    """Which facts of configuration ``a`` differ from ``b``, in words (``cores 16, not 2``)."""
    out = []
    for key in a:
        if a[key] == b.get(key):
            continue
        if key == "parameters":
            names = sorted(k for k in {**a[key], **b[key]} if a[key].get(k) != b[key].get(k))
            out += [f"{k}={a[key].get(k)}, not {b[key].get(k)}" for k in names]
        elif key == "build":
            out.append(_build_difference(a[key], b[key]))
        elif key == "controlled":
            out.append("made without control points (--no-control)" if not a[key] else "made with control points")
        else:
            out.append(f"{key.replace('_', ' ')} {a[key]}, not {b.get(key)}")
    return "; ".join(out)


@dataclass
class Selection:
    """The runs of one experiment a report shows, and every other run it saw.

    ``pooled``: complete runs of one configuration (the strongest stored: ``strength``), oldest first, whose
    repetitions are pooled; when no run is complete, the newest run alone (``complete`` False).
    ``listed``: every run considered, newest first, each ``{run_id, path, status, started_utc,
    pooled, why}`` (why: the reason it is not pooled).
    ``configurations``: every configuration with complete runs, strongest first, each ``{configuration, runs,
    repetitions, unmet, pooled, strength}`` (``unmet``: the ``judged_when`` conditions it falls short of;
    ``strength``: in words, why it ranks where it does).
    """

    pooled: list[Run]
    listed: list[dict]
    complete: bool
    configuration: dict
    configurations: list[dict] = field(default_factory=list)

    @property
    def shown(self) -> Run:
        """The newest pooled run (its figures and resources are shown)."""
        return self.pooled[-1]


def _since(value: str) -> str:
    """A ``--since`` date or time as the run ids' UTC form (``2025-01-31`` or ``2025-01-31T12:00:00Z``)."""
    for form in ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"):
        try:
            return iso(datetime.strptime(value, form))
        except ValueError:
            continue
    raise HarnessError(f"--since {value!r}: give a UTC date or time, e.g. 2025-01-31 or 2025-01-31T12:00:00Z")


#: Scales from the smallest: a larger scale is stronger evidence (more transactions a point).
SCALES = ("smoke", "local", "paper")


def _value(parameters: dict, name: str):
    value = (parameters or {}).get(name)
    return value.get("value") if isinstance(value, dict) and "value" in value else value


def unmet_conditions(judged_when: list[dict] | None, parameters: dict) -> list[dict]:
    """The ``judged_when`` conditions (papers/schema.json) that ``parameters`` (a configuration's resolved
    parameters) do not meet, each with the ``value`` measured; a condition whose parameters are unknown is
    left out (nothing to say it fails)."""
    out = []
    for cond in judged_when or []:
        value = _value(parameters, cond["parameter"])
        divisor = _value(parameters, cond["divided_by"]) if cond.get("divided_by") else 1
        if not isinstance(value, (int, float)) or not isinstance(divisor, (int, float)) or not divisor:
            continue
        if value / divisor < cond["min"]:
            out.append({**cond, "value": value / divisor})
    return out


def _core_counts(cores) -> list[int]:
    return sorted({int(c) for c in (cores if isinstance(cores, list) else [cores]) if isinstance(c, (int, float))})


def strength(config: dict, repetitions: int, unmet: list[dict], paper_cores: int | None) -> tuple:
    """How strongly a configuration's complete runs can judge an experiment's claims, as a key to sort by
    (larger is stronger): the ``judged_when`` conditions it meets (fewer unmet), its control points, its scale (``SCALES``), its
    cores (the paper's core count measured; then several core counts, which give a trend to the paper's; then
    the most cores), then the repetitions pooled."""
    counts = _core_counts(config.get("cores"))
    scale = SCALES.index(config.get("scale")) if config.get("scale") in SCALES else -1
    return (-len(unmet), bool(config.get("controlled")), scale, bool(paper_cores) and paper_cores in counts,
            len(counts) > 1, max(counts, default=0), repetitions)


def strength_text(config: dict, repetitions: int, unmet: list[dict]) -> str:
    """``scale local, cores [1, 2], 3 repetition(s), meets its judging conditions`` (``strength`` in words)."""
    counts = _core_counts(config.get("cores"))
    cores = ", ".join(map(str, counts)) or "unknown"
    return (f"scale {config.get('scale')}, {cores} core(s), {repetitions} repetition(s), "
            + (("falls short of " + ", ".join(c["what"] for c in unmet)) if unmet else "meets its judging conditions"))


def _stored_judging(run: Run) -> tuple[list[dict], int | None]:
    """The ``judged_when`` and the paper's cores a run's stored experiment.yaml states."""
    stored = run.stored("experiment") or {}
    experiment = stored.get("experiment") or {}
    cores = None
    for hardware in (experiment.get("hardware"), (stored.get("paper") or {}).get("hardware")):
        if isinstance(hardware, dict) and hardware.get("cores"):
            cores = int(hardware["cores"])
            break
    return experiment.get("judged_when") or [], cores


def select_runs(results: Path, paper: str, experiment: str, *, named: list[Path] | None = None,
                since: str | None = None, build_kind: str | None = None,
                judged_when: list[dict] | None = None) -> Selection | None:
    """The runs of an experiment to show: every complete run of the strongest configuration stored
    (``configuration``, ranked by ``strength``: the one whose scale and cores can judge the claims, then the
    most repetitions; the newest among equals), pooled, whatever ran last. Failed, interrupted, incomplete (a
    point of its plan missing: ``missing_points``), still running, abandoned and ``--variant``-restricted
    runs and complete runs of other configurations are listed, never shown instead of a complete run; with
    no complete run the newest run is shown alone. ``named`` (run directories) or ``since`` (a UTC date or
    time) restrict the runs considered; ``build_kind`` keeps only runs of that build. ``judged_when``: the
    catalogue's conditions for judging (else those of the newest run's stored experiment). None without runs.
    """
    named_paths = {Path(p).resolve() for p in named} if named is not None else None
    since = _since(since) if since else None
    runs, unreadable = [], []
    for meta_path in sorted(Path(results).glob(f"{paper}/{experiment}/*/metadata.json")):
        if meta_path.parent.is_symlink() or (named_paths is not None and meta_path.parent.resolve() not in named_paths):
            continue
        try:
            run = Run.open(meta_path.parent)
        except (HarnessError, json.JSONDecodeError) as e:
            unreadable.append({"run_id": meta_path.parent.name, "path": str(meta_path.parent), "status": "unreadable",
                               "started_utc": None, "pooled": False, "why": str(e)})
            continue
        if since and run.metadata["started_utc"] < since:
            continue
        if build_kind and (run.metadata.get("build") or {}).get("kind", "reference") != build_kind:
            continue
        runs.append(run)
    if not runs:
        return None
    runs.sort(key=lambda r: (r.metadata["started_utc"], r.id), reverse=True)

    missing = {r.id: r.missing_points() if r.metadata["status"] == "complete" else [] for r in runs}

    def status(run):
        s = run.metadata["status"]
        if s == "running" and not _pid_alive(run.metadata.get("harness_pid")):
            return "abandoned"
        return "incomplete" if missing[run.id] else s

    def left_out(run):
        return sorted(v for v, why in (run.stored("resolved").get("not_runnable_variants") or {}).items()
                      if str(why).startswith(LEFT_OUT))

    complete = [r for r in runs if status(r) == "complete" and not left_out(r)]
    configs = {r.id: configuration(r) for r in runs}
    stored_when, paper_cores = _stored_judging(runs[0])
    judged_when = stored_when if judged_when is None else judged_when
    # every configuration with complete runs (newest first, as ``complete``), ranked by its strength
    groups: list[dict] = []
    for run in complete:
        group = next((g for g in groups if g["configuration"] == configs[run.id]), None)
        if group is None:
            group = {"configuration": configs[run.id], "runs": [], "repetitions": 0,
                     "unmet": unmet_conditions(judged_when, configs[run.id]["parameters"])}
            groups.append(group)
        group["runs"].append(run.id)
        group["repetitions"] += int(run.stored("resolved").get("repetitions") or 0)
    for g in groups:
        g["strength"] = strength_text(g["configuration"], g["repetitions"], g["unmet"])
    order = sorted(range(len(groups)), key=lambda i: (strength(groups[i]["configuration"], groups[i]["repetitions"],
                                                               groups[i]["unmet"], paper_cores), -i), reverse=True)
    groups = [groups[i] for i in order]
    for i, g in enumerate(groups):
        g["pooled"] = i == 0
        g["runs"] = g["runs"][::-1]  # oldest first
    shown = groups[0]["configuration"] if groups else configs[runs[0].id]
    pooled, listed = [], []
    for run in runs:
        why = None
        if missing[run.id]:
            why = "incomplete: " + missing_reason(missing[run.id])
        elif status(run) != "complete":
            why = f"{status(run)}" + (f": {run.metadata['reason']}" if run.metadata.get("reason") else "")
        elif left_out(run):
            why = f"restricted to some variants ({', '.join(left_out(run))} left out)"
        elif configs[run.id] != shown:
            why = "another configuration: " + configuration_difference(configs[run.id], shown)
        if why is None or (not complete and run is runs[0]):
            pooled.append(run)
        listed.append({"run_id": run.id, "path": str(run.path), "status": status(run),
                       "started_utc": run.metadata["started_utc"], "pooled": run in pooled, "why": why})
    return Selection(pooled=pooled[::-1], listed=listed + unreadable, complete=bool(complete), configuration=shown,
                     configurations=groups)
