"""Whether an upstream build's source can be had is tried, not assumed (issue 46 item 2): a cached build of
the pin, a snapshot, or a repository that answers ``git ls-remote`` within the probe's time limit; the answer
is kept per repository for the process. No network: the repositories are local, and GitHub's URLs are pointed
at them (or at nothing) with git's own ``url.<base>.insteadOf`` from the environment."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time

import pytest

from harness import builds, upstream_source
from harness.errors import HarnessError

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="needs git")


@pytest.fixture(autouse=True)
def offline(tmp_path, monkeypatch):
    """No snapshots, an empty build cache, no probe answers kept from before; GitHub is ``tmp/mirror/``."""
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(tmp_path / "no-snapshots"))
    monkeypatch.setattr(upstream_source, "BUILDS", tmp_path / "builds")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{tmp_path / 'mirror'}/.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
    upstream_source.forget_probes()
    yield tmp_path
    upstream_source.forget_probes()


def _bare_repo(path):
    """A bare repository with one commit at ``path``."""
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    work = path.parent / (path.name + "-work")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "f").write_text("x\n")
    subprocess.run(git + ["add", "f"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    subprocess.run(git + ["push", "-q", str(path), "HEAD:refs/heads/main"], check=True)


RECIPE = {"system": "toy", "repository": "owner/toy", "commit": "a" * 40, "snapshot": "toy"}


def test_a_repository_that_answers_is_at_hand(offline):
    _bare_repo(offline / "mirror" / "owner" / "toy.git")
    assert upstream_source.source_available(RECIPE, "auto") is None
    assert upstream_source.source_available(RECIPE, "git") is None


def test_a_repository_that_does_not_answer_is_not_at_hand_and_says_why(offline):
    why = upstream_source.source_available(RECIPE, "auto")
    assert why.startswith(f"no snapshot 'toy' in {offline / 'no-snapshots'}, and cannot clone "
                          "https://github.com/owner/toy.git: git ls-remote https://github.com/owner/toy.git "
                          "failed (exit 128)"), why
    assert upstream_source.source_available(RECIPE, "git").startswith("cannot clone https://github.com/owner/toy.git")


def test_a_repository_that_hangs_is_given_up_after_the_time_limit(offline, monkeypatch):
    """A server that accepts and never answers (a firewall that drops, a DNS that hangs): the probe kills git
    and its helper and says so, within about its limit."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/toy.git"
        monkeypatch.setenv("FABRICREPRO_GIT_PROBE_TIMEOUT_S", "1")
        started = time.monotonic()
        why = upstream_source.source_available({**RECIPE, "clone_url": url}, "auto")
        took = time.monotonic() - started
    assert why.endswith(f"cannot clone {url}: git ls-remote {url} got no answer in 1 s"), why
    assert took < 5, f"the probe took {took:.1f} s"


def test_the_answer_is_kept_per_repository_within_a_process(offline):
    repo = offline / "mirror" / "owner" / "toy.git"
    _bare_repo(repo)
    assert upstream_source.source_available(RECIPE, "auto") is None
    shutil.rmtree(repo)  # gone now, but not asked again: one probe per repository in a run of many experiments
    assert upstream_source.source_available(RECIPE, "auto") is None
    assert upstream_source.source_available({**RECIPE, "system": "toy-2"}, "auto") is None  # same repository
    upstream_source.forget_probes()
    assert "cannot clone" in upstream_source.source_available(RECIPE, "auto")


def test_a_cached_build_of_the_pin_is_at_hand_offline(offline):
    built = offline / "builds" / "toy" / "0123456789abcdef"
    built.mkdir(parents=True)
    (built / "build.json").write_text(json.dumps({"commit": "b" * 40, "built_commit": "b" * 40}))
    assert "cannot clone" in upstream_source.source_available(RECIPE, "auto")  # another commit's build
    (built / "build.json").write_text(json.dumps({"commit": RECIPE["commit"], "built_commit": RECIPE["commit"]}))
    assert upstream_source.cached_build(RECIPE) == built
    assert upstream_source.source_available(RECIPE, "auto") is None
    assert upstream_source.source_available(RECIPE, "git") is None
    # a snapshot is a file to unpack: a build does not stand for it
    assert upstream_source.source_available(RECIPE, "snapshot").startswith("no snapshot 'toy'")


def test_auto_falls_back_to_the_reference_build_where_the_repository_does_not_answer(offline):
    kind, why = builds.build_kind("auto", {"driver": "committer-bench", "variants": [
        {"id": "fabric-1.2", "system": "fabric-1.2", "switches": {}}]})
    assert kind == "reference"
    assert why.startswith("system fabric-1.2: no snapshot 'fabric-1.2.0'") and \
        "cannot clone https://github.com/hyperledger/fabric.git: git ls-remote" in why, why
    choice = builds.choose_build("auto", ["fabric-1.2"], "committer-bench")
    assert choice.kind == "reference" and choice.fallback_reason == why


def test_auto_takes_upstream_where_the_repository_answers(offline):
    _bare_repo(offline / "mirror" / "hyperledger" / "fabric.git")
    assert builds.choose_build("auto", ["fabric-1.2"], "committer-bench").kind == "upstream"


def test_an_explicit_build_or_source_fails_instead_of_falling_back(offline):
    with pytest.raises(HarnessError, match=r"^--build upstream: system fabric-1.2: no snapshot .* cannot clone"):
        builds.choose_build("upstream", ["fabric-1.2"], "committer-bench")
    experiment = {"driver": "committer-bench", "variants": [{"id": "v", "system": "fabric-1.2", "switches": {}}]}
    with pytest.raises(HarnessError, match=r"^--source git: system fabric-1.2: cannot clone "
                                           r"https://github.com/hyperledger/fabric.git: git ls-remote"):
        builds.build_kind("auto", experiment, source="git")
    with pytest.raises(HarnessError, match="^--source git"):
        builds.choose_build("auto", ["fabric-1.2"], "committer-bench", source="git")
    assert builds.choose_build("reference", ["fabric-1.2"], "committer-bench", source="git").kind == "reference"


def test_the_reference_build_leaves_out_only_the_variants_it_has_no_driver_for():
    from harness.catalogue import load_paper
    fig6 = load_paper("fastfabric").experiment("fig6-peer-throughput")
    assert builds.on_reference(fig6, "upstream") is fig6
    on_ref = builds.on_reference(fig6, "reference")
    runs = {v["id"]: v.get("runnable", True) for v in on_ref["variants"]}
    assert runs == {"fabric-1.2": True, "opt-p1": False, "opt-p2": False, "opt-p3": False}
    assert all(v.get("runnable", True) is not False for v in fig6["variants"])  # the catalogue's stays as it is
    # none left: unchanged, and choose_build says why none can run
    only_fastfabric = {**fig6, "variants": [v for v in fig6["variants"] if v["system"] == "fastfabric"]}
    assert builds.on_reference(only_fastfabric, "reference") is only_fastfabric
