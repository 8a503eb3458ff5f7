"""Apache CouchDB built from source as a component of an upstream recipe (build kind ``couchdb-release``).

The validation-phase paper ran Fabric v1.1 on CouchDB (this system, validation-opt).
CouchDB's build would clone its build tool and Erlang dependencies from
GitHub; the recipe pins each of them instead (``build.rebar``, ``build.deps``:
repository, commit, snapshot), and this module fetches them like every other
source (the build context's ``fetch_source``: snapshot with its sha256 checked,
or a clone of the commit). Then it does what CouchDB's own release script
(``build-aux/couchdb-build-release.sh``) does to a tarball, and builds the
release:

1. build ``rebar`` from its tree (``make``) into ``bin/rebar``;
2. put each dependency at ``src/<name>``;
3. replace ``{vsn, git}`` in the ``.app.src`` files with the version (rebar
   would run ``git describe``), drop ``*do_not_compile.erl``, append
   ``git_sha`` to ``version.mk``, create the empty ``src/fauxton`` and
   ``share/docs/html`` (no Fauxton UI, no docs);
4. ``./configure --disable-docs --disable-fauxton --spidermonkey-version <v>
   --rebar <tree>/bin/rebar`` with ``REBAR3`` and ``ERLFMT`` off, then
   ``make release``: a self-contained release in ``rel/couchdb`` with its own
   Erlang runtime.

Needs Debian's Erlang (``erlang-nox erlang-dev erlang-reltool erlang-eunit
erlang-src``), SpiderMonkey (``libmozjs-78-dev``) and ICU (``libicu-dev``),
which ``invoke setup`` installs (``setup.apt`` of this system's system.yaml).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.plugin_api import BuildKind, HarnessError, require_tool

NAME = "couchdb-release"

_PINNED = {
    "type": "object",
    "required": ["repository", "commit", "snapshot"],
    "additionalProperties": False,
    "properties": {
        "repository": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"},
        "commit": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
        "snapshot": {"type": "string"},
        "pin_source": {"type": "string"},
    },
}

SCHEMA = {
    "type": "object",
    "required": ["target", "version", "git_sha", "spidermonkey_version", "rebar", "deps"],
    "additionalProperties": False,
    "properties": {
        "target": {"type": "string", "description": "the make target (release)"},
        "version": {"type": "string", "description": "the version written for {vsn, git}"},
        "git_sha": {"type": "string", "description": "the short commit appended to version.mk"},
        "spidermonkey_version": {"type": ["string", "number"], "description": "configure --spidermonkey-version"},
        "rebar": {**_PINNED, "description": "the rebar tree built into bin/rebar"},
        "deps": {"type": "object", "additionalProperties": _PINNED, "description": "src/<name> -> its pinned tree"},
    },
}


def erlang_version() -> str:
    """The Erlang/OTP release that builds CouchDB (part of the build key)."""
    require_tool("erl")
    out = subprocess.run(["erl", "-noshell", "-eval", 'io:format("~s", [erlang:system_info(otp_release)]), halt().'],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise HarnessError(f"`erl` could not say its OTP release (exit {out.returncode}): "
                           f"{(out.stderr or out.stdout).strip()[-500:]}")
    return "erlang OTP " + out.stdout.strip()


def build_release(system: str, name: str, tree: Path, spec: dict, source: str, context) -> dict:
    """Build the CouchDB release in ``tree`` (the component's fetched tree); return what was fetched for it."""
    require_tool("make")
    fetch, run, log = context.fetch_source, context.run_command, context.log
    fetched = {}
    with tempfile.TemporaryDirectory(dir=tree.parent) as tmp:
        rebar = Path(tmp) / "rebar"
        log(f"upstream {system}: component {name}: building rebar @ {spec['rebar']['commit'][:12]}")
        fetched["rebar"] = fetch({**spec["rebar"], "system": f"{system}/{name}/rebar"}, rebar, source)
        run(["make"], f"make rebar ({name})", cwd=rebar)
        (tree / "bin").mkdir(exist_ok=True)
        shutil.copy2(rebar / "rebar", tree / "bin" / "rebar")
    for dep, pin in spec["deps"].items():
        dest = tree / "src" / dep
        if dest.exists():
            raise HarnessError(f"component {name}: dependency {dep}: {dest} is already in CouchDB's tree")
        fetched[dep] = fetch({**pin, "system": f"{system}/{name}/{dep}"}, dest, source)
    version = spec["version"]
    for app_src in (tree / "src").rglob("*.app.src"):
        text = app_src.read_text(encoding="utf-8")
        if "{vsn, git}" in text:
            app_src.write_text(text.replace("{vsn, git}", f'{{vsn, "{version}"}}'), encoding="utf-8")
    for dead in (tree / "src").rglob("*do_not_compile.erl"):
        dead.unlink()
    with open(tree / "version.mk", "a", encoding="utf-8") as f:
        f.write(f"git_sha={spec['git_sha']}\n")
    (tree / "src" / "fauxton").mkdir(exist_ok=True)
    (tree / "share" / "docs" / "html").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "REBAR3": "/bin/false", "ERLFMT": "/bin/false"}
    log(f"upstream {system}: component {name}: configure and make {spec['target']}")
    run(["./configure", "--disable-docs", "--disable-fauxton", "--spidermonkey-version",
         str(spec["spidermonkey_version"]), "--rebar", str(tree / "bin" / "rebar")],
        f"configure CouchDB ({name})", cwd=tree, env=env)
    run(["make", spec["target"]], f"make {spec['target']} ({name})", cwd=tree, env=env)
    return fetched


KIND = BuildKind(build_release, erlang_version, tools=("erl", "make"), schema=SCHEMA)
