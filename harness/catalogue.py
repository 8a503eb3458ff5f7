"""Load and validate the paper catalogue (``papers/<paper>.yaml``) and system files
(``systems/<system>/{system,upstream}.yaml``); ``invoke validate`` checks them all (harness.validate).

Every catalogue file is checked against the harness's own minimal schema
(``harness/schemas/catalogue-minimal.json``: what the harness relies on) and,
when it exists, against the catalogue's schema ``papers/schema.json``; then
cross-references (claims and published values naming variants that exist) are
checked. Errors name the file, the JSON path and what was expected, e.g.::

    papers/fastfabric.yaml: experiments[0].runnable: expected boolean, got 'yes'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from . import REPO_ROOT, systems
from .errors import HarnessError, choose

SCHEMAS = Path(__file__).resolve().parent / "schemas"
SCALES = ("smoke", "local", "paper")


@dataclass
class Paper:
    """One validated catalogue file: the paper's metadata and its experiments."""

    id: str
    path: Path
    doc: dict
    experiments: list[dict] = field(default_factory=list)

    def experiment(self, experiment_id: str) -> dict:
        """Return the experiment ``experiment_id``; unknown ids list the valid ones."""
        by_id = {e["id"]: e for e in self.experiments}
        return by_id[choose("experiment", experiment_id, by_id)]


def load_yaml(path: Path) -> dict:
    """Parse a YAML file into a mapping; a syntax error names the file and line."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        raise HarnessError(f"{path}: no such file") from None
    except yaml.YAMLError as e:
        raise HarnessError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise HarnessError(f"{path}: expected a mapping at the top level, got {type(doc).__name__}")
    return doc


def json_path(parts) -> str:
    """Render a jsonschema path (deque of keys and indices) as ``a.b[0].c``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    """One line saying what was expected where, for a schema violation."""
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {expected}, got {error.instance!r}"
    if error.validator == "enum":
        return f"expected one of {error.validator_value}, got {error.instance!r}"
    if error.validator == "const":
        return f"expected {error.validator_value!r}, got {error.instance!r}"
    return error.message


def schema_errors(doc: dict, schema: dict, file: Path) -> list[str]:
    """Validate ``doc`` against ``schema``; return one message per violation, sorted by path."""
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{rel_path(file)}: {json_path(e.absolute_path)}: {_describe(e)}" for e in errors]


def rel_path(path: Path) -> str:
    """``path`` relative to the repository when inside it (shorter messages)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def load_schema(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def reference_errors(doc: dict, file: Path) -> list[str]:
    """Cross-reference checks a schema cannot express: ids unique, claims naming variants
    of their experiment (or of the experiment an operand names), published values naming
    variants of their experiment, axes naming a swept parameter."""
    errors = []
    seen = set()
    variants_of = {e.get("id"): {v.get("id") for v in e.get("variants") or []} for e in doc.get("experiments") or []}
    for i, exp in enumerate(doc.get("experiments") or []):
        where = f"{rel_path(file)}: experiments[{i}]"
        if exp.get("id") in seen:
            errors.append(f"{where}.id: duplicate experiment id {exp.get('id')!r}")
        seen.add(exp.get("id"))
        variants = variants_of[exp.get("id")]
        for j, pub in enumerate(exp.get("published") or []):
            if pub.get("variant") is not None and pub["variant"] not in variants:
                errors.append(f"{where}.published[{j}].variant: expected one of {sorted(variants)}, got {pub['variant']!r}")
        compared = [("claims", j, c) for j, c in enumerate(exp.get("claims") or [])] + \
            [("questions", j, q) for j, q in enumerate(exp.get("questions") or [])]
        for kind, j, claim in compared:
            for side in ("numerator", "denominator"):
                operand = claim.get(side) or {}
                other = operand.get("experiment", exp.get("id"))
                if other not in variants_of:
                    errors.append(f"{where}.{kind}[{j}].{side}.experiment: expected one of {sorted(variants_of)}, "
                                  f"got {other!r}")
                elif operand.get("variant") is not None and operand["variant"] not in variants_of[other]:
                    errors.append(f"{where}.{kind}[{j}].{side}.variant: expected one of "
                                  f"{sorted(variants_of[other])}, got {operand['variant']!r}")
        for j, other in enumerate(exp.get("revisits") or []):
            if other not in variants_of or other == exp.get("id") or (variants_of and any(
                    e.get("id") == other and e.get("revisits") for e in doc.get("experiments") or [])):
                errors.append(f"{where}.revisits[{j}]: expected one of the paper's own experiments, got {other!r}")
        if exp.get("revisits") and not exp.get("questions"):
            errors.append(f"{where}.revisits: a revisit states its questions (questions), so that it can come out "
                          "either way")
        for j, claim in enumerate(exp.get("claims") or []):
            if claim.get("compare") == "ratio" and not claim.get("denominator"):
                errors.append(f"{where}.claims[{j}].denominator: expected an object for a ratio claim")
        sweep = dict(((exp.get("parameters") or {}).get("sweep")) or {})
        for scale in (exp.get("scales") or {}).values():  # a scale may sweep what the text leaves open
            sweep.update((scale or {}).get("sweep") or {})
        x = (exp.get("axes") or {}).get("x")
        if exp.get("runnable") and x not in (None, "variant") and x not in sweep:
            errors.append(f"{where}.axes.x: expected 'variant' or a swept parameter {sorted(sweep)}, got {x!r}")
    return errors


def better_direction(metric: str) -> str | None:
    """Which side of ``metric`` is the better system: ``higher`` (rates), ``lower`` (latencies) or None.

    None for a difference, a share or a parameter value. A one-sided bound
    pointing to the worse side is met by a broken system (an upper bound on
    throughput passes at zero), so the catalogue may not use one.
    """
    if metric.endswith(("_tps", "_per_s")):
        return "higher"
    if metric.endswith("_ms") and metric != "latency_difference_ms":
        return "lower"
    return None


def trivial_bound_problems(doc: dict) -> list[str]:
    """Claims and published values whose one-sided bound a worse system satisfies trivially.

    An ``upper`` bound on a throughput (or a ratio of throughputs) is met by no
    throughput at all; a ``lower`` bound on a latency by an arbitrarily slow
    system. Such a statement is an approximate value to reach (``approx``), a
    comparison with another measurement, or qualitative.
    """
    out = []
    for exp in doc.get("experiments") or []:
        for kind in ("published", "claims"):
            for item in exp.get(kind) or []:
                if item.get("compare") == "qualitative" or item.get("bound") not in ("upper", "lower"):
                    continue
                metric = item.get("metric") or exp.get("metric")
                better = better_direction(metric or "")
                if better is None or "relative_to" in item:
                    continue
                if (item["bound"] == "upper") == (better == "higher"):
                    out.append(f"{exp['id']}/{kind}/{item['id']}: a{'n' if item['bound'] == 'upper' else ''} "
                               f"{item['bound']} bound on {metric} ({better} is better) cannot fail for a worse "
                               "system; use bound approx, a ratio with a measured value, or compare qualitative")
    return out


def declared_drivers(systems_dir: Path) -> list[str]:
    """Every driver a system declares for either build (``system.yaml`` ``reference.drivers``,
    ``upstream.yaml`` ``drivers``), read without validating the files (``invoke validate`` does that)."""
    names: set[str] = set()
    for path in sorted(Path(systems_dir).glob("*/system.yaml")):
        names |= set(((load_yaml(path).get("reference") or {}).get("drivers")) or {})
    for path in sorted(Path(systems_dir).glob("*/upstream.yaml")):
        names |= set(load_yaml(path).get("drivers") or {})
    return sorted(names)


def catalogue_schema(papers_dir: Path) -> dict | None:
    """``papers_dir/schema.json`` (None without one) with the enums of ``$defs.system`` and ``$defs.driver``
    filled in from the systems beside the papers (``papers_dir/../systems``, else this repository's): a new
    system and its drivers need no edit of the schema."""
    full = Path(papers_dir) / "schema.json"
    if not full.exists():
        return None
    schema = load_schema(full)
    systems_dir = Path(papers_dir).parent / "systems"
    if not systems_dir.is_dir():
        systems_dir = REPO_ROOT / "systems"
    defs = schema.get("$defs") or {}
    if "system" in defs:
        defs["system"] = {**defs["system"], "enum": list_systems(systems_dir)}
    if "driver" in defs:
        defs["driver"] = {**defs["driver"], "enum": declared_drivers(systems_dir)}
    return schema


def validate_catalogue(doc: dict, file: Path, papers_dir: Path) -> list[str]:
    """All errors of one catalogue document (minimal schema, catalogue schema, references)."""
    errors = schema_errors(doc, load_schema(SCHEMAS / "catalogue-minimal.json"), file)
    full = catalogue_schema(papers_dir)
    if full is not None:
        errors += [e for e in schema_errors(doc, full, file) if e not in errors]
    if not errors:
        errors = reference_errors(doc, file) + [f"{rel_path(file)}: {e}" for e in trivial_bound_problems(doc)]
    return errors


def list_papers(papers_dir: Path | None = None) -> list[str]:
    """Ids of the papers in the catalogue directory (file stems of ``*.yaml``)."""
    papers_dir = papers_dir or REPO_ROOT / "papers"
    return sorted(p.stem for p in papers_dir.glob("*.yaml"))


def load_paper(paper_id: str, papers_dir: Path | None = None) -> Paper:
    """Load and validate ``papers/<paper_id>.yaml``; raise HarnessError listing every problem."""
    papers_dir = papers_dir or REPO_ROOT / "papers"
    choose("paper", paper_id, list_papers(papers_dir))
    path = papers_dir / f"{paper_id}.yaml"
    doc = load_yaml(path)
    errors = validate_catalogue(doc, path, papers_dir)
    if errors:
        raise HarnessError("invalid catalogue:\n  " + "\n  ".join(errors))
    return Paper(id=paper_id, path=path, doc=doc, experiments=list(doc["experiments"]))


def scale_of(experiment: dict, scale: str) -> dict:
    """The experiment's settings at ``scale``; an unknown or undefined scale lists the valid ones."""
    choose("scale", scale, SCALES)
    scales = experiment.get("scales") or {}
    if scale not in scales:
        defined = ", ".join(sorted(scales)) or "(none)"
        raise HarnessError(f"experiment {experiment['id']!r} defines no {scale!r} scale; defined scales: {defined}")
    return dict(scales[scale])


def list_systems(systems_dir: Path | None = None) -> list[str]:
    """Ids of the systems that have a ``systems/<id>/system.yaml``."""
    systems_dir = systems_dir or REPO_ROOT / "systems"
    return sorted(p.parent.name for p in systems_dir.glob("*/system.yaml"))


def load_system(system_id: str, systems_dir: Path | None = None) -> dict:
    """Load and validate ``systems/<id>/system.yaml`` (its upstream recipe: ``load_upstream``)."""
    systems_dir = systems_dir or REPO_ROOT / "systems"
    choose("system", system_id, list_systems(systems_dir))
    path = systems_dir / system_id / "system.yaml"
    doc = load_yaml(path)
    errors = schema_errors(doc, load_schema(SCHEMAS / "system.json"), path)
    if errors:
        raise HarnessError("invalid system file:\n  " + "\n  ".join(errors))
    return doc


def upstream_errors(doc: dict, file: Path) -> list[str]:
    """All errors of an upstream recipe (``systems/<id>/upstream.yaml``): its schema, the system
    it names being the folder it is in, each patch's ``needed_by`` naming drivers of the recipe and
    its ``adds_targets`` targets of it, a patch reused from another system being there, and each
    component's (the recipe's and its flavours') build kind being one a system's plugin defines
    (``harness.systems.build_kinds``), with the kind's own fields as its schema says."""
    errors = schema_errors(doc, load_schema(SCHEMAS / "upstream.json"), file)
    folder = Path(file).resolve().parent.name
    if not errors and doc["system"] != folder:
        errors.append(f"{rel_path(file)}: system: expected {folder!r} (the folder the recipe is in), got {doc['system']!r}")
    for i, entry in enumerate(doc.get("patches") or [] if not errors else []):
        if isinstance(entry, dict):
            for field, known in (("needed_by", doc.get("drivers") or {}), ("adds_targets", doc["targets"])):
                unknown = [name for name in entry.get(field) or [] if name not in known]
                if unknown:
                    errors.append(f"{rel_path(file)}: patches[{i}].{field}: {', '.join(unknown)} not in the recipe's "
                                  f"{'drivers' if field == 'needed_by' else 'targets'} ({', '.join(known) or 'none'})")
            errors += _reused_patch_errors(entry, i, Path(file))
    if not errors:
        errors += build_kind_errors(doc, file)
    return errors


def _reused_patch_errors(entry: dict, i: int, file: Path) -> list[str]:
    """A patch entry naming another system: that system, and the file in its ``patches/``, exist.

    Checked when the recipe is read, not at build time only: the other system's folder may rename or
    drop the file without touching this recipe."""
    owner = entry.get("system")
    if not owner:
        return []
    systems_dir = file.resolve().parent.parent
    if not (systems_dir / owner / "system.yaml").is_file():
        return [f"{rel_path(file)}: patches[{i}].system: no system {owner!r} (systems: "
                f"{', '.join(list_systems(systems_dir)) or 'none'})"]
    if not (systems_dir / owner / "patches" / entry["patch"]).is_file():
        return [f"{rel_path(file)}: patches[{i}].patch: system {owner} has no patch {entry['patch']} "
                f"(systems/{owner}/patches/)"]
    return []


#: The fields of a component's ``build`` every kind has (harness/schemas/upstream.json); the rest are the kind's.
CORE_BUILD_FIELDS = ("kind", "outputs", "remove")


def build_kind_errors(doc: dict, file: Path) -> list[str]:
    """Each component's build kind is known, and the component's ``build`` fields beyond the core's are
    the kind's (its ``BuildKind.schema``; a field it does not name is refused)."""
    places = [("components", doc.get("components") or {})]
    places += [(f"flavours[{i}].components", f.get("components") or {})
               for i, f in enumerate(doc.get("flavours") or [])]
    if not any(components for _, components in places):
        return []  # without loading the plugins
    kinds = systems.build_kinds()
    errors = []
    for where, components in places:
        for name, component in components.items():
            spec, at = component["build"], f"{rel_path(file)}: {where}.{name}.build"
            kind = kinds.get(spec["kind"])
            if kind is None:
                errors.append(f"{at}.kind: unknown build kind {spec['kind']!r} (known: {', '.join(sorted(kinds))})")
                continue
            schema = {"type": "object", "additionalProperties": False, **kind.schema}
            fields = {k: v for k, v in spec.items() if k not in CORE_BUILD_FIELDS}
            found = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(fields),
                           key=lambda e: [str(p) for p in e.absolute_path])
            # one line per problem: jsonschema reports each missing field, the line names them all
            errors += dict.fromkeys(f"{at}{_kind_field_error(e, spec['kind'], schema)}" for e in found)
    return errors


def _kind_field_error(error: jsonschema.ValidationError, kind: str, schema: dict) -> str:
    """``.<field>: what is wrong`` for a violation of build kind ``kind``'s schema."""
    own = ", ".join(sorted(schema.get("properties") or {})) or "none"
    if error.validator == "additionalProperties" and not error.absolute_path:
        extra = sorted(set(error.instance) - set(schema.get("properties") or {}))
        return f".{', '.join(extra)}: not a field of build kind {kind!r} (its fields: {own})"
    if error.validator == "required" and not error.absolute_path:
        missing = sorted(f for f in error.validator_value if f not in error.instance)
        return f".{', '.join(missing)}: required by build kind {kind!r}"
    return f".{json_path(error.absolute_path)}: {_describe(error)} (build kind {kind!r})"


def load_upstream(system_id: str, systems_dir: Path | None = None) -> dict:
    """Load and validate ``systems/<id>/upstream.yaml``, the recipe of the system's upstream build
    (``harness.upstream`` builds it); raise HarnessError listing every problem."""
    path = (systems_dir or REPO_ROOT / "systems") / system_id / "upstream.yaml"
    doc = load_yaml(path)
    errors = upstream_errors(doc, path)
    if errors:
        raise HarnessError("invalid upstream recipe:\n  " + "\n  ".join(errors))
    return doc
