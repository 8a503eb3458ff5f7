"""One name per idea, one route per value (issue 32), read mechanically from the sources.

* Where a parameter is declared. ``harness/parameters.yaml`` holds a parameter only if the core reads it (a
  string constant of harness/*.py where a value is read: an index, a call's argument, a comparison, an
  assigned constant; a scale's size in papers/schema.json; a key of its role-variable tables) or systems that do not extend one another use it.
  A parameter of one system is declared in ``systems/<system>/parameters.yaml`` of the lowest system that every
  system using it is or extends: the base where a system and one extending it use it. A system *uses* a
  parameter its code names (a string constant of its non-test Python: its plugin reads it) or its table
  (``variables`` in its system.yaml) maps, else one its
  experiments set (a variant of that system in an experiment of papers/*.yaml that sets it: the variant's own
  parameters, or the experiment's fixed, sweep, workload, scales, reference_build, panels). The core defaults (harness/defaults.yaml) only the core's.
* Block size is one parameter, ``block_size``: every role variable of a block size (``*_block_size``,
  ``*_batch_size``) of every role a system's drivers run gets the point's ``block_size`` from the core's or the
  system's table, and has no default (every point has a block size, harness/defaults.yaml).
* One table per system (issue 47): a parameter reaches a role variable through the core's table
  (harness/runner.py) or its system's (``variables`` in system.yaml), each variable from one place: no table
  names a variable twice, no plugin hook sets one a table sets, a table's keys are numeric parameters or the
  counts the core derives (``runner.DERIVED``), its values variables of a role, and no role defaults a variable
  that a table sets from a parameter every point has (harness/defaults.yaml).
* A system's roles read only their own variables (and ``fabricrepro_*``, Ansible's, the hosts'): no variable
  of a shared role (playbooks/roles) is read in a system's role, nor in a system playbook's setting of one of
  its roles' variables. A shared role's variable a system role passes (``process_command:``) is set, not read;
  what a role recorded on its hosts and another reads through ``hostvars`` (``'kafka_broker_addresses'``, a
  broker's address) is a fact of the run, not a point's parameter.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from harness import REPO_ROOT, runner, systems
from harness.config import declarations, harness_defaults
from harness.errors import HarnessError
from harness.plan import Point

SYSTEMS = REPO_ROOT / "systems"
SHARED_ROLES = REPO_ROOT / "playbooks" / "roles"
HARNESS_DECLARED = yaml.safe_load((REPO_ROOT / "harness" / "parameters.yaml").read_text())
SYSTEM_DECLARED = {p.parent.name: yaml.safe_load(p.read_text()) or {} for p in sorted(SYSTEMS.glob("*/parameters.yaml"))}
ANNOTATIONS = ("note", "citation", "citations")


def _read_constants(paths) -> set[str]:
    """String constants of ``paths`` where a value is read: an index, a call's argument, a comparison's side,
    an assigned constant (or an element of an assigned tuple, list or set). A dict display's keys are writes."""
    out = set()
    for path in paths:
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Subscript):
                candidates = [node.slice]
            elif isinstance(node, ast.Call):
                candidates = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Compare):
                candidates = [node.left, *node.comparators]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = node.value
                candidates = [value, *(value.elts if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else [])]
            else:
                continue
            out |= {c.value for c in candidates if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return out


def _constants(paths) -> set[str]:
    return {n.value for path in paths for n in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


#: What the core reads: its code's read constants, the sizes of a scale (transactions, duration_s, repetitions) and
#: the parameters of its role-variable tables (harness/runner.py).
CORE_READS = (_read_constants(sorted((REPO_ROOT / "harness").rglob("*.py")))
              | set(json.loads((REPO_ROOT / "papers" / "schema.json").read_text())["$defs"]["scale"]["properties"])
              | set(runner.VARIABLES) | set(runner.WORKLOAD_VARIABLES))


def _extends() -> dict[str, str | None]:
    return {p.parent.name: (yaml.safe_load(p.read_text()) or {}).get("extends") for p in SYSTEMS.glob("*/system.yaml")}


EXTENDS = _extends()


def lineage(system: str) -> list[str]:
    """The system, the system it extends, and so on."""
    out = [system]
    while EXTENDS.get(out[-1]):
        out.append(EXTENDS[out[-1]])
    return out


def lowest_common_base(systems) -> str | None:
    """The lowest system that every one of ``systems`` is or extends (None: there is none)."""
    systems = sorted(systems)
    return next((s for s in lineage(systems[0]) if all(s in lineage(o) for o in systems[1:])), None)


def _names(mapping) -> set[str]:
    return {k for k in mapping if k not in ANNOTATIONS and not k.endswith("_note")} if isinstance(mapping, dict) else set()


def setters() -> dict[str, set[str]]:
    """Parameter -> the systems of the variants of the experiments that set it (papers/*.yaml)."""
    workload_defaults = {p.parent.name: _names((yaml.safe_load(p.read_text()) or {}).get("defaults"))
                         for p in (REPO_ROOT / "workloads").glob("*/workload.yaml")}
    out: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "papers").glob("*.yaml")):
        for e in yaml.safe_load(path.read_text())["experiments"]:
            params = e.get("parameters") or {}
            names = _names(params.get("fixed")) | _names(params.get("sweep"))
            workload = e.get("workload") or {}
            names |= (_names(workload) - {"name"}) | workload_defaults.get(workload.get("name"), set())
            for scale in (e.get("scales") or {}).values():
                names |= (_names(scale) - {"sweep"}) | _names((scale or {}).get("sweep"))
            names |= _names((e.get("reference_build") or {}).get("fixed"))
            for panel in e.get("panels") or []:
                names |= _names(panel.get("params"))
            for name in names:
                out.setdefault(name, set()).update(v["system"] for v in e.get("variants") or [])
            for v in e.get("variants") or []:  # a variant's own parameters: its system's alone
                for name in _names(v.get("parameters")):
                    out.setdefault(name, set()).add(v["system"])
    return out


def readers() -> dict[str, set[str]]:
    """Parameter -> the systems whose code (non-test Python) or own table (system.yaml ``variables``) names it."""
    declared = set(declarations())
    out: dict[str, set[str]] = {}
    for system in EXTENDS:
        code = [p for p in sorted((SYSTEMS / system).rglob("*.py")) if "tests" not in p.relative_to(SYSTEMS).parts]
        table = set((yaml.safe_load((SYSTEMS / system / "system.yaml").read_text()) or {}).get("variables") or {})
        for name in (_constants(code) | table) & declared:
            out.setdefault(name, set()).add(system)
    return out


SETTERS, READERS = setters(), readers()


def users(name: str) -> set[str]:
    return READERS.get(name) or SETTERS.get(name) or set()


@pytest.mark.parametrize("name", sorted(HARNESS_DECLARED))
def test_a_parameter_of_harness_parameters_yaml_is_the_cores_or_unrelated_systems(name):
    if name in CORE_READS:
        return
    families = {lineage(s)[-1] for s in users(name)}
    assert len(families) >= 2, (
        f"{name} is declared in harness/parameters.yaml, but the core does not read it and only "
        f"{sorted(users(name)) or 'no system'} use(s) it: declare it in systems/{lowest_common_base(users(name))}/"
        "parameters.yaml" if users(name) else f"{name} is declared in harness/parameters.yaml but nothing uses it")


@pytest.mark.parametrize("system, name", [(s, n) for s, names in SYSTEM_DECLARED.items() for n in names])
def test_a_systems_parameter_is_declared_by_the_lowest_system_all_its_users_are_or_extend(system, name):
    assert name not in CORE_READS, f"the core reads {name}: declare it in harness/parameters.yaml"
    assert users(name), f"{name} (systems/{system}/parameters.yaml): no experiment sets it and no code reads it"
    assert lowest_common_base(users(name)) == system, (
        f"{name} is used by {sorted(users(name))}: declare it in "
        + (f"systems/{lowest_common_base(users(name))}/parameters.yaml" if lowest_common_base(users(name))
           else "harness/parameters.yaml (systems that do not extend one another use it)"))
    unrelated = sorted(s for s in SETTERS.get(name, ()) if system not in lineage(s) and s not in lineage(system))
    assert not unrelated, f"{name} (systems/{system}/parameters.yaml) is set by experiments of {unrelated}"


def test_the_core_defaults_only_its_own_parameters():
    assert not sorted(set(harness_defaults()) - set(HARNESS_DECLARED)), \
        "harness/defaults.yaml defaults a parameter harness/parameters.yaml does not declare (a system's)"


# ---------------------------------------------------------------- block size: one parameter, every role's value

def role_dir(role: str) -> Path:
    found = [d for d in [SHARED_ROLES / role, *SYSTEMS.glob(f"*/roles/{role}")] if d.is_dir()]
    assert len(found) == 1, f"role {role}: {found}"
    return found[0]


def role_defaults(role: str) -> dict:
    return yaml.safe_load((role_dir(role) / "defaults" / "main.yml").read_text()) or {}


def role_options(role: str) -> dict:
    """A role's variables as its argument specs name them (every entry point's), with their specs."""
    specs = yaml.safe_load((role_dir(role) / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return {n: spec for entry in specs.values() for n, spec in (entry.get("options") or {}).items()}


def drivers() -> list[tuple[str, str, list[str], list[str]]]:
    """(system, driver, roles, companions) of every driver of every build."""
    out = []
    for system in sorted(EXTENDS):
        doc = yaml.safe_load((SYSTEMS / system / "system.yaml").read_text())
        specs = [((doc.get("reference") or {}).get("drivers") or {})]
        if (SYSTEMS / system / "upstream.yaml").exists():
            specs.append(yaml.safe_load((SYSTEMS / system / "upstream.yaml").read_text()).get("drivers") or {})
        out += [(system, name, spec.get("roles") or [], spec.get("companions") or [])
                for found in specs for name, spec in found.items()]
    return out


BLOCK_SIZE_VARIABLE = re.compile(r"_(block|batch)_size$")


@pytest.mark.parametrize("system, driver, roles, companions", drivers(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_roles_block_size_is_the_points_block_size(system, driver, roles, companions):
    parameters = {**harness_defaults(), "transactions": 740, "block_size": 37}
    point = Point(id="p", variant="v", system=system, label="v", repetition=0, sweep={}, parameters=parameters,
                  switches={})
    variables = runner.role_variables(point, companions)
    for role in roles:
        defaults = role_defaults(role)
        for name in {*defaults, *role_options(role)}:
            if BLOCK_SIZE_VARIABLE.search(name):
                assert name not in defaults, f"{role}: {name} has a default, which every point's block_size overrides"
                assert variables.get(name) == 37, f"{system} {driver}: {name} is not the point's block_size"


# ---------------------------------------------------------------- one table per system (issue 47)

def all_role_variables() -> set[str]:
    roles = [p for p in [*SHARED_ROLES.iterdir(), *SYSTEMS.glob("*/roles/*")] if p.is_dir()]
    return {n for r in roles for n in {*role_defaults(r.name), *role_options(r.name)}}


def tables() -> dict[str, dict[str, list[str]]]:
    """Each system's table (its lineage's), and the core's two (``core``, ``core workload``)."""
    return {"core": runner.VARIABLES, "core workload": runner.WORKLOAD_VARIABLES,
            **{s: systems.variables(s) for s in sorted(EXTENDS)}}


#: the parameter types each transform of a table takes
FITS = {"int": ("integer", "number"), "kib": ("integer", "number"), "number": ("integer", "number"),
        "float": ("number",), "bool": ("boolean",), "str": ("enum", "string")}


@pytest.mark.parametrize("owner, table", tables().items())
def test_a_table_maps_parameters_of_its_transforms_types_and_derived_counts_to_role_variables(owner, table):
    declared = declarations()
    known = all_role_variables()
    for name, variables in table.items():
        how = {var: "int" for var in variables} if owner.startswith("core") else systems.transforms(owner)
        for var in variables:  # a transform (harness/systems.py TRANSFORMS) fits the parameter's declared type
            fits = FITS[how[var]]
            assert name in runner.DERIVED and how[var] == "int" or (declared.get(name) or {}).get("type") in fits, \
                f"{owner}: {name} is neither a count the core derives ({runner.DERIVED}) nor a parameter of a " \
                f"type {how[var]} takes ({', '.join(fits)}) for {var}"
        assert not sorted(set(variables) - known), f"{owner}: {name} sets variables no role has"
        for var in variables:
            role = next(r for r in sorted(known_roles()) if var.startswith(r + "_"))
            # (the core's workload table reaches only points with transactions: its roles keep their defaults)
            assert var not in role_defaults(role) or name not in harness_defaults() or owner == "core workload", (
                f"{owner}: {var} has a default in role {role}, which every point's {name} overrides")


def known_roles() -> set[str]:
    return {p.name for p in [*SHARED_ROLES.iterdir(), *SYSTEMS.glob("*/roles/*")] if p.is_dir()}


FULL = {**harness_defaults(), "transactions": 740, "block_size": 37, "cpus": 3, "nodes": 4, "receivers": 2,
        "signing_threads": 2, "envelope_bytes": 40, "duration_s": 5, "workload_workers": 2, "workload_delay_ms": 1,
        "corrupt_creator_fraction": 0.01, "corrupt_endorsement_fraction": 0.02, "stale_read_fraction": 0.03}


@pytest.mark.parametrize("system", sorted(EXTENDS))
def test_no_hook_sets_a_variable_its_systems_table_sets(system):
    table = {v for vs in systems.variables(system).values() for v in vs}
    core = {v for t in (runner.VARIABLES, runner.WORKLOAD_VARIABLES) for vs in t.values() for v in vs}
    hooked = set(systems.plugin(system).role_variables(FULL))
    assert not sorted(hooked & (table | core)), f"{system}'s plugin sets variables a table sets"
    # a system's table may set a shared role's variable the core's sets only from a parameter not every point
    # has (it is applied after the core's: fabric-3.1's envelope_bytes pads the load generator's envelopes)
    overridden = {v for name, vs in systems.variables(system).items() if name not in harness_defaults() for v in vs}
    assert not sorted((table - overridden) & core), f"{system}'s table sets variables the core's table sets"
    assert not sorted(hooked & overridden), f"{system}'s plugin sets variables its table sets"


def test_the_core_derives_blocks_and_mutation_counts_once():
    assert runner.derived_counts({"transactions": 1001, "block_size": 100, "stale_read_fraction": 0.01}) == {
        "blocks": 11, "corrupt_creator_transactions": 0, "corrupt_endorsement_transactions": 0,
        "stale_read_transactions": 10, "accounts": 2002, "last_block": 3004}
    assert runner.derived_counts({"block_size": 100}) == {}
    point = Point(id="p", variant="v", system="fastfabric", label="v", repetition=0, sweep={}, parameters=FULL,
                  switches={})
    v = runner.role_variables(point)
    assert v["committerbench_blocks"] == v["fabric_peerbench_blocks"] == v["fastfabric_peerbench_blocks"] == 20
    assert (v["loadgen_corrupt_creator"], v["loadgen_forge_endorsement"], v["loadgen_stale_read"]) == (7, 15, 22)
    assert v["process_cpus"] == v["fastfabric_deliver_cpus"] == 3
    assert v["fastfabric_broadcast_messages"] == v["fastfabric_deliver_transfers"] == v["loadgen_transactions"] == 740
    assert v["loadgen_accounts"] == 1480 and v["blockwatch_stop_after"] == 1 + 1480 + 740
    v31 = runner.role_variables(Point(id="p", variant="v", system="fabric-3.1", label="v", repetition=0, sweep={},
                                      parameters=FULL, switches={}))
    assert v31["fabric3_caliper_accounts"] == v31["loadgen_accounts"] == 1480  # one count, two roles


def test_a_variable_named_twice_in_a_lineage_is_refused(tmp_path):
    for name, doc in (("base", {"variables": {"block_size": ["x_block_size"]}}),
                      ("child", {"extends": "base", "variables": {"transactions": ["x_block_size"]}})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "system.yaml").write_text(yaml.safe_dump(doc))
    assert systems.variables("base", tmp_path) == {"block_size": ["x_block_size"]}
    with pytest.raises(HarnessError, match="x_block_size is set from transactions"):
        systems.variables("child", tmp_path)


def test_no_parameter_names_a_block_size_but_block_size():
    assert not [n for n in declarations() if n != "block_size" and ("per_block" in n or BLOCK_SIZE_VARIABLE.search(n))]


# ---------------------------------------------------------------- a system's roles read their own variables

def shared_variables() -> set[str]:
    """Every variable of a shared role: its defaults, its argument specs, and ``<role>_*`` its own files name."""
    out = set()
    for role in sorted(p for p in SHARED_ROLES.iterdir() if p.is_dir()):
        out |= set(yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {})
        specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        out |= {n for entry in specs.values() for n in (entry.get("options") or {})}
        for f in [*role.glob("tasks/*.yml"), *role.glob("templates/*")]:
            out |= set(re.findall(rf"\b{role.name}_\w+", f.read_text(encoding="utf-8")))
    return out


SHARED = shared_variables()
SYSTEM_ROLES = sorted(p for p in SYSTEMS.glob("*/roles/*") if p.is_dir())
#: a read of a variable: not an attribute (``hostvars[h].x``), not a quoted name (``'x'``, a host's fact)
READ = re.compile(r"(?<![\w.'\"])(" + "|".join(sorted(map(re.escape, SHARED), key=len, reverse=True)) + r")(?![\w'\"])")


def _strings(node):
    """Every string value (not key) of a YAML document."""
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("role", SYSTEM_ROLES, ids=lambda p: p.name)
def test_a_system_role_reads_no_shared_roles_variable(role):
    found = []
    for f in sorted(role.rglob("*")):
        part = f.relative_to(role).parts[0]
        if not f.is_file() or part not in ("defaults", "tasks", "templates", "vars", "handlers"):
            continue
        text = f.read_text(encoding="utf-8")
        values = ([" ".join(re.findall(r"\{\{.*?\}\}|\{%.*?%\}", text, re.S))] if part == "templates"
                  else list(_strings(yaml.safe_load(text))))
        found += [f"{f.relative_to(REPO_ROOT)}: {m}" for v in values for m in READ.findall(v)]
    assert not found, "a system role reads a shared role's variable (pass it through the plugin's role_variables):\n" \
                      + "\n".join(found)


def _settings(node, prefixes):
    """``(key, value)`` of every mapping entry of a YAML document whose key starts with one of ``prefixes``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.startswith(prefixes):
                yield key, value
            yield from _settings(value, prefixes)
    elif isinstance(node, list):
        for value in node:
            yield from _settings(value, prefixes)


@pytest.mark.parametrize("playbook", sorted(SYSTEMS.glob("*/playbooks/*.yml")), ids=lambda p: p.name)
def test_a_system_playbook_sets_its_roles_variables_from_no_shared_roles_variable(playbook):
    prefixes = tuple(f"{r.name}_" for r in SYSTEM_ROLES)
    found = [f"{key}: {m}" for key, value in _settings(yaml.safe_load(playbook.read_text()), prefixes)
             for s in _strings(value) for m in READ.findall(s)]
    assert not found, f"{playbook.relative_to(REPO_ROOT)} sets a system role's variable from a shared role's:\n" \
                      + "\n".join(found)
