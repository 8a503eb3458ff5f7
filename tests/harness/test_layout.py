"""The architecture, checked on the sources (parsed with ``ast``, not imported):

* a system's code imports nothing of the harness but ``harness.plugin_api`` (its
  ``tests/`` excepted: tests drive the whole harness);
* no import cycle among the harness's modules and the systems' modules, counting
  imports inside functions too (a lazy import hides a loop, it does not break it)
  and the plugin loader's edge: ``harness.systems`` loads every system's package,
  and the edge to a package of a submodule imported: importing ``a.b.c`` runs
  ``a`` and ``a.b`` first (STYLE.md rule 17);
* no module imports another module's private name (``_x``), neither by name nor
  as an attribute of a module it imported (``analyze._band``); tests, here as
  in ``tests/``, may reach into the module they test;
* the core names no system: no identifier and no string in ``harness/`` is a
  system's folder name or one of its short names;
* no harness module is over ``MAX_MODULE_LINES`` lines and no function of one over
  ``MAX_FUNCTION_LINES`` (issue 47): past that a module or a function does more than one job.

A system's modules are the package ``fabricrepro_systems.<name with _>`` rooted
at its folder, ``plugin.py`` being the package itself (harness/systems.py), so
their relative imports resolve as they do when the harness loads them.

Docstrings may name a system, as the example that explains a general rule
("e.g. FastFabric's peer benchmark times MVCC ..."); code may not. Prose is
also allowed in strings when it names the paper's system as the paper does
(``FastFabric``, ``BFT-SMaRt``): the check is on the lowercase names code uses
to select a system, its folder name and short names.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harness"
SYSTEMS = ROOT / "systems"
PACKAGE = "fabricrepro_systems"  # harness.systems.PACKAGE, restated: this test imports nothing it checks

#: Short names of systems that roles, modules and files use besides the folder names.
ALIASES = ("fujitsu", "bftsmart", "fabric06")


def _ident(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def system_folders() -> list[str]:
    return sorted(p.parent.name for p in SYSTEMS.glob("*/system.yaml"))


@dataclass(frozen=True)
class Import:
    """One import statement's target in one module."""
    source: str     # the importing module
    target: str     # the imported module
    line: int
    names: tuple    # names imported from the target (``from target import a, b``), or ()


def modules() -> dict[str, Path]:
    """``{dotted module name: file}`` of every harness and system module."""
    out = {}
    for path in HARNESS.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for folder in system_folders():
        base = f"{PACKAGE}.{_ident(folder)}"
        for path in (SYSTEMS / folder).rglob("*.py"):
            parts = path.relative_to(SYSTEMS / folder).with_suffix("").parts
            if parts in (("plugin",), ("__init__",)):
                out[base] = path
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((base, *parts))] = path
    return out


def is_package(name: str, path: Path) -> bool:
    return path.name == "__init__.py" or (path.name == "plugin.py" and name.count(".") == 1
                                          and name.startswith(PACKAGE + "."))


def package_of(name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return name if is_package(name, path) else name.rpartition(".")[0]


def from_target(package: str, node: ast.ImportFrom) -> str:
    """The module ``from <module> import ...`` names, relative imports resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """The imports of module ``name`` (at any depth of its code) that name a known module."""
    out = []
    package = package_of(name, path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for n in range(len(parts), 0, -1):  # ``import a.b.c``: the deepest module we know
                    if ".".join(parts[:n]) in known:
                        out.append(Import(name, ".".join(parts[:n]), node.lineno, ()))
                        break
        elif isinstance(node, ast.ImportFrom):
            target = from_target(package, node)
            attributes = []
            for alias in node.names:
                if f"{target}.{alias.name}" in known:  # ``from . import logs``: a module
                    out.append(Import(name, f"{target}.{alias.name}", node.lineno, ()))
                else:
                    attributes.append(alias.name)
            if attributes and target in known:
                out.append(Import(name, target, node.lineno, tuple(attributes)))
    return [i for i in out if i.target != name]


#: The module that loads the systems' plugins (by path, not by an import statement) and the one module
#: a system may import: restated here, this test imports nothing it checks.
LOADER, API = "harness.systems", "harness.plugin_api"


def package_edges(edges: list[Import], known: dict[str, Path]) -> list[Import]:
    """The packages each import runs first: importing ``a.b.c`` runs ``a`` and ``a.b`` (their
    ``__init__``), so a module importing ``a.b.c`` has an edge to each of them too. A package the
    importing module is itself inside (or is) is already running when the module runs: no edge to it."""
    out = []
    for e in edges:
        parts = e.target.split(".")
        for n in range(1, len(parts)):
            package = ".".join(parts[:n])
            if package in known and package != e.source and not e.source.startswith(package + "."):
                out.append(Import(e.source, package, e.line, ()))
    return out


def graph() -> tuple[dict[str, Path], list[Import]]:
    """Every module and import edge, with the loader's edge to each system's package (its ``plugin.py``)
    and each import's edges to the packages above the module it names."""
    known = modules()
    edges = [i for name, path in sorted(known.items()) for i in imports(name, path, known)]
    edges += package_edges(edges, known)
    edges += [Import(LOADER, f"{PACKAGE}.{_ident(folder)}", 0, ()) for folder in system_folders()
              if (SYSTEMS / folder / "plugin.py").is_file()]
    return known, edges


def cycles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        succ.setdefault(e.source, set()).add(e.target)
        succ.setdefault(e.target, set())
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def loop_through(component: list[str], edges: list[Import]) -> list[Import]:
    """One import loop inside ``component``, from its first module back to it (breadth first)."""
    inside = set(component)
    succ: dict[str, list[Import]] = {}
    for e in edges:
        if e.source in inside and e.target in inside:
            succ.setdefault(e.source, []).append(e)
    start = component[0]
    paths = {start: []}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for e in succ.get(v, []):
                if e.target == start:
                    return paths[v] + [e]
                if e.target not in paths:
                    paths[e.target] = paths[v] + [e]
                    nxt.append(e.target)
        frontier = nxt
    return []


def module_names(name: str, path: Path, tree: ast.AST, known: dict[str, Path]) -> dict[str, str]:
    """``{local name: module}`` of the names module ``name`` binds to one of our modules
    (``from . import analyze``, ``import harness.analyze as analyze``)."""
    package = package_of(name, path)
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update((a.asname, a.name) for a in node.names if a.asname and a.name in known)
        elif isinstance(node, ast.ImportFrom):
            target = from_target(package, node)
            out.update((a.asname or a.name, f"{target}.{a.name}") for a in node.names
                       if f"{target}.{a.name}" in known)
    return out


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_import_cycle():
    known, edges = graph()
    assert "harness.catalogue" in known and any(m.startswith(PACKAGE + ".") for m in known)
    problems = []
    for component in cycles(edges):
        loop = loop_through(component, edges)
        steps = " -> ".join([loop[0].source] + [f"{e.target} ({known[e.source].relative_to(ROOT)}:{e.line})"
                                                for e in loop])
        problems.append(f"import loop among {', '.join(component)}: {steps}")
    assert not problems, "\n".join(problems)


def beyond_the_api(known: dict[str, Path], edges: list[Import], root: Path = ROOT) -> list[str]:
    """Imports of harness modules other than the plugin API by a system's code (not its tests)."""
    return [f"{known[e.source].relative_to(root)}:{e.line}: imports {e.target}" for e in edges
            if e.source.startswith(PACKAGE + ".") and not is_test(known[e.source], root)
            and e.target.split(".")[0] == "harness" and e.target != API
            and not API.startswith(e.target + ".")]  # the package above the API runs first


def test_systems_import_only_the_plugin_api():
    known, edges = graph()
    assert any(e.target == API for e in edges if e.source.startswith(PACKAGE + "."))
    problems = beyond_the_api(known, edges)
    assert not problems, "systems import harness modules other than the plugin API:\n" + "\n".join(problems)


def is_test(path: Path, root: Path = ROOT) -> bool:
    """A system's tests (``systems/<name>/tests/``): like ``tests/``, they may reach into the module they test."""
    return "tests" in path.relative_to(root).parts


def test_no_private_name_imported_from_another_module():
    known, edges = graph()
    known = {name: path for name, path in known.items() if not is_test(path)}
    edges = [e for e in edges if e.source in known]
    problems = [f"{known[e.source].relative_to(ROOT)}:{e.line}: imports {n} from {e.target}"
                for e in edges for n in e.names if private(n)]
    problems += [f"{known[e.source].relative_to(ROOT)}:{e.line}: imports the private module {e.target}"
                 for e in edges if private(e.target.rpartition(".")[2])]
    for name, path in sorted(known.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        bound = module_names(name, path, tree, known)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in bound):
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: uses {node.value.id}.{node.attr}, "
                                f"a private name of {bound[node.value.id]}")
    assert not problems, "\n".join(problems)


def docstrings(tree: ast.AST) -> set[int]:
    """``id`` of every docstring's node in ``tree``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def identifiers(node: ast.AST) -> list[str]:
    """The identifiers a node introduces or uses."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [*node.name.split("."), *([node.asname] if node.asname else [])]
    if isinstance(node, ast.ImportFrom) and node.module:
        return node.module.split(".")
    return []


def test_core_names_no_system():
    names = [*system_folders(), *ALIASES]
    assert {"fastfabric", "fabric-1.2", "validation-opt", "fujitsu-api", "bftsmart-orderer"} <= set(names)
    # in a string: the name as a word (``systems/fastfabric/``, ``"fabric06_peer"``), lowercase as code writes it
    in_string = re.compile("|".join(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9]|\.[0-9])" for n in names))
    # in an identifier: the name's identifier form as words between underscores, in any case
    in_identifier = re.compile("|".join(rf"(?:^|_){_ident(n)}(?:_|$)" for n in names), re.IGNORECASE)
    problems = []
    for path in sorted(HARNESS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = docstrings(tree)
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                if m := in_string.search(node.value):
                    problems.append(f"{where}:{node.lineno}: the string {node.value!r} names {m.group(0)!r}")
            for ident in identifiers(node):
                if in_identifier.search(ident):
                    problems.append(f"{where}:{getattr(node, 'lineno', '?')}: the identifier {ident!r} names a system")
    assert not problems, "the core (harness/) names systems:\n" + "\n".join(problems)


def test_the_checks_see_a_loop_a_private_import_and_a_lazy_import(tmp_path):
    """The parser on a made-up package: relative and function-level imports make edges."""
    (tmp_path / "a.py").write_text("from .b import _helper\n")
    (tmp_path / "b.py").write_text("def f():\n    from . import a\n")
    known = {"harness.a": tmp_path / "a.py", "harness.b": tmp_path / "b.py"}
    edges = [i for name, path in known.items() for i in imports(name, path, known)]
    assert {(e.source, e.target, e.names) for e in edges} == {("harness.a", "harness.b", ("_helper",)),
                                                              ("harness.b", "harness.a", ())}
    assert cycles(edges) == [["harness.a", "harness.b"]]


def test_the_checks_see_a_system_reaching_past_the_api_and_the_loaders_loop(tmp_path):
    """A made-up system importing the core's internals is caught, its tests are not; the loader's edge
    closes a loop through a core module that imports the loader."""
    folder = tmp_path / "systems" / "toy" / "tests"
    folder.mkdir(parents=True)
    (folder.parent / "plugin.py").write_text("from harness.plugin_api import Table\nfrom harness import analyze\n")
    (folder / "test_toy.py").write_text("from harness import analyze\n")
    (tmp_path / "api.py").write_text("from . import analyze\n")
    (tmp_path / "analyze.py").write_text("from . import systems\n")
    (tmp_path / "systems.py").write_text("")
    known = {f"{PACKAGE}.toy": folder.parent / "plugin.py", f"{PACKAGE}.toy.tests.test_toy": folder / "test_toy.py",
             API: tmp_path / "api.py", "harness.analyze": tmp_path / "analyze.py", LOADER: tmp_path / "systems.py"}
    edges = [i for name, path in known.items() for i in imports(name, path, known)]
    assert beyond_the_api(known, edges, tmp_path) == ["systems/toy/plugin.py:2: imports harness.analyze"]
    assert not cycles(edges)
    edges.append(Import(LOADER, f"{PACKAGE}.toy", 0, ()))  # the loader's edge, as graph() adds it
    assert cycles(edges) == [sorted([API, "harness.analyze", LOADER, f"{PACKAGE}.toy"])]


def test_the_checks_see_a_loop_through_a_package_init(tmp_path):
    """Negative control of rule 17: ``a`` imports ``pkg.sub`` and ``pkg``'s ``__init__`` imports ``a``.
    Module by module there is no loop (``a -> pkg.sub``, ``pkg -> a``); counting that importing
    ``pkg.sub`` runs ``pkg`` first, there is. A package importing its own submodules, which import
    each other, is no loop."""
    package = tmp_path / "pkg"
    package.mkdir()
    (tmp_path / "a.py").write_text("def f():\n    from .pkg.sub import g\n")
    (package / "__init__.py").write_text("from .sub import g\nfrom .other import h\n\ndef k():\n    from .. import a\n")
    (package / "sub.py").write_text("def g():\n    pass\n")
    (package / "other.py").write_text("from .sub import g\nfrom . import sub\n\ndef h():\n    pass\n")
    known = {"harness.a": tmp_path / "a.py", "harness.pkg": package / "__init__.py",
             "harness.pkg.sub": package / "sub.py", "harness.pkg.other": package / "other.py"}
    edges = [i for name, path in known.items() for i in imports(name, path, known)]
    assert not cycles(edges)  # what the check saw before rule 17
    added = package_edges(edges, known)
    assert {(e.source, e.target) for e in added} == {("harness.a", "harness.pkg")}
    assert cycles(edges + added) == [["harness.a", "harness.pkg"]]


def upward_go_imports(listing: str) -> list[str]:
    """From ``go list -f '{{.ImportPath}} {{join .Imports " "}}'`` lines: an ``internal/`` package importing a
    workload (``workloads/`` stands above ``internal/``: the commands choose the workloads they run)."""
    problems = []
    for line in listing.splitlines():
        package, *deps = line.split()
        if "/internal/" in f"/{package}/":
            problems += [f"{package} imports {d}" for d in deps if d.startswith("fabricrepro/workloads/")]
    return problems


@pytest.mark.skipif(not shutil.which("go"), reason="needs go (invoke setup)")
def test_no_internal_go_package_imports_a_workload():
    listing = subprocess.run(["go", "list", "-f", '{{.ImportPath}} {{join .Imports " "}}', "./internal/..."],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "fabricrepro/internal/peer" in listing
    assert not upward_go_imports(listing)
    # the check on a made-up listing: an internal package importing a workload is caught, a command is not
    assert upward_go_imports("fabricrepro/internal/peer fmt fabricrepro/workloads/money-transfer\n"
                             "fabricrepro/cmd/peer fabricrepro/workloads/money-transfer") == [
        "fabricrepro/internal/peer imports fabricrepro/workloads/money-transfer"]


def _component_kinds(node) -> set[str]:
    """The component build kinds a recipe (or part of one) names: ``components.<name>.build.kind``, flavours too."""
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "components" and isinstance(value, dict):
                out |= {c["build"]["kind"] for c in value.values() if isinstance((c or {}).get("build"), dict)}
            out |= _component_kinds(value)
    elif isinstance(node, list):
        for value in node:
            out |= _component_kinds(value)
    return out


def system_only_names(systems: Path = SYSTEMS) -> dict[str, str]:
    """``{name: what it is}`` of what belongs to systems: the component build kinds their recipes use, the OS
    packages their ``system.yaml`` ``setup`` installs, and the parameters their ``parameters.yaml`` declare."""
    out = {}
    for recipe in sorted(systems.glob("*/upstream.yaml")):
        out.update({k: f"a build kind of {recipe.parent.name}" for k in _component_kinds(yaml.safe_load(recipe.read_text()))})
    for path in sorted(systems.glob("*/system.yaml")):
        setup = (yaml.safe_load(path.read_text()) or {}).get("setup") or {}
        packages = [*(setup.get("apt") or []), *(p for ps in (setup.get("apt_if_command_missing") or {}).values() for p in ps)]
        out.update({p: f"an OS package of {path.parent.name}" for p in packages})
    for path in sorted(systems.glob("*/parameters.yaml")):
        out.update({p: f"a parameter of {path.parent.name}" for p in (yaml.safe_load(path.read_text()) or {})})
    return out


def core_mentions(names: dict[str, str], harness: Path = HARNESS) -> list[str]:
    """Where the core's code (strings that are not docstrings) or its own parameter and defaults files name one
    of ``names``. A package the core itself installs (``toolchain.APT_PACKAGES``) may also be a system's."""
    problems = []
    for path in sorted(harness.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                    and node.value in names:
                problems.append(f"{path.relative_to(harness.parent)}:{node.lineno}: {node.value!r} is {names[node.value]}")
    for name in ("parameters.yaml", "defaults.yaml"):
        declared = yaml.safe_load((harness / name).read_text()) or {} if (harness / name).is_file() else {}
        problems += [f"harness/{name}: {key!r} is {names[key]}" for key in declared if key in names]
    return problems


def test_the_core_holds_no_system_only_build_kind_package_or_parameter():
    names = system_only_names()
    assert {"ant", "couchdb-release"} <= set(names) and any("parameter of" in w for w in names.values())
    problems = core_mentions(names)
    assert not problems, "the core holds what belongs to a system:\n" + "\n".join(problems)


def test_the_check_sees_a_build_kind_a_package_and_a_parameter_in_the_core(tmp_path):
    systems, harness = tmp_path / "systems", tmp_path / "harness"
    (systems / "toy").mkdir(parents=True)
    harness.mkdir()
    (systems / "toy" / "upstream.yaml").write_text("flavours:\n  x:\n    components:\n      c: {build: {kind: toy-make}}\n")
    (systems / "toy" / "system.yaml").write_text("setup: {apt: [libtoy-dev]}\n")
    (systems / "toy" / "parameters.yaml").write_text("toy_depth: {type: integer}\n")
    (harness / "upstream.py").write_text('"""Builds, e.g. with toy-make."""\nKINDS = ["toy-make"]\nAPT = ("libtoy-dev",)\n')
    (harness / "parameters.yaml").write_text("toy_depth: {type: integer}\nblock_size: {type: integer}\n")
    names = system_only_names(systems)
    assert names == {"toy-make": "a build kind of toy", "libtoy-dev": "an OS package of toy",
                     "toy_depth": "a parameter of toy"}
    assert core_mentions(names, harness) == ["harness/upstream.py:2: 'toy-make' is a build kind of toy",
                                             "harness/upstream.py:3: 'libtoy-dev' is an OS package of toy",
                                             "harness/parameters.yaml: 'toy_depth' is a parameter of toy"]


MAX_MODULE_LINES, MAX_FUNCTION_LINES = 600, 100


def oversized(path: Path) -> list[str]:
    """A module's lines over ``MAX_MODULE_LINES``, and each function (methods and nested ones too) over
    ``MAX_FUNCTION_LINES``, its docstring counted."""
    text = path.read_text(encoding="utf-8")
    out = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        out.append(f"{path}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(f"{path}:{node.lineno}: {node.name} is {n} lines (at most {MAX_FUNCTION_LINES})")
    return out


def test_no_harness_module_or_function_is_oversized():
    found = [o for path in sorted(HARNESS.rglob("*.py")) for o in oversized(path)]
    assert not found, "\n".join(found)


def test_the_size_check_sees_a_long_module_and_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    long_function = tmp_path / "long_function.py"
    long_function.write_text(f"def f():\n{body}\n", encoding="utf-8")
    assert [o.split(": ", 1)[1] for o in oversized(long_function)] == [f"f is {MAX_FUNCTION_LINES + 1} lines "
                                                                        f"(at most {MAX_FUNCTION_LINES})"]
    long_module = tmp_path / "long_module.py"
    long_module.write_text("\n".join(f"x{i} = {i}" for i in range(MAX_MODULE_LINES + 1)) + "\n", encoding="utf-8")
    assert oversized(long_module) == [f"{long_module}: {MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})"]
    fine = tmp_path / "fine.py"
    fine.write_text("def g():\n    return 1\n", encoding="utf-8")
    assert oversized(fine) == []
