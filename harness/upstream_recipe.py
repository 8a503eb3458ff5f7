"""An upstream recipe (``systems/<system>/upstream.yaml``) read for a build: its patch series, the
flavours a variant's switches pick, the recipe at another pin, and applying a patch to a tree.

The recipe is validated when read (``catalogue.load_upstream``: its schema, and each component's
``build`` against its build kind's schema). A patch entry may name another system (``{patch, system,
why}``): the file is that system's, so one fix lives in one file; the build records the patch's
content hash, never its path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import REPO_ROOT
from .catalogue import load_system, load_upstream, load_yaml
from .errors import HarnessError, choose
from .upstream_source import run_command

SYSTEMS = REPO_ROOT / "systems"
#: Patch header fields we read (DEP-3 style, plus our Kind and Changes-measured-path).
PATCH_FIELDS = ("Description", "Kind", "Changes-measured-path", "Origin", "Forwarded", "Paper")


def systems_with_recipe(systems_dir: Path = SYSTEMS) -> list[str]:
    """Ids of the systems whose ``upstream.yaml`` is a build recipe (schema version 2)."""
    return sorted(p.parent.name for p in Path(systems_dir).glob("*/upstream.yaml")
                  if (load_yaml(p) or {}).get("schema_version") == 2)


def load_recipe(system: str, systems_dir: Path = SYSTEMS) -> dict:
    """The validated ``upstream.yaml`` of ``system`` (``catalogue.load_upstream``); an unknown system
    lists the systems that have a recipe."""
    choose("upstream system", system, systems_with_recipe(systems_dir))
    return load_upstream(system, Path(systems_dir))


@dataclass(frozen=True)
class Patch:
    """One patch of a series: its file, content hash and header fields, and the recipe's note on it.

    ``needed_by``: the drivers that need it (None: every driver); ``adds_targets``:
    the targets it creates, not built where it is left out (``patches_for_driver``);
    ``system``: the system whose ``patches/`` holds it, where that is not the recipe's.
    """
    name: str
    path: Path
    sha256: str
    header: dict
    needed_by: tuple[str, ...] | None = None
    adds_targets: tuple[str, ...] = ()
    system: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "sha256": self.sha256, **({"system": self.system} if self.system else {}),
                **{k.lower().replace("-", "_"): v for k, v in self.header.items()}}


def read_patch(path: Path) -> Patch:
    """Read a patch file and its header (the lines before the first ``diff``/``---``)."""
    data = Path(path).read_bytes()
    header: dict[str, str] = {}
    key = None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith(("diff --git", "--- ", "Index: ")):
            break
        m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
        if m and m.group(1) in PATCH_FIELDS:
            key = m.group(1)
            header[key] = m.group(2).strip()
        elif key and line.startswith((" ", "\t")) and line.strip():
            header[key] += " " + line.strip()
        else:
            key = None
    missing = [f for f in ("Description", "Kind") if f not in header]
    if missing:
        raise HarnessError(f"patch {path}: header lacks {', '.join(missing)} (see docs/upstream.md)")
    return Patch(Path(path).name, Path(path), hashlib.sha256(data).hexdigest(), header)


def patch_series(system: str, recipe: dict, systems_dir: Path = SYSTEMS, names: list[str] | None = None) -> list[Patch]:
    """The recipe's patches (or ``names``), in order, read from ``systems/<system>/patches/`` (or from the
    ``patches/`` of the system an entry names).

    A recipe's entry is a file name, or ``{patch, system, needed_by, adds_targets, why, applies}``
    (harness/schemas/upstream.json).
    """
    out = []
    for entry in recipe.get("patches") or [] if names is None else names:
        note = entry if isinstance(entry, dict) else {"patch": entry}
        owner = note.get("system") or system
        path = Path(systems_dir) / owner / "patches" / note["patch"]
        if not path.is_file():
            whose = "" if owner == system else f"{owner}'s "
            raise HarnessError(f"systems/{system}/upstream.yaml lists {whose}patch {note['patch']}, "
                               f"but {path} does not exist")
        needed_by = note.get("needed_by")
        out.append(dataclasses.replace(read_patch(path), needed_by=None if needed_by is None else tuple(needed_by),
                                       adds_targets=tuple(note.get("adds_targets") or ()),
                                       system=None if owner == system else owner))
    return out


def patches_for_driver(patches: list[Patch], driver: str) -> tuple[list[Patch], list[Patch]]:
    """The patches ``driver`` needs, and those it does not (``invoke regress``)."""
    kept = [p for p in patches if p.needed_by is None or driver in p.needed_by]
    return kept, [p for p in patches if p not in kept]


def matching_flavours(system: str, recipe: dict, switches: dict | None, systems_dir: Path = SYSTEMS) -> list[dict]:
    """The recipe's flavours whose ``when`` holds for ``switches`` (defaults from ``system.yaml``), in order.

    A variant's switches pick the build: e.g. FastFabric's O-I alone is the
    published tree plus a patch restoring Fabric 1.2's broadcast handler.
    """
    flavours = recipe.get("flavours") or []
    if not flavours:
        return []
    declared = (load_system(system, systems_dir).get("reference") or {}).get("switches") or {}
    values = {name: spec.get("default") for name, spec in declared.items()}
    values.update(switches or {})
    out = []
    for flavour in flavours:
        unknown = sorted(set(flavour["when"]) - set(values))
        if unknown:
            raise HarnessError(f"systems/{system}/upstream.yaml flavour {flavour['name']}: "
                               f"unknown switch(es) {', '.join(unknown)} (declared: {', '.join(sorted(values))})")
        if all(values[k] == v for k, v in flavour["when"].items()):
            out.append(flavour)
    bases = [f["name"] for f in out if f.get("base")]
    if len(bases) > 1:
        raise HarnessError(f"systems/{system}/upstream.yaml: flavours {', '.join(bases)} all set a base; "
                           "at most one matching flavour may")
    return out


def component_patches(recipe: dict, systems_dir: Path = SYSTEMS) -> dict[str, list[Patch]]:
    """Each component's own patch series (``components.<name>.patches``, files in ``systems/<system>/patches/``)."""
    return {name: patch_series(recipe["system"], recipe, systems_dir, names=c.get("patches") or [])
            for name, c in (recipe.get("components") or {}).items()}


def component_kinds(recipe: dict) -> list[str]:
    """The build kinds of the recipe's components, sorted (their toolchains join the build key in this order)."""
    return sorted({c["build"]["kind"] for c in (recipe.get("components") or {}).values()})


def at_pin(recipe: dict, pin: dict) -> dict:
    """The recipe built at another commit of its repository (``invoke regress``).

    ``pin`` gives the ``commit``, optionally the ``ref`` naming it (a tag) and a
    ``clone_url`` (a local clone of the repository, so that each commit is not
    fetched from the network again). The snapshot holds only the recipe's own
    pin, so the tree comes from git; the patches, toolchain and targets stay
    (``build`` applies only those the pin's ``driver`` needs, and records a
    patch already in the tree instead of applying it).
    """
    return {**recipe, "commit": pin["commit"], "ref": pin.get("ref"), "ref_moves": False, "snapshot": None,
            "clone_url": pin.get("clone_url") or recipe.get("clone_url")}


def _git_apply_env(tree: Path) -> dict:
    # GIT_CEILING_DIRECTORIES keeps git from treating an enclosing checkout as the repository.
    return {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}


def apply_patch(patch: Patch, tree: Path) -> None:
    run_command(["git", "apply", "--whitespace=nowarn", str(patch.path.resolve())], f"apply {patch.name}", cwd=tree,
                env=_git_apply_env(tree))


def already_applied(patch: Patch, tree: Path) -> list[str] | None:
    """Whether the tree already holds the patch (e.g. a fix upstream made itself): None if not; else the
    files the patch would create that the tree lacks (e.g. a regression test of ours), left out.

    Held: the patch does not apply, and its reverse applies to the files it
    changes. A patch that only creates files is never held.
    """
    text = patch.path.read_text(encoding="utf-8", errors="replace")
    created = re.findall(r"^--- /dev/null\n\+\+\+ b/(\S+)$", text, flags=re.MULTILINE)
    ours = [path for path in created if not (tree / path).exists()]
    if len(ours) == len(re.findall(r"^diff --git ", text, flags=re.MULTILINE)):
        return None

    def check(*flags: str) -> bool:
        return subprocess.run(["git", "apply", "--check", "--whitespace=nowarn", *flags, str(patch.path.resolve())],
                              cwd=tree, env=_git_apply_env(tree), capture_output=True, check=False).returncode == 0
    if check() or not check("--reverse", *(f"--exclude={path}" for path in ours)):
        return None
    return ours

