"""invoke regress across release lines: each tag built by the system whose release lines cover it, and no
change test across a boundary (another system, variant, driver or ordering service).

A toy repository's tags state their release as Fabric's do (``BASE_VERSION = 1.4.0`` in v1.x, ``FABRIC_VER
?= 2.5.1`` later); a tmp systems folder holds three TEST DOUBLE systems of one line ``toyfab`` (toyfab-1.4:
1.3 and 1.4, Kafka; toyfab-2.5: 2.5, Raft; toyfab-3.1: 3.0 and 3.1, Raft), each declaring its own ordering
parameter as fabric-1.2 and fabric-3.1 do. ``build`` and ``measure`` are TEST DOUBLES (as in
test_regress.py): the measurement is the tree's ``speed`` file with 3% noise, so that the routing and the
boundaries are what is tested. Reading the tags, cloning (through git's ``url.<mirror>.insteadOf``), the
recipes and the experiment's variants are the real ones.
"""

from __future__ import annotations

import random

import pytest

from harness import regress as R
from harness.regress import lines as RL, run as RR
from harness.regress.build import NotMeasurable
from tests.harness.git_repos import IDENTITY, git

URL = "https://github.com/example/toyfab.git"
# tag, its Makefile, its speed (tx/s): v2.0.0 is of a line no system covers; v2.5.2 is 30% slower than
# v2.5.1 (a change within a segment); v3.1.0 twice as fast (across a boundary: never compared)
TAGS = [("v1.4.0", "BASE_VERSION = 1.4.0\n", 400), ("v2.0.0", "BASE_VERSION = 2.0.0\n", 900),
        ("v2.5.1", "FABRIC_VER ?= 2.5.1\n", 1000), ("v2.5.2", "FABRIC_VER ?= 2.5.2\n", 700),
        ("v3.1.0", "FABRIC_VER ?= 3.1.0\n", 2000)]


def recipe(system: str, sha: str, variable: str, version: str, lines: list[str], driver: str) -> str:
    return f"""# TEST DOUBLE system of the line toyfab (tests/harness/test_regress_lines.py)
schema_version: 2
system: {system}
repository: example/toyfab
commit: {sha}
pin_source: the toy repository's tag v{version}
toolchain:
  kind: go-gopath
  import_path: toy.example/toyfab
  release: {{version: {version}, file: Makefile, variable: {variable}, lines: {lines}}}
targets: {{toy: .}}
patches: []
drivers:
  {driver}: {{playbook: toy.yml, roles: [], binaries: [], placement: {{}}}}
"""


#: A TEST DOUBLE system's plugin: its ordering service named from its own parameter (as fabric-1.2's and
#: fabric-3.1's plugins name theirs).
PLUGIN = """from harness.plugin_api import SystemPlugin


class Plugin(SystemPlugin):
    def ordering_service(self, parameters):
        names = {{"kafka": "Kafka", "etcdraft": "Raft"}}
        return names.get(parameters.get("{parameter}"))
"""


@pytest.fixture(scope="module")
def toyfab(tmp_path_factory):
    """The toy repository (one line of history, a tag per release) and the systems of the line toyfab."""
    root = tmp_path_factory.mktemp("toyfab")
    repo = root / "toyfab"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = {}
    for tag, makefile, speed in TAGS:
        (repo / "Makefile").write_text(makefile)
        (repo / "speed").write_text(f"{speed}\n")
        git(repo, "add", "Makefile", "speed")
        git(repo, *IDENTITY, "commit", "-q", "-m", f"release {tag}")
        git(repo, "tag", tag)
        shas[tag] = git(repo, "rev-parse", "HEAD")
    systems = root / "systems"
    for system, tag, variable, lines, driver, parameters in (
            ("toyfab-1.4", "v1.4.0", "BASE_VERSION", ["1.3", "1.4"], "e2e-kafka", "orderer_type"),
            ("toyfab-2.5", "v2.5.1", "FABRIC_VER", ["2.5"], "e2e", "ordering"),
            ("toyfab-3.1", "v3.1.0", "FABRIC_VER", ["3.0", "3.1"], "e2e", None)):
        (systems / system).mkdir(parents=True)
        (systems / system / "upstream.yaml").write_text(
            recipe(system, shas[tag], variable, tag[1:], lines, driver))
        if parameters:  # toyfab-3.1 declares nothing of its own: it extends toyfab-2.5
            (systems / system / "system.yaml").write_text(f"id: {system}\n")
            (systems / system / "parameters.yaml").write_text(f"{parameters}: {{type: string}}\n")
            (systems / system / "plugin.py").write_text(PLUGIN.format(parameter=parameters))
        else:
            (systems / system / "system.yaml").write_text(f"id: {system}\nextends: toyfab-2.5\n")
    return {"repo": repo, "systems": systems, "shas": shas, "root": root}


EXPERIMENT = {"id": "today", "metric": "delivery_throughput_tps", "driver": "e2e",
              # each variant names its ordering service by its own system's parameter (as table1-today-raft)
              "variants": [{"id": "toyfab-1.4-kafka", "system": "toyfab-1.4", "driver": "e2e-kafka",
                            "parameters": {"orderer_type": "kafka"}, "switches": {}},
                           {"id": "toyfab-2.5-raft", "system": "toyfab-2.5", "parameters": {"ordering": "etcdraft"},
                            "switches": {}},
                           {"id": "toyfab-3.1-raft", "system": "toyfab-3.1", "parameters": {"ordering": "etcdraft"},
                            "switches": {}}]}


@pytest.fixture
def doubles(monkeypatch, toyfab, tmp_path):
    """TEST DOUBLES of build and measure; what each build was asked (its tracked system) is kept."""
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", str(tmp_path / "network.lock"))  # not the machine's: nothing runs
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{toyfab['repo']}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", URL)
    monkeypatch.setattr(R, "find_experiment", lambda name: ("toy-paper", EXPERIMENT))
    # no plan of the toy paper: the ordering service is read from the experiment's fixed parameters
    monkeypatch.setattr("harness.catalogue.load_paper", lambda paper: (_ for _ in ()).throw(OSError(paper)))
    rng = random.Random(5)
    built = {}

    def build(tracked, commit, root, log=print):
        built[commit.get("ref")] = {**tracked, "pin": RR.pin_of(tracked, commit)}
        return root / commit["key"], 0.0

    def measure(tracked, commit, bin_dir, paper, experiment, scale, repeat, store, fresh=False, stream=None):
        speed = float(git(toyfab["repo"], "show", f"{commit['sha']}:speed"))
        assert store.name == tracked["system"], "runs are stored under the commit's own system"
        return {"values": [rng.gauss(speed, 0.03 * speed) for _ in range(repeat)], "runs": [], "seconds": 0.0,
                "reused": False}

    monkeypatch.setattr(RR, "build", build)
    monkeypatch.setattr(RR, "measure", measure)
    return built


def run(toyfab, tmp_path, **kwargs):
    return R.regress("toyfab", "toy-paper:today", repeat=5, root=tmp_path / "regress", systems_dir=toyfab["systems"],
                     builds=tmp_path / "builds", results=tmp_path / "results", reports=tmp_path / "reports",
                     log=lambda _: None, **kwargs)


def test_each_tag_is_built_by_the_system_whose_lines_cover_its_release(doubles, toyfab, tmp_path):
    doc = run(toyfab, tmp_path, tags="v1.4.0,v2.0.0,v2.5.1,v2.5.2,v3.1.0")
    rows = {r["ref"]: r for r in doc["commits"]}
    assert list(rows) == ["v1.4.0", "v2.0.0", "v2.5.1", "v2.5.2", "v3.1.0"]
    assert {ref: (t["system"], t["variant"], t["driver"]) for ref, t in doubles.items()} == {
        "v1.4.0": ("toyfab-1.4", "toyfab-1.4-kafka", "e2e-kafka"), "v2.5.1": ("toyfab-2.5", "toyfab-2.5-raft", "e2e"),
        "v2.5.2": ("toyfab-2.5", "toyfab-2.5-raft", "e2e"), "v3.1.0": ("toyfab-3.1", "toyfab-3.1-raft", "e2e")}
    # the build's pin names the lines, so that the build checks the tree's release again
    assert doubles["v1.4.0"]["pin"]["release_lines"] == ["1.3", "1.4"]
    assert doubles["v1.4.0"]["pin"]["driver"] == "e2e-kafka"
    assert [rows[t]["release"] for t in ("v1.4.0", "v2.5.1", "v3.1.0")] == ["1.4.0", "2.5.1", "3.1.0"]
    # each system reads its own ordering parameter (toyfab-3.1 through the system it extends)
    assert [rows[t]["segment"]["ordering_service"] for t in ("v1.4.0", "v2.5.1", "v3.1.0")] == ["Kafka", "Raft", "Raft"]
    assert doc["lines"] == {"toyfab-1.4": ["1.3", "1.4"], "toyfab-2.5": ["2.5"], "toyfab-3.1": ["3.0", "3.1"]}
    # a tag no system covers stays in the series, with what each system read
    assert rows["v2.0.0"]["not_measurable"] == (
        "no system covers its release: toyfab-1.4 (1.3.x, 1.4.x): BASE_VERSION 2.0.0; toyfab-2.5 (2.5.x): its "
        "Makefile sets FABRIC_VER nowhere; toyfab-3.1 (3.0.x, 3.1.x): its Makefile sets FABRIC_VER nowhere")
    assert doc["not_measurable"] == {toyfab["shas"]["v2.0.0"]: rows["v2.0.0"]["not_measurable"]}
    page = (tmp_path / "reports" / "toyfab" / "today" / "index.html").read_text()
    assert "not measurable: no system covers its release" in page
    assert "toyfab-1.4, toyfab-1.4-kafka, Kafka, release 1.4.0" in page


def test_no_change_test_across_a_boundary_and_one_within_a_segment(doubles, toyfab, tmp_path):
    doc = run(toyfab, tmp_path, tags="v1.4.0,v2.0.0,v2.5.1,v2.5.2,v3.1.0")
    rows = {r["ref"]: r for r in doc["commits"]}
    shas = toyfab["shas"]
    # v2.5.1 follows v1.4.0 (the last measured): Kafka -> Raft, not compared although 2.5x as fast
    assert "vs_previous" not in rows["v2.5.1"]
    assert rows["v2.5.1"]["boundary"]["why"] == "not compared: ordering service changes (Kafka → Raft)"
    assert rows["v2.5.1"]["boundary"]["after"] == shas["v1.4.0"]
    # negative control: the same system on both sides is compared, and its 30% slowdown called
    assert rows["v2.5.2"]["vs_previous"]["changed"] and "boundary" not in rows["v2.5.2"]
    # the same ordering service, another system: not compared either, though twice as fast
    assert rows["v3.1.0"]["boundary"]["why"] == "not compared: system changes (toyfab-2.5 → toyfab-3.1)"
    assert "vs_previous" not in rows["v3.1.0"]
    assert doc["change_points"] == [shas["v2.5.2"]]
    assert [(b["before"], b["after"]) for b in doc["boundaries"]] == [(shas["v1.4.0"], shas["v2.5.1"]),
                                                                      (shas["v2.5.2"], shas["v3.1.0"])]
    assert doc["boundaries"][0]["changes"]["ordering_service"] == ["Kafka", "Raft"]
    page = (tmp_path / "reports" / "toyfab" / "today" / "index.html").read_text()
    assert page.count("<tr class=boundary>") == 2
    assert "boundary: not compared: ordering service changes (Kafka → Raft)" in page
    summary = R.main_summary(doc)
    assert "--- boundary: not compared: ordering service changes (Kafka → Raft)" in summary
    assert "--- boundary: not compared: system changes (toyfab-2.5 → toyfab-3.1)" in summary


def test_bisect_never_crosses_a_boundary(doubles, toyfab, tmp_path):
    doc = run(toyfab, tmp_path, commits="v2.5.1..v3.1.0", bisect=True)
    assert doc["bisect"]["first_changed"] is None and doc["commits"] == []  # nothing measured
    assert "lie across a boundary (not compared: system changes (toyfab-2.5 → toyfab-3.1)" in doc["bisect"]["why"]
    assert doc["bisect"]["boundary"]["at"] == toyfab["shas"]["v3.1.0"]
    assert not doubles
    page = (tmp_path / "reports" / "toyfab" / "today" / "index.html").read_text()
    assert "Bisect refused:" in page and "bisection never crosses one" in page
    # within one segment it bisects as before
    doc = run(toyfab, tmp_path, commits="v2.5.1..v2.5.2", bisect=True)
    assert doc["bisect"]["first_changed"] == toyfab["shas"]["v2.5.2"]


def test_a_midpoint_across_a_boundary_is_skipped(doubles, toyfab, tmp_path):
    sampler = RR.Sampler({}, "toy-paper", EXPERIMENT, "smoke", 5, False, tmp_path, tmp_path / "results",
                         lambda _: None, route=lambda c: {"segment": {"system": c["system"]}})
    line = [{"sha": s, "short": s, "system": system} for s, system in
            (("a", "x"), ("b", "y"), ("c", "y"), ("d", "x"))]
    measured = []
    sampler.measured = lambda c: measured.append(c["sha"]) or {**c, "values": [1.0] * 5}
    sampler.tested = lambda first, row: {"changed": False}
    lo, hi, skipped = RR._search(line, {**line[0], "segment": {"system": "x"}}, sampler, [])
    assert skipped == ["b", "c"] and measured == [] and (lo, hi) == (0, 3)


def test_the_latest_release_a_tree_states_routes_it(toyfab):
    """A tree may name an older release than its own in another variable (e.g. a stale BASE_VERSION beside
    FABRIC_VER): where two systems cover what they read, the later release decides."""
    spec = lambda variable, lines: {"toolchain": {"release": {"version": "0", "file": "Makefile", "variable": variable,
                                                             "lines": lines}}}
    recipes = {"old": spec("BASE_VERSION", ["1.4"]), "new": spec("FABRIC_VER", ["3.1"])}
    repo, shas = toyfab["repo"], toyfab["shas"]
    assert RL.covering(repo, shas["v3.1.0"], recipes) == ("new", "3.1.0")
    both = {"a": spec("FABRIC_VER", ["3.1"]), "b": spec("FABRIC_VER", ["3.0", "3.1"])}
    with pytest.raises(NotMeasurable, match="release 3.1.0 is covered by a and b: name one with --system"):
        RL.covering(repo, shas["v3.1.0"], both)
    assert RL.version_key("2.5.16") > RL.version_key("2.5.9")


def test_a_line_is_named_among_the_choices_and_takes_no_repo(toyfab):
    from harness.errors import HarnessError
    with pytest.raises(HarnessError, match="choose one of reference, toyfab-1.4, toyfab-2.5, toyfab-3.1, toyfab"):
        R.regress("nosuch", "x", tags="a,b", systems_dir=toyfab["systems"])
    with pytest.raises(HarnessError, match="a line reads its systems' repository"):
        R.regress("toyfab", "x", tags="a,b", systems_dir=toyfab["systems"], repo=toyfab["repo"])


def test_a_run_refused_leaves_its_commit_not_measurable_and_the_series_goes_on(monkeypatch, tmp_path):
    from harness.errors import HarnessError

    def refuse(*args, **kwargs):
        raise HarnessError("preflight: 2 problem(s), nothing was deployed:\n  - port 17050 in use\n  - port 17051 in use")
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", "")
    monkeypatch.setattr("harness.reproduce.reproduce", refuse)
    tracked = {"system": "toyfab-2.5", "variant": "toyfab-2.5-raft", "repo": tmp_path, "driver": "e2e"}
    commit = {"sha": "a" * 40, "key": "a" * 16, "ref": "v2.5.1"}
    with pytest.raises(NotMeasurable, match=r"^run refused: preflight: 2 problem\(s\), nothing was deployed: - port "
                                            r"17050 in use \.\.\.$"):
        RR.measure(tracked, commit, tmp_path, "toy-paper", EXPERIMENT, "smoke", 4, tmp_path / "results", fresh=True)
