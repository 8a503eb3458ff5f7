"""invoke regress: the change test, commits and build keys, bisect and the page.

The statistics are checked against exact values and against synthetic samples
drawn from one distribution (no change may be called on noise) and from two.
The bisect and page tests run on a scratch git repository whose commits carry
a made-up "sleep per block"; there ``build`` and ``measure`` are TEST DOUBLES
(the real ones build Go and run the experiment: the closing note of issue 13
gives that demonstration), so that the search itself is what is tested.
"""

import fcntl
import json
import math
import os
import random
import subprocess

import pytest

from harness import gitrepo as RG
from harness import regress as R
from harness import stats
from harness.regress import build as RB, page as RP, run as RR
from harness.errors import HarnessError
from harness.rundir import read_json, write_json


def test_exact_p_values():
    # completely separated samples of 5 and 5: 2 of the 252 splits are as extreme
    assert stats.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == (0.0, pytest.approx(2 / 252))
    assert stats.mann_whitney([1, 2, 3], [1, 2, 3])[1] == 1.0
    # ties share ranks: {1,1,2} vs {2,3,3}
    u, p = stats.mann_whitney([1, 1, 2], [2, 3, 3])
    assert u == 0.5 and p == pytest.approx(0.2)


def test_normal_approximation_for_large_samples():
    rng = random.Random(3)
    a = [rng.gauss(0, 1) for _ in range(40)]
    assert stats.mann_whitney(a, [x + 3 for x in a])[1] < 1e-6
    assert stats.mann_whitney(a, list(reversed(a)))[1] == pytest.approx(1.0, abs=0.01)


def test_no_change_is_called_on_noise_and_a_20pct_shift_is_found():
    rng = random.Random(7)
    draw = lambda centre: [rng.gauss(centre, 0.06 * centre) for _ in range(5)]  # 6% noise, as on shared cores
    same = [stats.compare(draw(1000), draw(1000))["changed"] for _ in range(400)]
    assert sum(same) / len(same) <= stats.ALPHA
    shifted = [stats.compare(draw(1000), draw(800))["changed"] for _ in range(200)]
    assert sum(shifted) / len(shifted) >= 0.8


def test_a_significant_but_small_change_is_not_flagged():
    out = stats.compare([100, 100.5, 101, 101.5, 102], [97, 97.5, 98, 98.5, 99])
    assert out["p"] < stats.ALPHA and not out["changed"]  # 3%: below MIN_CHANGE


@pytest.fixture
def repo(tmp_path):
    """A scratch repository: a baseline, a docs-only commit, the sleep commit, another commit after it."""
    path = tmp_path / "scratch"
    path.mkdir()

    def git(*args):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})
    git("init", "-q")
    (path / "cmd").mkdir()
    steps = [("cmd/peer.go", "package main // commit block\n", "baseline"),
             ("README.md", "docs\n", "docs only"),
             ("cmd/peer.go", "package main // commit block; sleep 2ms per block\n", "add a sleep per block"),
             ("cmd/other.go", "package main\n", "unrelated change after it")]
    for name, text, subject in steps:
        (path / name).write_text(text)
        git("add", name)
        git("commit", "-q", "-m", subject)
    return path


def test_commits_and_build_keys(repo):
    commits = RG.commits_of(repo, "HEAD~3..HEAD")
    assert [c["subject"] for c in commits] == ["baseline", "docs only", "add a sleep per block",
                                             "unrelated change after it"]
    keys = [c["key"] for c in commits]
    assert keys[0] == keys[1] and len(set(keys)) == 3, "a docs-only commit shares its parent's build"
    with pytest.raises(HarnessError, match="no commits after"):
        RG.commits_of(repo, "HEAD..HEAD")


@pytest.fixture
def doubles(monkeypatch, repo, tmp_path):
    """TEST DOUBLES of build and measure: throughput 1000 tx/s with 5% noise, 700 once the sleep is in."""
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", str(tmp_path / "network.lock"))  # not the machine's: nothing runs
    rng = random.Random(11)
    measured = []

    def build(tracked, commit, root, log=print):
        return root / commit["key"], 0.0

    def measure(tracked, commit, bin_dir, paper, experiment, scale, repeat, store, fresh=False, stream=None):
        text = subprocess.run(["git", "-C", str(repo), "show", f"{commit['sha']}:cmd/peer.go"], capture_output=True,
                              text=True, check=True).stdout
        centre = 700 if "sleep" in text else 1000
        measured.append(commit["subject"])
        return {"values": [rng.gauss(centre, 0.05 * centre) for _ in range(repeat)], "runs": [str(store / "run")],
                "seconds": 0.0, "reused": False}

    monkeypatch.setattr(RR, "build", build)
    monkeypatch.setattr(RR, "measure", measure)
    monkeypatch.setattr(R, "find_experiment", lambda name: ("fastfabric", {"id": "fig6", "metric": "throughput_tps",
                                                                          "driver": "committer-bench"}))
    return measured


def test_bisect_finds_the_sleep_commit(doubles, repo, tmp_path):
    doc = R.regress("reference", "fig6", "HEAD~3..HEAD", repeat=5, bisect=True, repo=repo, root=tmp_path / "b",
                    results=tmp_path / "r", reports=tmp_path / "rep", log=lambda _: None)
    first = next(c for c in RG.commits_of(repo, "HEAD~3..HEAD") if c["subject"] == "add a sleep per block")
    assert doc["bisect"]["first_changed"] == first["sha"]
    # the two ends and the sleep commit; the docs-only midpoint shares the baseline's build and sample
    assert list(dict.fromkeys(doubles)) == ["baseline", "unrelated change after it", "add a sleep per block"]
    # each flagged change (the ends, then the sleep commit against the baseline) was re-measured alternately
    assert len(doubles) == 3 + 2 * 2 * 5
    assert doubles[2:6] == ["baseline", "unrelated change after it", "unrelated change after it", "baseline"]
    page = (tmp_path / "rep" / "reference" / "fig6" / "index.html").read_text()
    assert first["short"] in page and "Bisect: first changed commit" in page and "data:image/png;base64," in page


def test_series_marks_the_change_point_and_nothing_else(doubles, repo, tmp_path):
    doc = R.regress("reference", "fig6", "HEAD~3..HEAD", repeat=5, repo=repo, root=tmp_path / "b",
                    results=tmp_path / "r", reports=tmp_path / "rep", log=lambda _: None)
    subjects = {c["sha"]: c["subject"] for c in doc["commits"]}
    assert [subjects[s] for s in doc["change_points"]] == ["add a sleep per block"]


def test_batches_of_one_commit_report_the_false_positive_rate(doubles, repo, tmp_path):
    doc = R.regress("reference", "fig6", "HEAD~3", repeat=5, batches=4, repo=repo, root=tmp_path / "b",
                    results=tmp_path / "r", reports=tmp_path / "rep", log=lambda _: None)
    assert len(doc["noise_pairs"]) == 6 and doc["false_positive_rate"] == 0.0
    assert "false-positive rate" in R.main_summary(doc)


def test_a_page_of_its_own_states_the_systems_false_positive_rate(doubles, repo, tmp_path):
    """--page: another series (e.g. a fork's branches, --repo) beside the system's page, not over it."""
    common = dict(repeat=5, repo=repo, root=tmp_path / "b", results=tmp_path / "r", reports=tmp_path / "rep",
                  log=lambda _: None)
    R.regress("reference", "fig6", "HEAD~3", batches=4, **common)
    systems_page = (tmp_path / "rep" / "reference" / "fig6" / "regress.json").read_text()
    doc = R.regress("reference", "fig6", tags="HEAD~3,HEAD", page="fork", **common)
    assert doc["false_positives"]["pairs"] == 6
    assert (tmp_path / "rep" / "reference" / "fig6--fork" / "regress.json").is_file()
    assert (tmp_path / "rep" / "reference" / "fig6" / "regress.json").read_text() == systems_page
    assert "False-positive rate of this test" in (tmp_path / "rep" / "reference" / "fig6--fork" / "index.html"
                                                 ).read_text()


def test_another_systems_series_is_shown_beside_and_not_tested(doubles, repo, tmp_path):
    """--beside: commit by commit, with the reasons of the commits not measurable on either side."""
    common = dict(repeat=5, repo=repo, root=tmp_path / "b", results=tmp_path / "r", reports=tmp_path / "rep",
                  log=lambda _: None)
    R.regress("reference", "fig6", tags="HEAD~3,HEAD~1", page="other", **common)
    other = read_json(tmp_path / "rep" / "reference" / "fig6--other" / "regress.json")
    other["system"] = "fabric-1.2"  # TEST DOUBLE of another system's page: its last commit not measurable
    other["commits"][-1] = {**other["commits"][-1], "not_measurable": "upstream build: go build ./peer failed"}
    write_json(tmp_path / "rep" / "reference" / "fig6--other" / "regress.json", other)
    doc = R.regress("reference", "fig6", tags="HEAD~3,HEAD", beside="reference/fig6--other", **common)
    rows = RP.side_by_side(doc)
    assert [name for name, _, _ in rows] == ["HEAD~3", "HEAD", "HEAD~1"]
    assert rows[1][2] is None and rows[2][1] is None and "vs_previous" not in doc["beside"]["commits"][0]
    summary = R.main_summary(doc)
    assert "not a like-for-like ratio" in summary and "fabric-1.2: not measurable: upstream build: go build" in summary
    assert "HEAD~3  reference: " in summary and "not in this series" in summary
    page = (tmp_path / "rep" / "reference" / "fig6" / "index.html").read_text()
    assert "Beside it: fabric-1.2" in page and "fig6--other/index.html" in page
    with pytest.raises(HarnessError, match="no regress.json"):
        R.regress("reference", "fig6", tags="HEAD~3,HEAD", beside="reference/none", **common)


def test_drift_in_the_machine_load_is_flagged_once_but_not_confirmed(monkeypatch, doubles, repo, tmp_path):
    """As measured here: another job's build halved the first batch's throughput; the batches after it did not."""
    rng = random.Random(5)

    def measure(tracked, commit, bin_dir, paper, experiment, scale, repeat, store, fresh=False, stream=None):
        values = [rng.gauss(500 if repeat > 1 and i < 5 else 1000, 50) for i in range(repeat)]
        return {"values": values, "runs": [str(store / "run")], "seconds": 0.0, "reused": False}

    monkeypatch.setattr(RR, "measure", measure)
    doc = R.regress("reference", "fig6", "HEAD", repeat=5, batches=4, repo=repo, root=tmp_path / "b",
                    results=tmp_path / "r", reports=tmp_path / "rep", log=lambda _: None)
    assert [(p["a"], p["b"]) for p in doc["noise_pairs"] if p.get("flagged")] == [(0, 1), (0, 2), (0, 3)]
    assert doc["flagged_rate"] == 0.5 and doc["false_positive_rate"] == 0.0
    assert "3 flagged by the first test" in (tmp_path / "rep" / "reference" / "fig6" / "index.html").read_text()


def test_samples_follow_run_order(tmp_path):
    """Batches are cut in time order: r10 comes after r9, not after r1."""
    for i in range(12):
        point = tmp_path / "points" / f"v__r{i}"
        point.mkdir(parents=True)
        (point / "summary.json").write_text(json.dumps({"schema_version": 1, "status": "complete", "valid": True,
                                                        "repetition": i, "variant": "v", "sweep": {},
                                                        "metrics": {"tps": i}}))
    assert RR.samples(tmp_path, "tps") == list(range(12))


def test_unknown_systems_and_tiny_samples_are_refused(repo):
    with pytest.raises(HarnessError, match="no recipe .* choose one of reference, .*fabric-1.2"):
        R.regress("nosuch", "fig6", "HEAD~1..HEAD", repo=repo)
    with pytest.raises(HarnessError, match=r"smallest two-sided p-value is 0.1, .* at least 4 points"):
        R.regress("reference", "fig6", "HEAD~1..HEAD", repeat=3, repo=repo)


def test_a_failed_build_is_named_by_its_step_and_the_tools_diagnosis():
    # Fabric v1.1.0's chaincode without the nopkcs11 tag: gcc's last line says nothing, its error line does.
    gcc = ("upstream build: go build chaincode fabricrepro/chaincode/money-transfer failed (exit 1):\n"
           "# github.com/hyperledger/fabric/vendor/github.com/miekg/pkcs11\n"
           "vendor/github.com/miekg/pkcs11/pkcs11.go:29:10: fatal error: ltdl.h: No such file or directory\n"
           "   29 | #include <ltdl.h>\n      |          ^~~~~~~~\ncompilation terminated.")
    assert RB.build_failure(gcc) == ("upstream build: go build chaincode fabricrepro/chaincode/money-transfer failed "
                                    "(exit 1): vendor/github.com/miekg/pkcs11/pkcs11.go:29:10: fatal error: ltdl.h: "
                                    "No such file or directory")
    git = ("upstream build: apply 0002.patch failed (exit 1):\n"
           "error: patch failed: a.go:3\nerror: a.go: patch does not apply")
    assert RB.build_failure(git) == "upstream build: apply 0002.patch failed (exit 1): error: a.go: patch does not apply"
    assert RB.build_failure("upstream build: go build ./x failed (exit 1):\n./x.go:3:1: undefined: y").endswith(
        "(exit 1): ./x.go:3:1: undefined: y")
    # FastFabric's fork (ec1da6cf) built with Fabric 1.2's recipe: its vendored golang/protobuf deleted
    go = ("upstream build: go build ./peer failed (exit 1):\n"
          "vendor/google.golang.org/genproto/googleapis/rpc/status/status.pb.go:18:8: cannot find package "
          '"github.com/golang/protobuf/ptypes/any" in any of:\n'
          "\t/usr/local/go/src/github.com/golang/protobuf/ptypes/any (from $GOROOT)\n"
          "\t/b/gopath/src/github.com/golang/protobuf/ptypes/any (from $GOPATH)")
    assert RB.build_failure(go).endswith('(exit 1): vendor/google.golang.org/genproto/googleapis/rpc/status/'
                                        'status.pb.go:18:8: cannot find package "github.com/golang/protobuf/ptypes/any" '
                                        'in any of:')
    assert RB.build_failure("no such commit") == "no such commit"


def test_four_points_a_side_is_the_fewest_that_can_call_a_change():
    assert stats.mann_whitney([1, 2, 3], [4, 5, 6])[1] > stats.ALPHA
    assert stats.mann_whitney([1, 2, 3, 4], [5, 6, 7, 8])[1] < stats.ALPHA
    assert stats.smallest_p(3, 3) == pytest.approx(0.1) and stats.min_points() == 4 and stats.min_points(0.01) == 5


def test_u_distribution_matches_the_enumeration():
    for n1, n2 in [(1, 1), (3, 4), (5, 5)]:
        counts = stats.u_counts(n1, n2)
        assert sum(counts) == math.comb(n1 + n2, n1) and len(counts) == n1 * n2 + 1
        assert counts == counts[::-1]  # symmetric
    assert stats.u_counts(5, 5)[:4] == [1, 1, 2, 3]


def test_effect_interval_of_a_ratio_and_its_coverage():
    before, after = [100, 101, 102, 103, 104], [70, 71, 72, 73, 74]
    e = stats.ratio_interval(before, after)
    # k = 3 for 5 and 5 at 95%: P(U <= 2) = 4/252, coverage 1 - 8/252
    assert e["coverage"] == pytest.approx(1 - 8 / 252, abs=1e-4)
    assert e["ratio"] == pytest.approx(72 / 102, abs=1e-6)  # the median of the 25 pairwise ratios
    assert 0.68 < e["low"] < e["ratio"] < e["high"] < 0.74
    assert stats.ratio_interval([1, 2, 3], [4, 5, 6])["low"] is None  # 3 a side: no 95% interval exists
    assert stats.compare(before, after)["effect"] == e


def test_median_interval_states_the_coverage_it_reaches():
    m = stats.median_interval([5, 1, 4, 2, 3])
    assert (m["median"], m["low"], m["high"]) == (3, 1, 5) and m["coverage"] == pytest.approx(1 - 2 / 32)
    m = stats.median_interval(list(range(12)))
    assert m["coverage"] >= 0.95 and (m["low"], m["high"]) == (2, 9)


def test_network_lock_is_reentrant_and_released(monkeypatch, tmp_path):
    """A re-measurement holds the lock across its points and each point's run takes it again inside."""
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", str(tmp_path / "network.lock"))
    with RR.network_lock():
        with RR.network_lock():
            pass
    with open(tmp_path / "network.lock") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held


def test_fresh_measures_every_commit_anew(monkeypatch, doubles, repo, tmp_path):
    """--fresh asks measure() never to reuse a stored run; without it, a stored run may serve."""
    asked = []
    measure_double = RR.measure  # the fixture's TEST DOUBLE

    def recording(*args, fresh=False, **kwargs):
        asked.append(fresh)
        return measure_double(*args, fresh=fresh, **kwargs)

    monkeypatch.setattr(RR, "measure", recording)
    kw = dict(repeat=5, repo=repo, root=tmp_path / "b", results=tmp_path / "r", reports=tmp_path / "rep",
              log=lambda _: None)
    doc = R.regress("reference", "fig6", tags="HEAD~3,HEAD", **kw)
    # the two releases' samples may be stored ones; the re-measurement of a flagged step never is
    assert asked[:2] == [False, False] and len(asked) > 2 and all(asked[2:]) and doc["fresh"] is False
    asked.clear()
    doc = R.regress("reference", "fig6", tags="HEAD~3,HEAD", fresh=True, **kw)
    assert asked and all(asked) and doc["fresh"] is True


def test_a_stored_run_is_reused_only_when_its_points_ran_on_the_cores_available_now(monkeypatch, tmp_path):
    """measure() itself, with a stored run written as regress stores one (TEST DOUBLE of its files):
    reused while its points read back the CPUs this process may use; measured again (here: the
    reproduce double is called) once its points read back fewer, as a run Mitogen pinned did."""
    cpus = len(os.sched_getaffinity(0))
    store, commit = tmp_path / "store", {"key": "k1", "build_key": "b1", "sha": "a" * 40}
    run = store / "k1" / "mini" / "bench" / "r1"
    for rep in range(5):
        point = run / "points" / f"v__r{rep}"
        (point / "raw" / "localhost").mkdir(parents=True)
        (point / "summary.json").write_text(json.dumps({"schema_version": 1, "status": "complete", "valid": True,
                                                        "repetition": rep,
                                                        "variant": "v", "sweep": {}, "metrics": {"tps": 100 + rep}}))
    (run / "metadata.json").write_text(json.dumps({
        "schema_version": 1, "paper": "mini", "experiment": "bench", "run_id": "r1", "status": "complete",
        "started_utc": "2026-01-01T00:00:00Z", "host": {"cores": cpus}, "regress": {"build_key": "b1"}}))
    (run / "resolved.yaml").write_text("parameters: {}\nsweep: {}\n")
    called = []
    monkeypatch.setattr("harness.reproduce.reproduce", lambda *a, **k: called.append(1) or [])
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", str(tmp_path / "network.lock"))
    experiment = {"id": "bench", "metric": "tps"}
    tracked = {"system": "fabric-1.2", "variant": "v", "repo": tmp_path, "driver": "end-to-end"}

    def allowed(n):
        for point in (run / "points").iterdir():
            (point / "raw" / "localhost" / "affinity_peer.csv").write_text(
                f'component,pid,cpus_allowed_list\npeer,1,"{"0" if n == 1 else f"0-{n - 1}"}"\n')

    allowed(cpus)
    m = RR.measure(tracked, commit, tmp_path, "mini", experiment, "smoke", 5, store)
    assert m["reused"] and m["values"] == [100, 101, 102, 103, 104] and not called
    if cpus > 1:
        allowed(1)
        with pytest.raises(RB.NotMeasurable, match="no run of bench was made"):
            RR.measure(tracked, commit, tmp_path, "mini", experiment, "smoke", 5, store)
        assert called == [1]
