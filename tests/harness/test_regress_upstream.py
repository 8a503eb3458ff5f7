"""invoke regress on a published code's history, end to end on a toy git upstream.

A TEST DOUBLE system ``toy`` lives in a tmp systems folder: its recipe
(``upstream.yaml``, the same format as Fabric's) builds a tiny Go program in
GOPATH mode with three patches, from a tmp git repository whose history holds
a commit where the instrumentation patch does not apply, one that does not
build, one (on a merged side branch) that makes every "block" slower, and one
(v4) that makes our fix patch's change itself. The third patch adds a
program only another driver needs: regress, measuring the toy-bench driver,
leaves it out, while the recipe's own build applies the whole series.
Cloning, pinning, patching and building are the real ones (``upstream.build``
with a pin; the clone reaches the toy repository through git's
``url.<mirror>.insteadOf``, as a machine without GitHub reaches a mirror).
Only ``measure`` is a TEST DOUBLE: instead of deploying a network through
``reproduce``, it runs the built program, which prints its blocks per second.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml

from harness import catalogue, upstream
from harness import regress as R
from harness.regress import run as RR
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
FIX = """Description: the toy's fix (upstream makes the same change at v4), with a regression test of ours
Kind: fix
Changes-measured-path: no
Origin: fabricrepro (test double)
Forwarded: not-needed

diff --git a/fix.go b/fix.go
--- a/fix.go
+++ b/fix.go
@@ -1,3 +1,3 @@
 package main
 
-const fixed = false
+const fixed = true
diff --git a/fix_test.go b/fix_test.go
new file mode 100644
--- /dev/null
+++ b/fix_test.go
@@ -0,0 +1,5 @@
+package main
+
+import "testing"
+
+func TestFixed(t *testing.T) { _ = fixed }
"""
OTHER = """Description: a program only the other driver runs (toy instrumentation)
Kind: instrumentation
Changes-measured-path: no
Origin: fabricrepro (test double)
Forwarded: not-needed

diff --git a/other/main.go b/other/main.go
new file mode 100644
--- /dev/null
+++ b/other/main.go
@@ -0,0 +1,3 @@
+package main
+
+func main() {}
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
    shas = {"baseline": commit("baseline", {"main.go": MAIN, "block.go": BLOCK.replace("{ms}", "1"),
                                            "fix.go": "package main\n\nconst fixed = false\n"}, tag="v1")}
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
    shas["after"] = commit("unrelated change after the merge, and upstream's own fix",
                           {"README": "toy, again\n", "fix.go": "package main\n\nconst fixed = true\n"}, tag="v4")

    systems = root / "systems"
    (systems / "toy" / "patches").mkdir(parents=True)
    (systems / "toy" / "patches" / "0001-label.patch").write_text(PATCH)
    (systems / "toy" / "patches" / "0002-fix.patch").write_text(FIX)
    (systems / "toy" / "patches" / "0003-other.patch").write_text(OTHER)
    (systems / "toy" / "upstream.yaml").write_text(f"""# TEST DOUBLE system: a toy upstream (tests/harness/test_regress_upstream.py)
schema_version: 2
system: toy
repository: example/toy
commit: {shas['baseline']}
pin_source: the toy repository's first commit
toolchain: {{kind: go-gopath, import_path: toy.example/toy}}
targets: {{toy: ., other: ./other}}
patches:
  - 0001-label.patch
  - {{patch: 0002-fix.patch, why: every driver needs the fix, applies: v1 to before v4; v4 has it}}
  - {{patch: 0003-other.patch, needed_by: [other-bench], adds_targets: [other], why: only the other driver runs it}}
drivers:
  toy-bench: {{playbook: toy.yml, roles: [], binaries: [], placement: {{}}}}
  other-bench: {{playbook: toy.yml, roles: [], binaries: [], placement: {{}}}}
""")
    return {"repo": repo, "systems": systems, "shas": shas, "builds": root / "builds", "regress": root / "regress"}


@pytest.fixture
def doubles(monkeypatch, toy, tmp_path):
    """The toy's experiment, and a TEST DOUBLE of measure that runs the built program."""
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", str(tmp_path / "network.lock"))  # not the machine's: no network runs
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

    monkeypatch.setattr(RR, "measure", measure)
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


def test_regress_applies_the_patches_its_driver_needs_and_records_a_fix_already_upstream(doubles, toy, tmp_path):
    doc = run(toy, tmp_path, tags="v1,v4")
    v1, v4 = doc["commits"]
    skipped = {"name": "0003-other.patch", "status": "skipped",
               "why": "not needed by driver toy-bench (needed by other-bench)"}
    assert v1["patches"] == [{"name": "0001-label.patch", "status": "applied"},
                             {"name": "0002-fix.patch", "status": "applied"}, skipped]
    # v4 made the fix itself: recorded, not a failed apply; our regression test file is not added
    assert v4["patches"] == [{"name": "0001-label.patch", "status": "applied"},
                             {"name": "0002-fix.patch", "status": "already in upstream",
                              "why": "it does not apply and git apply --check --reverse succeeds on the files it "
                                     "changes (not added: fix_test.go)"}, skipped]
    assert not doc["not_measurable"]
    for row in (v1, v4):  # the target the skipped patch adds is not built
        info = (toy["builds"] / "toy" / row["build_key"] / "build.json").read_text()
        assert '"other"' not in info.split('"targets"', 1)[1].split("}", 1)[0]
        assert not (toy["builds"] / "toy" / row["build_key"] / "bin" / "other").exists()
    page = (tmp_path / "reports" / "toy" / "toy-bench" / "index.html").read_text()
    assert "0002 already in upstream" in page and "0003 skipped (not needed by driver toy-bench" in page
    assert "patches: 0001 applied; 0002 already in upstream; 0003 skipped" in R.main_summary(doc)


def test_another_metric_of_the_points_has_a_page_of_its_own(doubles, toy, tmp_path):
    doc = run(toy, tmp_path, tags="v1,v4", metric="delivery_rate")
    assert doc["metric"] == "delivery_rate" and doc["experiment"] == "toy-bench"
    page = (tmp_path / "reports" / "toy" / "toy-bench--delivery_rate" / "index.html").read_text()
    assert "--variant toy --metric delivery_rate --commits &lt;commit&gt; --batches 4" in page


def test_the_recipes_own_build_keeps_its_whole_series(doubles, toy):
    """Without a pin (invoke build --upstream, reproduce) every patch applies, strictly, and every target builds."""
    built = upstream.build("toy", "git", systems_dir=toy["systems"], builds=toy["builds"], log=lambda _: None)
    assert [p["name"] for p in built.info["patches"]] == ["0001-label.patch", "0002-fix.patch", "0003-other.patch"]
    assert all(p["status"] == "applied" for p in built.info["patch_series"])
    assert (built.bin_dir / "other").is_file()


def test_a_patch_note_names_drivers_and_targets_of_the_recipe(toy):
    doc = yaml.safe_load((toy["systems"] / "toy" / "upstream.yaml").read_text())
    doc["patches"][2]["needed_by"] = ["toy-bench", "no-such-driver"]
    doc["patches"][2]["adds_targets"] = ["nothing"]
    errors = catalogue.upstream_errors(doc, toy["systems"] / "toy" / "upstream.yaml")
    assert any("patches[2].needed_by: no-such-driver not in the recipe's drivers" in e for e in errors), errors
    assert any("patches[2].adds_targets: nothing not in the recipe's targets" in e for e in errors), errors
    del doc["patches"][1]["why"]
    assert catalogue.upstream_errors(doc, toy["systems"] / "toy" / "upstream.yaml")  # a note says why


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
