"""Check a configuration file written for an upstream system against the keys
that version reads and the keys it requires (infra/upstream_keys/<key set>/<file>.keys,
each derived from that version's own sample files in ../shared/upstream).

The network tests render the roles' real configuration files (core.yaml,
orderer.yaml, configtx.yaml, zoo.cfg, server.properties, ...) and check them
here: a key the version does not know, or a required key (`!` in the .keys
file) that is missing, is a problem named with the file and the key list.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
KEYS = REPO / "infra" / "upstream_keys"

# Configuration file name -> (key file name, format). Other files are not checked.
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
