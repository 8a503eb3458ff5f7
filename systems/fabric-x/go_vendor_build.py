"""Build kind ``go-vendor``: a Go module tree that ships its ``vendor/`` (Fabric-X's orderer, Arma), built
as a component of fabric-x's upstream recipe beside the committer (systems/fabric-x/upstream.yaml).

The committer's tree has no ``vendor/`` and is the recipe's own Go build (modules from the Go proxy,
checked by its ``go.sum``); fabric-x-orderer v1.0.5 vendors every module, so it builds offline:
``-mod=vendor`` (``go`` checks ``vendor/modules.txt`` against ``go.mod``), ``GOPROXY=off``,
``GOTOOLCHAIN=local``, ``-trimpath`` and no VCS stamp (a snapshot has no ``.git``). A component's
``build.targets`` maps ``bin/<name>`` in the tree to a package, as the orderer's Makefile (``make binary``)
builds ``./cmd/arma`` and ``./cmd/armageddon``.
"""

from __future__ import annotations

import os
import subprocess

from harness.plugin_api import BuildKind, HarnessError, require_tool

NAME = "go-vendor"

SCHEMA = {
    "type": "object",
    "required": ["targets"],
    "additionalProperties": False,
    "properties": {"targets": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"},
                               "description": "bin/<name> in the tree -> Go package (./cmd/...)"}},
}

#: What the build may not take from the user's environment: no module download, no other toolchain.
ENV = {"GO111MODULE": "on", "GOFLAGS": "-mod=vendor", "GOPROXY": "off", "GOTOOLCHAIN": "local"}


def toolchain() -> str:
    """``go version`` and the fixed environment (part of the build's cache key)."""
    require_tool("go")
    out = subprocess.run(["go", "version"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise HarnessError(f"`go version` failed (exit {out.returncode}): {out.stderr.strip()}")
    return f"{out.stdout.strip()} ({' '.join(f'{k}={v}' for k, v in sorted(ENV.items()))})"


def build(system: str, name: str, tree, spec: dict, source: str, context) -> None:
    if not (tree / "vendor" / "modules.txt").is_file():
        raise HarnessError(f"component {name}: build kind {NAME} needs the tree's vendor/modules.txt, which "
                           f"{tree} lacks")
    env = {**os.environ, **ENV}
    (tree / "bin").mkdir(exist_ok=True)
    for target, package in spec["targets"].items():
        context.log(f"upstream {system}: go build {package} -> {name}/bin/{target}")
        context.run_command(["go", "build", "-trimpath", "-buildvcs=false", "-o", str(tree / "bin" / target), package],
                            f"go build {package} ({name})", cwd=tree, env=env, timeout=1800)


KIND = BuildKind(build, toolchain, tools=("go",), schema=SCHEMA)
