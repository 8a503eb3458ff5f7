#!/usr/bin/env python3
"""Dry run of the upstream deploy: render every template of every role a
variant's playbook applies, for every host of an inventory, as Ansible would
(role defaults < inventory variables < play variables < include_role
variables, with Jinja2 and the Ansible filters the templates use), then check
each rendered configuration file against the keys that upstream version reads
and the keys it requires (infra/upstream_keys/<key set>/<file>.keys).

    python3 infra/upstream_dryrun.py --inventory infra/inventories/fastfabric-15.example.yml \
        --variant fastfabric --out /tmp/dryrun

Writes <out>/<host>/<role>/<file> and <out>/report.json (problems, and the
required keys each file lacks under missing_required); exits 1 when any
template fails to render, any file has a key the version does not know, or
any file lacks a key the version requires (`!` in the .keys file).
Nothing here contacts a host: it is the check that runs where the upstream
builds cannot.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import yaml

REPO = Path(__file__).resolve().parent.parent
ROLES = REPO / "playbooks" / "upstream" / "roles"
KEYS = REPO / "infra" / "upstream_keys"

# Key-set directories searched, in order, for each variant key_set; the
# property files of Kafka and ZooKeeper are shared by every Fabric 1.x set.
KEY_SEARCH = {
    "fabric-1.2": ["fabric-1.2", "kafka-1.0", "zookeeper-3.4"],
    "fabric-0.6": ["fabric-0.6"],
    "bftsmart-os": ["bftsmart-os", "fabric-1.1-bftsmart", "fabric-1.2"],
}
# Rendered file name -> (key file name, format). Files not listed are only
# rendered (systemd units, sysctl.d, myid), which still catches undefined variables.
CHECKED = {
    "core.yaml": ("core.yaml.keys", "yaml"),
    "orderer.yaml": ("orderer.yaml.keys", "yaml"),
    "configtx.yaml": ("configtx.yaml.keys", "yaml"),
    "crypto-config.yaml": ("crypto-config.yaml.keys", "yaml"),
    "config.yaml": ("pbft-config.yaml.keys", "yaml"),
    "zoo.cfg": ("zoo.cfg.keys", "properties"),
    "server.properties": ("server.properties.keys", "properties"),
    "system.config": ("system.config.keys", "properties"),
    "node.config": ("node.config.keys", "properties"),
    "hosts.config": (None, "bftsmart-hosts"),
}


# ---------------------------------------------------------------- inventory

def load_inventory(path: Path) -> tuple[dict[str, list[str]], dict[str, dict]]:
    """Parse an Ansible YAML inventory into (groups, hostvars).

    Precedence as Ansible's: all.vars < parent group vars < child group vars < host vars.
    """
    data = yaml.safe_load(path.read_text()) or {}
    groups: dict[str, list[str]] = {"all": []}
    hostvars: dict[str, dict] = {}

    def walk(name: str, node: dict, inherited: dict) -> list[str]:
        node = node or {}
        gvars = {**inherited, **(node.get("vars") or {})}
        members: list[str] = []
        for host, hv in (node.get("hosts") or {}).items():
            hostvars.setdefault(host, {})
            hostvars[host] = {**gvars, **hostvars[host], **(hv or {})}
            members.append(host)
            if host not in groups["all"]:
                groups["all"].append(host)
        for child, cnode in (node.get("children") or {}).items():
            members += walk(child, cnode, gvars)
        groups.setdefault(name, [])
        for h in members:
            if h not in groups[name]:
                groups[name].append(h)
        return members

    walk("all", data.get("all", {}), {})
    return groups, hostvars


def resolve_pattern(pattern: str, groups: dict[str, list[str]]) -> list[str]:
    """Resolve a play's `hosts:` (a:b unions, g[0] indexing) to host names in order."""
    out: list[str] = []
    for part in pattern.split(":"):
        m = re.fullmatch(r"([A-Za-z0-9_\-]+)(?:\[(\d+)\])?", part.strip())
        if not m:
            raise ValueError(f"unsupported host pattern {part!r}")
        members = groups.get(m.group(1), [])
        if m.group(2) is not None:
            idx = int(m.group(2))
            members = members[idx:idx + 1]
        out += [h for h in members if h not in out]
    return out


# ---------------------------------------------------------------- Jinja as Ansible

def _bool(v) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("yes", "true", "1", "on", "y")
    return bool(v)


def _version_test(value, other, op=">="):
    def parts(v):
        return [int(p) for p in re.findall(r"\d+", str(v))]
    a, b = parts(value), parts(other)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b,
            "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]


def make_env(templates: Path | None = None) -> jinja2.Environment:
    """A Jinja2 environment with Ansible's defaults (trim_blocks) and the filters the roles use."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)) if templates else None,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,  # Ansible's template module default
        keep_trailing_newline=True,
    )
    env.filters.update({
        "bool": _bool,
        "to_nice_json": lambda v: json.dumps(v, indent=4, sort_keys=True),
        "to_json": json.dumps,
        "regex_replace": lambda v, pat, rep="": re.sub(pat, rep, str(v)),
        "extract": lambda key, container, morekey=None: (container[key] if morekey is None else container[key][morekey]),
        "dict2items": lambda d: [{"key": k, "value": v} for k, v in d.items()],
        "mandatory": lambda v: v,
    })
    env.tests.update({
        "version": _version_test,
        "match": lambda v, pat: re.match(pat, str(v)) is not None,
        "none": lambda v: v is None,
    })
    env.globals["lookup"] = lambda plugin, *terms, **kw: os.environ.get(terms[0], "") if plugin.endswith("env") else ""
    return env


def resolve_vars(raw: dict, base: dict, env: jinja2.Environment, passes: int = 12) -> dict:
    """Template every string value of `raw` against base+raw until stable (Ansible's lazy templating)."""
    ctx = {**base, **raw}

    def render(value, ctx):
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            expr = value.strip()
            m = re.fullmatch(r"\{\{(.*)\}\}", expr, re.S)
            if m and "{{" not in m.group(1):
                # A lone expression keeps its type (lists, dicts, None), as in Ansible.
                return env.compile_expression(m.group(1).strip(), undefined_to_none=False)(**ctx)
            return env.from_string(value).render(**ctx)
        if isinstance(value, list):
            return [render(v, ctx) for v in value]
        if isinstance(value, dict):
            return {k: render(v, ctx) for k, v in value.items()}
        return value

    for _ in range(passes):
        changed = False
        for k in list(raw):
            try:
                new = render(ctx[k], ctx)
            except jinja2.UndefinedError:
                continue  # may resolve once another variable does
            if isinstance(new, jinja2.Undefined):
                continue
            if new != ctx[k]:
                ctx[k] = new
                changed = True
        if not changed:
            break
    return ctx


# ---------------------------------------------------------------- key checks

@dataclass
class KeySet:
    """A parsed .keys file: every pattern (for the unknown-key check) and the
    patterns marked required with a leading `!`."""
    known: list[list[str]]
    required: list[list[str]]


def load_key_set(path: Path) -> KeySet:
    """Read a .keys file; `!` before a line marks that key (or section) required."""
    known: list[list[str]] = []
    required: list[list[str]] = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        mark = line.startswith("!")
        pat = line.lstrip("!").strip().split(".")
        known.append(pat)
        if mark:
            required.append(pat)
    return KeySet(known, required)


def load_keys(path: Path) -> list[list[str]]:
    """Read a .keys file into split patterns (required marks dropped)."""
    return load_key_set(path).known


def leaf_paths(node, prefix: tuple = ()) -> list[tuple]:
    """Dotted leaf paths of a parsed YAML document; lists of maps become `key[]`."""
    if isinstance(node, dict) and node:
        out = []
        for k, v in node.items():
            out += leaf_paths(v, prefix + (str(k),))
        return out
    if isinstance(node, list) and node and all(isinstance(i, dict) for i in node):
        out = []
        head = prefix[:-1] + (prefix[-1] + "[]",)
        for item in node:
            out += leaf_paths(item, head)
        return out
    return [prefix] if prefix else []


def path_known(path: tuple, patterns: list[list[str]]) -> bool:
    """True when some pattern matches the path segment by segment (`*` = any one segment)."""
    for pat in patterns:
        if len(pat) == len(path) and all(p == "*" or p == s for p, s in zip(pat, path)):
            return True
    return False


def _section(pattern: list[str]) -> str:
    """A pattern as written in a .keys file, list marks dropped (`Orgs[].Name` -> `Orgs.Name`)."""
    return ".".join(s[:-2] if s.endswith("[]") else s for s in pattern)


def missing_required(doc, required: list[list[str]]) -> list[str]:
    """Required patterns absent from a parsed YAML document, as concrete dotted paths.

    Each required pattern is followed from the document root one segment at a
    time. A literal segment must be present; `name[]` descends into every map
    item of the list; `*` stands for every key present (and, as the last
    segment, is satisfied by any one). When a segment is absent, the pattern is
    reported only if every level from that segment down is itself required
    (the key, or a section marked with its own `!` line): a required key under
    an optional parent that is absent altogether does not count. A required
    key present with an empty value counts as absent (viper reads it as unset).
    """
    declared = {_section(r) for r in required}
    missing: list[str] = []

    def walk(node, pat: list[str], i: int, concrete: list[str]) -> None:
        if i == len(pat):
            return
        seg = pat[i]
        # Absent from here on: count it only if every level from here down is required.
        here_required = all(j == len(pat) - 1 or _section(pat[:j + 1]) in declared
                            for j in range(i, len(pat)))
        rest = ".".join(pat[i:])

        def report() -> None:
            if here_required:
                path = ".".join(concrete + [rest]) if concrete else rest
                if path not in missing:
                    missing.append(path)

        children = node if isinstance(node, dict) else {}
        if seg == "*":
            if not children:
                report()
                return
            if i == len(pat) - 1:
                return  # any name satisfies a trailing `*`
            for k, v in children.items():
                walk(v, pat, i + 1, concrete + [str(k)])
            return
        name, is_list = (seg[:-2], True) if seg.endswith("[]") else (seg, False)
        if name not in children:
            report()
            return
        value = children[name]
        if i == len(pat) - 1 and not is_list and (value is None or value == [] or str(value).strip() == ""):
            report()  # an empty value is read as unset
            return
        if is_list:
            items = [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []
            for item in items:
                walk(item, pat, i + 1, concrete + [seg])
            return
        walk(value, pat, i + 1, concrete + [name])

    for pat in required:
        walk(doc, pat, 0, [])
    return missing


def parse_property_lines(text: str) -> list[tuple[str, str]]:
    """(name, value) of each property of a Java .properties / BFT-SMaRt .config file."""
    props = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([^=\s]+)\s*=(.*)$", line)
        if not m:
            raise ValueError(f"not a key=value line: {line!r}")
        props.append((m.group(1), m.group(2).strip()))
    return props


def parse_properties(text: str) -> list[str]:
    """Property names of a Java .properties / BFT-SMaRt .config file."""
    return [k for k, _ in parse_property_lines(text)]


def _wildcard(name: str) -> re.Pattern:
    """A property pattern (`server.*`) as a regular expression over one property name."""
    return re.compile(re.escape(name).replace(r"\*", r"[^.]+") + "$")


@dataclass
class FileCheck:
    """Outcome of checking one rendered file: every problem, and the required keys it lacks."""
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def check_file(name: str, text: str, key_dirs: list[str]) -> FileCheck:
    """Check one rendered file: unknown keys, missing required keys, unparsable
    content, unrendered None values."""
    out = FileCheck()
    if name not in CHECKED:
        return out
    keyfile, fmt = CHECKED[name]
    if re.search(r"(:|=)\s*None\s*$", text, re.M):
        out.problems.append(f"{name}: a value rendered as 'None' (an unset variable)")
    if fmt == "bftsmart-hosts":
        for line in text.splitlines():
            if line.strip() and not line.startswith("#") and not re.fullmatch(r"\d+ \S+ \d+", line.strip()):
                out.problems.append(f"{name}: line {line!r} is not '<id> <address> <port>'")
        return out
    source = next((KEYS / d / keyfile for d in key_dirs if (KEYS / d / keyfile).exists()), None)
    if source is None:
        out.problems.append(f"{name}: no reference key list {keyfile} in {key_dirs}")
        return out
    keyset = load_key_set(source)
    rel = source.relative_to(REPO)
    try:
        if fmt == "yaml":
            doc = yaml.safe_load(text) or {}
            paths = leaf_paths(doc)
            patterns = keyset.known
            missing = missing_required(doc, keyset.required)
        else:
            # A property name is one key even when it contains dots; `server.*`
            # in zoo.cfg.keys matches server.1, server.2, ...
            names = [".".join(p) for p in keyset.known]
            props = parse_property_lines(text)
            patterns = [[n] for n in names if "*" not in n]
            wild = [_wildcard(n) for n in names if "*" in n]
            paths = [(k,) for k, _ in props if not any(w.match(k) for w in wild)]
            # A required property must be there with a value (an empty one is read as unset).
            missing = [r for r in (".".join(p) for p in keyset.required)
                       if not any(_wildcard(r).match(k) and v for k, v in props)]
    except (yaml.YAMLError, ValueError) as err:
        out.problems.append(f"{name}: does not parse: {err}")
        return out
    for p in paths:
        if not path_known(p, patterns):
            out.problems.append(f"{name}: unknown key {'.'.join(p)} (not in {rel})")
    for m in missing:
        out.missing.append(m)
        out.problems.append(f"{name}: missing required key {m} (marked in {rel})")
    return out


def check_rendered(name: str, text: str, key_dirs: list[str]) -> list[str]:
    """Problems in one rendered file: unknown keys, missing required keys,
    unparsable content, unrendered None values."""
    return check_file(name, text, key_dirs).problems


# ---------------------------------------------------------------- the run

@dataclass
class Report:
    """Outcome of one dry run."""
    variant: str
    inventory: str
    rendered: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Required keys absent from a rendered file: {"file": "<host>/<role>/<file>", "key": "<path>"}.
    missing_required: list[dict] = field(default_factory=list)


def role_defaults(role: str) -> dict:
    """A role's defaults/main.yml."""
    f = ROLES / role / "defaults" / "main.yml"
    return yaml.safe_load(f.read_text()) or {} if f.exists() else {}


def plays_of(playbook: Path) -> list[dict]:
    """(hosts, play vars, [(role, role vars)]) for each play, from roles: and include_role tasks."""
    out = []
    for play in yaml.safe_load(playbook.read_text()):
        roles = [(r if isinstance(r, str) else r["role"], {} if isinstance(r, str) else r.get("vars", {}))
                 for r in play.get("roles", [])]
        for task in play.get("tasks", []):
            inc = task.get("ansible.builtin.include_role") or task.get("include_role")
            if inc:
                roles.append((inc["name"], task.get("vars", {})))
        out.append({"hosts": play["hosts"], "vars": play.get("vars", {}), "roles": roles})
    return out


def dry_run(inventory: Path, variant: str, out: Path) -> Report:
    """Render and check every template of the variant's playbook for every host of the inventory."""
    report = Report(variant=variant, inventory=str(inventory))
    pin = yaml.safe_load((REPO / "systems" / variant / "upstream.yaml").read_text())
    playbook = REPO / pin["deploy"]["playbook"]
    key_dirs = KEY_SEARCH[pin["deploy"]["key_set"]]
    groups, hostvars = load_inventory(inventory)
    env0 = make_env()
    for play in plays_of(playbook):
        hosts = resolve_pattern(play["hosts"], groups)
        play_defaults: dict = {}
        for role, _ in play["roles"]:
            play_defaults.update(role_defaults(role))  # all roles' defaults are visible in a play
        for host in hosts:
            magic = {
                "inventory_hostname": host, "groups": groups, "hostvars": hostvars,
                "playbook_dir": str(playbook.parent), "upstream_pin": pin,
                "upstream_variant": variant,
                "group_names": sorted(g for g, m in groups.items() if host in m and g != "all"),
            }
            base = {**play_defaults, **hostvars.get(host, {}), **magic}
            for role, rvars in play["roles"]:
                ctx = resolve_vars({**role_defaults(role), **hostvars.get(host, {}), **play["vars"], **rvars},
                                   base, env0)
                tdir = ROLES / role / "templates"
                if not tdir.is_dir():
                    continue
                env = make_env(tdir)
                for tpl in sorted(tdir.glob("*.j2")):
                    name = tpl.name[:-3]
                    dest = out / host / role / name
                    label = f"{host}/{role}/{name}"
                    try:
                        text = env.get_template(tpl.name).render(**ctx)
                    except jinja2.TemplateError as err:
                        report.problems.append(f"{label}: render failed: {err}")
                        continue
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_text(text)
                    report.rendered.append(label)
                    dirs = ["fabric-1.1-bftsmart"] + key_dirs if (name == "orderer.yaml" and _bool(ctx.get("fabric_orderer_bftsmart"))) else key_dirs
                    checked = check_file(name, text, dirs)
                    report.problems += [f"{host}/{role}/{p}" for p in checked.problems]
                    report.missing_required += [{"file": label, "key": k} for k in checked.missing]
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report.__dict__, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    report = dry_run(args.inventory, args.variant, args.out)
    for p in report.problems:
        print("PROBLEM", p)
    print(f"{args.variant}: rendered {len(report.rendered)} files, {len(report.problems)} problem(s); report in {args.out / 'report.json'}")
    return 1 if report.problems or not report.rendered else 0


if __name__ == "__main__":
    sys.exit(main())
