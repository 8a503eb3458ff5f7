"""A Java runtime for a kit (issue 48, item 1): the JVM its components need, carried in the kit.

A component whose role needs ``java`` (``meta/preflight.yml`` ``tools``: BFT-SMaRt's replicas, front-ends
and clients; Kafka and ZooKeeper) runs on a runtime made here from the installed JDK with ``jlink``: the
modules the kit's jars need (``jdeps --print-module-deps`` over them) and ``BASE_MODULES`` (what they
load by reflection or service lookup, which jdeps cannot see), without debug symbols, man pages or
headers, uncompressed by jlink so that the kit's xz compresses it (``--compress=0``, jlink's default).
It sits in the kit as ``java/``; ``./kit/run`` puts ``java/bin`` first on PATH, so the roles' ``java`` is
the kit's and never one the target has. Built once per JDK and module set under ``build/kit/java/``.

CouchDB (Erlang/OTP) is not carried: it would take an Erlang runtime built relocatable (OTP's
``make release`` with ERTS included, about 30 MB before compression) and CouchDB's own NIFs (jiffy,
snappy, ICU-linked couch_ejson_compare) linked statically or with their libraries carried, which the
static-binaries-only rule of a kit (``kit_parts.elf_linking``) refuses today.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

from .errors import HarnessError
from .kit_parts import KIT_BUILD
from .preflight import role_preflight

#: Modules every kit runtime holds beside those jdeps finds: what the components reach by reflection or
#: service lookup (logback's JMX and JNDI, netty's Unsafe, the TLS and EC providers, Kafka's and
#: ZooKeeper's management beans and SASL).
BASE_MODULES = ("java.base", "java.logging", "java.management", "java.naming", "java.security.jgss",
                "java.sql", "java.xml", "jdk.crypto.ec", "jdk.management", "jdk.unsupported")
#: Where a kit carries its runtime.
ARC = "java"


def java_components(layout: dict[str, list[str]]) -> list[str]:
    """The components of ``layout`` whose roles need ``java``."""
    return sorted({c for cs in layout.values() for c in cs if "java" in (role_preflight(c).get("tools") or [])})


def jdk_tools() -> tuple[Path, Path] | None:
    """(jlink, jdeps) of the installed JDK, None without one."""
    jlink, jdeps = shutil.which("jlink"), shutil.which("jdeps")
    return (Path(jlink), Path(jdeps)) if jlink and jdeps else None


def jdk_release(jlink: Path) -> str:
    """The JDK's version (``jlink --version``), which the runtime it makes is of."""
    return subprocess.run([str(jlink), "--version"], capture_output=True, text=True, check=True).stdout.strip()


def modules_of(jars: list[Path], jdeps: Path) -> list[str]:
    """The JDK modules ``jars`` need (``jdeps --print-module-deps``, missing class-path dependencies ignored)
    with ``BASE_MODULES``."""
    found: set[str] = set(BASE_MODULES)
    if jars:
        proc = subprocess.run([str(jdeps), "--print-module-deps", "--ignore-missing-deps", "--multi-release", "17",
                               "-q", *[str(j) for j in sorted(jars)]], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise HarnessError("kit: jdeps could not read the kit's jars: "
                               + (proc.stderr.strip().splitlines() or ["?"])[-1])
        found |= {m.strip() for m in proc.stdout.strip().split(",") if m.strip()}
    return sorted(found)


def runtime(jars: list[Path], log=print, cache: Path | None = None) -> tuple[Path, dict]:
    """The runtime for ``jars`` (folder, record): made with jlink once per JDK and module set."""
    tools = jdk_tools()
    if tools is None:
        raise HarnessError("kit: a component needs java (a JVM), and this machine has no JDK (jlink, jdeps) to "
                           "make the kit's runtime from", hint="apt-get install openjdk-17-jdk-headless")
    jlink, jdeps = tools
    release = jdk_release(jlink)
    modules = modules_of(jars, jdeps)
    key = hashlib.sha256(json.dumps([release, modules]).encode()).hexdigest()[:16]
    dest = Path(cache or KIT_BUILD / "java") / key
    record = {"jdk": release, "modules": modules, "made_with": "jlink --strip-debug --no-man-pages "
                                                                "--no-header-files --compress=0"}
    if (dest / "bin" / "java").is_file() and (dest / "fabricrepro-runtime.json").is_file():
        kept = json.loads((dest / "fabricrepro-runtime.json").read_text(encoding="utf-8"))
        return dest, {**kept, "glibc_at_least": kept.get("glibc_at_least") or glibc_needed(dest)}
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    log(f"kit: making a Java {release} runtime with jlink: {','.join(modules)}")
    proc = subprocess.run([str(jlink), "--add-modules", ",".join(modules), "--strip-debug", "--no-man-pages",
                           "--no-header-files", "--compress=0", "--output", str(dest)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        raise HarnessError("kit: jlink failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1])
    record["glibc_at_least"] = glibc_needed(dest)
    (dest / "fabricrepro-runtime.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return dest, record


def glibc_needed(runtime_dir: Path) -> str | None:
    """The newest glibc symbol version the runtime's executables and libraries name (``GLIBC_2.34``): the
    oldest C library a target may have. (The JDK's own, as the distribution built it.)"""
    newest = None
    for path in [*Path(runtime_dir).glob("bin/*"), *Path(runtime_dir).rglob("*.so")]:
        if path.is_file():
            for major, minor in re.findall(rb"GLIBC_(\d+)\.(\d+)", path.read_bytes()):
                version = (int(major), int(minor))
                newest = max(newest or version, version)
    return f"{newest[0]}.{newest[1]}" if newest else None


def tree_bytes(path: Path) -> int:
    """The bytes of the files under ``path`` (a file: its size)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
