"""Our patch series for the published Fabric v1.2.0 (``systems/fabric-1.2/patches``).

Unpacks the v1.2.0 source snapshot from ``../shared/upstream`` (beside the
repository; skipped when absent, as on a user's clone) into a GOPATH under a
temporary directory and proves, in order of cost:

* every patch applies with ``git apply`` in name order (each checked first);
* 0001's regression test passes on the patched tree and reports the
  deadlock on an unpatched one (so the gate can fail);
* 0002's ``core/ledger/blocktimes`` package writes the header and a row;
* the patched peer builds (``go build -tags nopkcs11 ./peer``, GOPATH mode).

The Go steps share the user's Go build cache; ``-trimpath`` keeps their
cache keys independent of the temporary directory, so a second run is fast.
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
UPSTREAM = ROOT.parent / "shared" / "upstream"
SNAPSHOT = "fabric-1.2.0"
COMMIT = "cae2ad4456914adffcb07b1ca873e9624ce8f8b3"
ARCHIVE = UPSTREAM / f"{SNAPSHOT}-{COMMIT[:12]}.tar.xz"
PATCHES = sorted((ROOT / "systems" / "fabric-1.2" / "patches").glob("*.patch"))
IMPORT_PATH = "github.com/hyperledger/fabric"


def _skip_reason() -> str | None:
    if not ARCHIVE.is_file():
        return f"no Fabric v1.2.0 snapshot at {ARCHIVE} (../shared/upstream beside the repository)"
    for tool in ("go", "git", "tar"):
        if not shutil.which(tool):
            return f"`{tool}` is not on PATH"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def _manifest_sha256() -> str | None:
    manifest = UPSTREAM / "MANIFEST.tsv"
    if not manifest.is_file():
        return None
    for line in manifest.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if cols[0] == SNAPSHOT:
            assert cols[2] == COMMIT, f"MANIFEST.tsv pins {SNAPSHOT} at {cols[2]}, this test expects {COMMIT}"
            return cols[3]
    return None


def _unpack(dest: Path) -> Path:
    """Unpack the snapshot as ``dest/src/github.com/hyperledger/fabric``; return that tree."""
    want = _manifest_sha256()
    if want:
        got = hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()
        assert got == want, f"{ARCHIVE.name}: sha256 {got}, MANIFEST.tsv says {want}"
    parent = dest / "src" / "github.com" / "hyperledger"
    parent.mkdir(parents=True)
    subprocess.run(["tar", "xJf", str(ARCHIVE), "-C", str(parent)], check=True)
    tree = parent / "fabric"
    (parent / SNAPSHOT).rename(tree)
    return tree


def _go_env(gopath: Path, tmp: Path) -> dict:
    env = dict(os.environ, GOPATH=str(gopath), GO111MODULE="off", GOFLAGS="", TMPDIR=str(tmp))
    env.pop("FABRICREPRO_BLOCK_LOG", None)
    return env


def _go(args: list[str], tree: Path, gopath: Path, tmp: Path, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(["go", *args], cwd=tree, env=_go_env(gopath, tmp), capture_output=True,
                          text=True, timeout=timeout)


def _apply(tree: Path, patch: Path, *extra: str) -> subprocess.CompletedProcess:
    """``git apply`` from the tree's root, as the build does (-p1).

    The ceiling keeps git from finding an enclosing repository, inside which
    ``git apply`` would take paths relative to that repository instead.
    """
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(tree.parent))
    return subprocess.run(["git", "apply", *extra, str(patch)], cwd=tree, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    """The snapshot in a GOPATH with every patch applied in name order.

    Returns ``(gopath, tree, tmp, results)`` where results lists per patch
    ``(name, step, returncode, stderr)``; application stops at the first
    patch that fails its check.
    """
    gopath = tmp_path_factory.mktemp("gopath")
    tmp = tmp_path_factory.mktemp("gotmp")
    tree = _unpack(gopath)
    results = []
    for patch in PATCHES:
        check = _apply(tree, patch, "--check")
        results.append((patch.name, "check", check.returncode, check.stderr))
        if check.returncode != 0:
            break
        done = _apply(tree, patch)
        results.append((patch.name, "apply", done.returncode, done.stderr))
        if done.returncode != 0:
            break
    return gopath, tree, tmp, results


def _require_applied(patched):
    failed = [r for r in patched[3] if r[2] != 0]
    if failed:
        pytest.fail(f"patch series did not apply: {failed[0]}")


def test_series_is_the_expected_files():
    assert [p.name for p in PATCHES] == ["0001-blocksitr-close-lock-order.patch", "0002-block-phase-timings.patch",
                                         "0003-peer-bench-driver.patch", "0004-peer-bench-work-and-mutations.patch",
                                         "0005-peer-bench-skip-vscc-control.patch"]
    for p in PATCHES:
        head = p.read_text(encoding="utf-8").split("\ndiff --git", 1)[0]
        for field in ("Description:", "Kind:", "Changes-measured-path:", "Origin:", "Forwarded:"):
            assert f"\n{field}" in "\n" + head, f"{p.name} header lacks {field}"


def test_patches_apply_in_order(patched):
    _, tree, _, results = patched
    failed = [r for r in results if r[2] != 0]
    assert not failed, f"git apply failed: {failed[0][0]} ({failed[0][1]}): {failed[0][3]}"
    assert [r[0] for r in results if r[1] == "apply"] == [p.name for p in PATCHES]
    # What the two patches do, read back from the tree.
    itr = (tree / "common/ledger/blkstorage/fsblkstorage/blocks_itr.go").read_text()
    close = itr[itr.index("func (itr *blocksItr) Close()"):]
    assert close.index("cpInfoCond.L.Lock()") < close.index("closeMarkerLock.Lock()")
    assert "blocktimes.Lookup(block)" in (tree / "core/ledger/kvledger/kv_ledger.go").read_text()
    assert "blocktimes.Receive(block)" in (tree / "gossip/privdata/coordinator.go").read_text()


def test_blocktimes_writes_header_and_row(patched):
    gopath, tree, tmp, _ = patched
    _require_applied(patched)
    r = _go(["test", "-trimpath", "-count=1", "-v", "-run", "TestRow|TestReopen|TestNilBlock",
             "./core/ledger/blocktimes"], tree, gopath, tmp, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("TestRow", "TestReopen", "TestNilBlock"):
        assert f"--- PASS: {name}" in r.stdout, r.stdout


def test_close_lock_order_regression(patched, tmp_path):
    """0001's test passes with the fix and reports the deadlock without it."""
    gopath, tree, tmp, _ = patched
    _require_applied(patched)
    pkg = "./common/ledger/blkstorage/fsblkstorage"
    run = ["test", "-trimpath", "-count=1", "-run", "TestBlockItrCloseWhileWaiting", pkg]
    r = _go(run, tree, gopath, tmp, timeout=240)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]

    # The same test on v1.2.0 without the fix (only the test file of 0001).
    plain_gopath = tmp_path / "plain"
    plain = _unpack(plain_gopath)
    only_test = _apply(plain, PATCHES[0], "--include=*_test.go")
    assert only_test.returncode == 0, only_test.stderr
    assert (plain / "common/ledger/blkstorage/fsblkstorage/blocks_itr_close_order_test.go").is_file()
    r = _go(run, plain, plain_gopath, tmp_path, timeout=240)
    assert r.returncode != 0 and "Close deadlocked with a waiting Next" in r.stdout, r.stdout[-4000:]


def test_patched_peer_builds(patched):
    gopath, tree, tmp, _ = patched
    _require_applied(patched)
    out = tmp / "peer"
    r = _go(["build", "-trimpath", "-tags", "nopkcs11", "-o", str(out), "./peer"], tree, gopath, tmp, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    assert out.is_file() and out.stat().st_size > 10_000_000
    version = subprocess.run([str(out), "version"], capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, FABRIC_CFG_PATH=str(tree / "sampleconfig")))
    assert version.returncode == 0 and "Version:" in version.stdout, version.stdout + version.stderr
