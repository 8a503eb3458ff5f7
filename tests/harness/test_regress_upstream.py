"""invoke regress on a published code's history, end to end on a toy git upstream.

A TEST DOUBLE system ``toy`` lives in a tmp systems folder: its recipe
(``upstream.yaml``, the same format as Fabric's) builds a tiny Go program in
GOPATH mode with one instrumentation patch, from a tmp git repository whose
history holds a commit where the patch does not apply, one that does not
build, and one (on a merged side branch) that makes every "block" slower.
Cloning, pinning, patching and building are the real ones (``upstream.build``
with a pin; the clone reaches the toy repository through git's
``url.<mirror>.insteadOf``, as a machine without GitHub reaches a mirror).
Only ``measure`` is a TEST DOUBLE: instead of deploying a network through
``reproduce``, it runs the built program, which prints its blocks per second.
"""

from __future__ import annotations

import subprocess

import pytest

from harness import regress as R
from harness.errors import HarnessError

MAIN = """package main

import (
	"fmt"
	"time"
)

const label = "toy"

func main() {
	start := time.Now()
	for i := 0; i < 30; i++ {
		block()
	}
	fmt.Printf("%s %.1f\\n", label, 30/time.Since(start).Seconds())
}
"""
BLOCK = "package main\n\nimport \"time\"\n\nfunc block() { time.Sleep({ms} * time.Millisecond) }\n"
PATCH = """Description: label the output as patched (toy instrumentation)
Kind: instrumentation
Changes-measured-path: no
Origin: fabricrepro (test double)
Forwarded: not-needed

diff --git a/main.go b/main.go
--- a/main.go
+++ b/main.go
@@ -6,7 +6,7 @@
 	"time"
 )
 
-const label = "toy"
+const label = "toy+patched"
 
 func main() {
 	start := time.Now()
"""
URL = "https://github.com/example/toy.git"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy upstream's repository (tags v1..v4) and a systems folder holding its recipe."""
    root = tmp_path_factory.mktemp("toy")
    repo = root / "toy"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    def commit(subject, files, tag=None):
        for name, text in files.items():
            if text is None:
                git("rm", "-q", name)
                continue
            (repo / name).write_text(text)
            git("add", name)
        git("commit", "-q", "-m", subject, "-m", f"Body of: {subject}")
        if tag:
            git("tag", tag)
        return git("rev-parse", "HEAD")

    git("init", "-q", "-b", "main")
    shas = {"baseline": commit("baseline", {"main.go": MAIN, "block.go": BLOCK.replace("{ms}", "1")}, tag="v1")}
    shas["docs"] = commit("docs only", {"README": "toy\n"})
    shas["renamed"] = commit("rename the label", {"main.go": MAIN.replace('"toy"', '"renamed"')}, tag="v2")
    shas["broken"] = commit("restore the label, add a file that does not compile",
                            {"main.go": MAIN, "broken.go": "package main\n\nfunc broken( {\n"}, tag="v3")
    shas["fixed"] = commit("fix the build", {"broken.go": None})
    git("checkout", "-q", "-b", "side")
    shas["slower"] = commit("sleep 3 ms per block", {"block.go": BLOCK.replace("{ms}", "3")})
    shas["side"] = commit("unrelated change on the side branch", {"NOTES": "side\n"})
    git("checkout", "-q", "main")
    git("merge", "-q", "--no-ff", "-m", "merge the side branch", "side")
    shas["merge"] = git("rev-parse", "HEAD")
    shas["after"] = commit("unrelated change after the merge", {"README": "toy, again\n"}, tag="v4")

    systems = root / "systems"
    (systems / "toy" / "patches").mkdir(parents=True)
    (systems / "toy" / "patches" / "0001-label.patch").write_text(PATCH)
    (systems / "toy" / "upstream.yaml").write_text(f"""# TEST DOUBLE system: a toy upstream (tests/harness/test_regress_upstream.py)
schema_version: 2
system: toy
repository: example/toy
commit: {shas['baseline']}
pin_source: the toy repository's first commit
toolchain: {{kind: go-gopath, import_path: toy.example/toy}}
targets: {{toy: .}}
patches: [0001-label.patch]
drivers:
  toy-bench: {{playbook: toy.yml, roles: [], binaries: [], placement: {{}}}}
""")
    return {"repo": repo, "systems": systems, "shas": shas, "builds": root / "builds", "regress": root / "regress"}


@pytest.fixture
def doubles(monkeypatch, toy, tmp_path):
    """The toy's experiment, and a TEST DOUBLE of measure that runs the built program."""
    monkeypatch.setattr(R, "NETWORK_LOCK", str(tmp_path / "network.lock"))  # not the machine's: no network runs
    # git's own URL rewriting: a clone of the recipe's GitHub URL reaches the toy repository
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{toy['repo']}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", URL)
    experiment = {"id": "toy-bench", "metric": "blocks_per_s", "driver": "toy-bench",
                  "variants": [{"id": "toy", "system": "toy", "switches": {}}]}
    monkeypatch.setattr(R, "find_experiment", lambda name: ("toy-paper", experiment))
    ran = []

    def measure(tracked, commit, bin_dir, paper, experiment, scale, repeat, store, fresh=False, stream=None):
        values = []
        for _ in range(repeat):
            label, rate = subprocess.run([str(bin_dir / "toy")], capture_output=True, text=True,
                                         check=True).stdout.split()
            assert label == "toy+patched", "the recipe's patch series was applied"
            values.append(float(rate))
        ran.append(commit["sha"])
        return {"values": values, "runs": [], "seconds": 0.0, "reused": False}

    monkeypatch.setattr(R, "measure", measure)
    return ran


def run(toy, tmp_path, **kwargs):
    return R.regress("toy", "toy-bench", repeat=5, root=toy["regress"], builds=toy["builds"],
                     systems_dir=toy["systems"], results=tmp_path / "results", reports=tmp_path / "reports",
                     log=lambda _: None, **kwargs)


def test_tags_side_by_side_with_the_commits_not_measurable_and_why(doubles, toy, tmp_path):
    doc = run(toy, tmp_path, tags="v1,v2,v3,v4")
    by_ref = {r["ref"]: r for r in doc["commits"]}
    assert list(by_ref) == ["v1", "v2", "v3", "v4"]
    assert "apply 0001-label.patch failed" in by_ref["v2"]["not_measurable"]
    assert "patch does not apply" in by_ref["v2"]["not_measurable"]
    assert "go build" in by_ref["v3"]["not_measurable"] and "failed" in by_ref["v3"]["not_measurable"]
    assert doc["not_measurable"] == {by_ref[t]["sha"]: by_ref[t]["not_measurable"] for t in ("v2", "v3")}
    # v4 is compared with v1, the last one measured: about 3x slower, confirmed by the re-measurement
    vs = by_ref["v4"]["vs_previous"]
    assert vs["against"] == toy["shas"]["baseline"] and vs["changed"] and vs["confirmation"]["changed"]
    assert vs["effect"]["high"] < 0.6 and vs["effect"]["coverage"] > 0.95
    assert doc["change_points"] == [toy["shas"]["after"]]
    page = (tmp_path / "reports" / "toy" / "toy-bench" / "index.html").read_text()
    assert page.count("not measurable: upstream build:") == 2 and "patch does not apply" in page
    assert "False-positive rate of this test for toy / toy-bench: not measured yet" in page
    assert "Body of: rename the label" in page and "main.go | 2 +-" in page  # message and diff stat
    summary = R.main_summary(doc)
    assert "v2  not measurable: upstream build: apply 0001-label.patch failed" in summary and "CHANGED" in summary
    # the upstream build records the pin it was built at
    built = list((toy["builds"] / "toy").glob("*/build.json"))
    assert len(built) == 2  # v1 and v4; nothing is kept of a failed build


def test_bisect_crosses_unmeasurable_commits_and_descends_into_the_merge(doubles, toy, tmp_path):
    shas = toy["shas"]
    doc = run(toy, tmp_path, commits="v1..v4", bisect=True)
    assert doc["bisect"]["first_changed"] == shas["slower"]
    # the first-parent line first: its midpoint does not build, the one before it has no patch context
    first_line, branch = doc["bisect"]["lines"]
    assert first_line["skipped"] == [shas["broken"], shas["renamed"]]
    assert first_line["to"] == shas["after"] and branch["to"] == shas["side"]
    rows = {r["sha"]: r for r in doc["commits"]}
    assert "not_measurable" in rows[shas["broken"]] and "not_measurable" in rows[shas["renamed"]]
    assert not rows[shas["fixed"]]["vs_first"]["changed"]
    assert rows[shas["merge"]]["vs_first"]["changed"]
    confirmed = rows[shas["slower"]]["vs_first"]
    assert confirmed["changed"] and len(confirmed["confirmation"]["values_after"]) == 5
    # rows in history order: the merged branch's commits before the merge
    order = [r["sha"] for r in doc["commits"]]
    assert order.index(shas["slower"]) < order.index(shas["merge"]) < order.index(shas["after"])
    page = (tmp_path / "reports" / "toy" / "toy-bench" / "index.html").read_text()
    assert f"Bisect: first changed commit <code>{shas['slower'][:10]}</code>" in page
    assert "Re-measurement of" in page and "confirmed" in page


def test_a_sample_too_small_for_the_test_is_refused(doubles, toy, tmp_path):
    with pytest.raises(HarnessError, match=r"with 3 points a side .* 0\.1, not below alpha 0\.05.* at least 4"):
        R.regress("toy", "toy-bench", tags="v1,v4", repeat=3, systems_dir=toy["systems"], root=toy["regress"])
