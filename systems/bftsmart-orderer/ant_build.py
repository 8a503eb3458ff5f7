"""Build kind ``ant``: the BFT-SMaRt ordering service's Java trees (its nodes and frontends, and the
BFT-SMaRt library) built with Apache Ant, as their repositories ship them (``build.xml``).

A component's ``build`` gives the Ant ``target``; the core deletes ``remove`` first and checks
``outputs`` after (docs/upstream.md).
"""

from __future__ import annotations

import subprocess

from harness.plugin_api import BuildKind, HarnessError, require_tool

NAME = "ant"

SCHEMA = {
    "type": "object",
    "required": ["target"],
    "additionalProperties": False,
    "properties": {"target": {"type": "string", "description": "the Ant target (build.xml), e.g. jar"}},
}


def toolchain() -> str:
    """The JDK and Ant (part of the build's cache key: a new JDK makes a new build).

    The string is the one the core wrote before Ant moved here, so that builds made then keep their keys."""
    require_tool("java")
    require_tool("ant")
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    ant = subprocess.run(["ant", "-version"], capture_output=True, text=True, check=False)
    if ant.returncode != 0:
        raise HarnessError(f"`ant -version` failed (exit {ant.returncode}): {(ant.stderr or ant.stdout).strip()}")
    return f"{java[0] if java else 'java ?'}; {ant.stdout.strip()}"


def build(system: str, name: str, tree, spec: dict, source: str, context) -> None:
    context.log(f"upstream {system}: ant {spec['target']} in component {name}")
    context.run_command(["ant", "-noinput", "-quiet", spec["target"]], f"ant {spec['target']} ({name})", cwd=tree)


KIND = BuildKind(build, toolchain, tools=("java", "ant"), schema=SCHEMA)
