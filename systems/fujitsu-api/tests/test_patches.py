"""The Fujitsu paper's revised chaincode API as our patches on Fabric v0.6.1 (``systems/fujitsu-api``).

Builds the upstream recipe through ``harness.upstream.build`` (the cache
under ``build/upstream/`` is shared with the network test and ``reproduce``)
with each variant's switches, and proves:

* with the switches off the tree is v0.6.1 plus the two fixes only: no DUS
  or CR message, no ``stateops`` package, no revised chaincode;
* with ``diff_update`` and ``compound`` on, the Go tests the patches carry
  pass against the patched tree: every DUS operator and error, the order of
  execution inside a compound request and its all-or-nothing failure
  (``core/chaincode/stateops``), and the revised transfer chaincode on the
  patched shim's MockStub, which uses the peer's own functions.

Skipped with a reason without ``../shared/upstream`` (a user's clone) or
without Go or Debian's RocksDB headers (``invoke setup`` installs them).
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import upstream

REVISED = {"diff_update": True, "compound": True}


def _skip_reason() -> str | None:
    recipe = upstream.load_recipe("fujitsu-api")
    if not upstream.snapshot_archive(recipe):
        return f"no Fabric v0.6.1 snapshot in {upstream.snapshots_dir()} (../shared/upstream beside the repository)"
    if not shutil.which("go"):
        return "`go` is not on PATH"
    if not Path("/usr/include/rocksdb/c.h").is_file():
        return "no RocksDB C headers (Debian librocksdb-dev; `invoke setup` installs it)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def _tree(build) -> Path:
    return build.path / "gopath" / "src" / "github.com" / "hyperledger" / "fabric"


def _go_test(build, *packages: str) -> str:
    env = {**os.environ, "GOPATH": str(build.path / "gopath"), "GO111MODULE": "off", "GOFLAGS": ""}
    result = subprocess.run(["go", "test", "-count=1", "-v", *packages], cwd=_tree(build), env=env,
                            capture_output=True, text=True, check=False, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_switches_off_build_is_v061_with_the_fixes_and_timing_only():
    build = upstream.build("fujitsu-api", switches={})
    assert build.info["flavours"] == []
    assert [p["name"] for p in build.info["patches"]] == [
        "0001-gorocksdb-rocksdb7-c-api.patch", "0002-shim-error-after-error-answer.patch",
        "0003-chaincode-message-timing.patch"]
    tree = _tree(build)
    assert not (tree / "core" / "chaincode" / "stateops").exists()
    assert "DIFF_UPDATE_STATE" not in (tree / "protos" / "chaincode.pb.go").read_text()
    assert sorted(p.name for p in build.bin_dir.iterdir()) == ["chaincode_example02", "peer"]


def test_revised_api_semantics_against_the_patched_tree():
    build = upstream.build("fujitsu-api", switches=REVISED)
    assert build.info["flavours"] == ["dus", "cr"]
    assert [p["name"] for p in build.info["patches"]] == [
        "0001-gorocksdb-rocksdb7-c-api.patch", "0002-shim-error-after-error-answer.patch",
        "0003-chaincode-message-timing.patch", "0101-diffupdate.patch", "0102-compound.patch"]
    assert (build.bin_dir / "transfer-revised").is_file()
    out = _go_test(build, "./core/chaincode/stateops", "fabricrepro/chaincode/transfer-revised")
    # The tests that carry the semantics ran (not just compiled) and passed.
    for name in ("TestApplyDiffOperators", "TestApplyDiffErrors", "TestCompoundTransfer", "TestCompoundOrder",
                 "TestCompoundAllOrNothing", "TestCompoundReadError", "TestTransfer"):
        assert f"--- PASS: {name} " in out, f"{name} did not pass:\n{out[-2000:]}"
