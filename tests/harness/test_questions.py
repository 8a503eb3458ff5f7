"""Questions of ours (catalogue ``questions``, harness/questions.py ``answer_question``): a same-run ratio
answered yes, no or undecided, never forced one way. Synthetic groups as in test_claims.py (each metric's
repetitions as [run, index, value]); the catalogue's own questions are used."""

import yaml

from harness import REPO_ROOT, validity
from harness.judge import evaluate_claim, with_evidence
from harness.questions import answer_question as _answer_with
from harness.report.revisits import revisit_blocks
from harness.report.verdicts import question_blocks

PAPERS = REPO_ROOT / "papers"


def answer_question(question, experiment, groups, context, summaries):
    """The question judged as the run's summary judges it (evaluate_claim, then with_evidence)."""
    return _answer_with(question, lambda claim: with_evidence(evaluate_claim(claim, experiment, groups, context),
                                                              summaries, compared=claim))


def _experiment(experiment: str) -> dict:
    doc = yaml.safe_load((PAPERS / "fastfabric.yaml").read_text(encoding="utf-8"))
    return next(e for e in doc["experiments"] if e["id"] == experiment)


def _group(variant: str, values: list[float], **sweep) -> dict:
    return {"variant": variant, "sweep": sweep,
            "metrics": {"delivery_throughput_tps": {"mean": sum(values) / len(values),
                                                    "repetitions": [["r", i, v] for i, v in enumerate(values)]}}}


CONTEXT = {"cores": 2, "scale": "smoke", "paper_hardware": {"cores": 24}, "not_runnable": {}, "other_runs": {}}
PROVEN = [{"status": "complete", "valid": True, "validity": {"evidence": validity.LEDGER_PROVEN}}]


def _answer(question_id: str, v31: list[float], v12: list[float], summaries=PROVEN) -> dict:
    experiment = _experiment("table1-today-raft")
    question = next(q for q in experiment["questions"] if q["id"] == question_id)
    groups = [_group("fabric-3.1-raft", v31), _group("fabric-1.2-kafka", v12)]
    return answer_question(question, experiment, groups, CONTEXT, summaries)


def test_yes_no_and_undecided_each_come_out():
    yes = _answer("v31-over-v12", [1500, 1610, 1550], [1000, 1050, 1020])
    assert yes["answer"] == "yes" and 1.4 < yes["measured"] < 1.6 and yes["interval"][0] > 1
    no = _answer("v31-over-v12", [700, 760, 720], [1000, 1050, 1020])
    assert no["answer"] == "no" and no["interval"][1] < 1
    undecided = _answer("v31-over-v12", [900, 1300, 1000], [1000, 1050, 1020])
    assert undecided["answer"] == "undecided" and undecided["interval"][0] < 1 < undecided["interval"][1]
    one = _answer("v31-over-v12", [1500], [1000])
    assert one["answer"] == "undecided"  # one repetition has no spread: never a yes


def test_a_yes_needs_ledger_proven_counts_and_a_missing_side_is_not_answered():
    driver_only = [{"status": "complete", "valid": True, "validity": {"evidence": validity.DRIVER_ONLY}}]
    assert _answer("v31-over-v12", [1500, 1610, 1550], [1000, 1050, 1020], driver_only)["answer"] == "undecided"
    experiment = _experiment("table1-today-raft")
    question = next(q for q in experiment["questions"] if q["id"] == "v31-over-v25")  # v2.5 not measured
    missing = answer_question(question, experiment, [_group("fabric-3.1-raft", [1500, 1610, 1550])], CONTEXT,
                              PROVEN)
    assert missing["answer"] == "not answered"


def test_the_evidence_is_that_of_the_compared_variants_points():
    """A driver-only column elsewhere in the run (v0.6.1's beside v3.1's) does not weaken a question on two
    ledger-proven columns, and does weaken one that compares it."""
    proven = [{**PROVEN[0], "variant": v} for v in ("fabric-3.1-raft", "fabric-1.2-kafka")]
    other = [{"status": "complete", "valid": True, "variant": "fabric-2.5-raft",
              "validity": {"evidence": validity.DRIVER_ONLY}}]
    mine = _answer("v31-over-v12", [1500, 1610, 1550], [1000, 1050, 1020], proven + other)
    assert mine["answer"] == "yes" and mine["evidence_class"] == validity.LEDGER_PROVEN
    weak = [{**other[0], "variant": "fabric-1.2-kafka"}, proven[0]]  # negative control: a compared column weak
    assert _answer("v31-over-v12", [1500, 1610, 1550], [1000, 1050, 1020], weak)["answer"] == "undecided"


def test_the_threshold_is_the_questions_and_the_report_shows_the_answer():
    experiment = _experiment("table1-today-bft")
    question = next(q for q in experiment["questions"] if q["id"] == "bft-cost")
    raft = _group("fabric-3.1", [1000, 1010, 990], ordering="etcdraft")
    answered = answer_question(question, experiment, [_group("fabric-3.1", [950, 962, 941], ordering="BFT"), raft],
                               CONTEXT, PROVEN)
    assert answered["threshold"] == 0.9 and answered["answer"] == "yes"  # 0.95, below 1 but above 0.9
    below = answer_question(question, experiment, [_group("fabric-3.1", [880, 890, 871], ordering="BFT"), raft],
                            CONTEXT, PROVEN)
    assert below["answer"] == "no"
    rows = question_blocks({"questions": [answered]})[0][2]
    assert rows[0][3].startswith("**yes**") and rows[0][1] == "> 0.9?"
    assert question_blocks({}) == []


def test_a_question_answered_per_configuration_names_each_configuration():
    """fig6-revisit-smartbft's report listed eight intervals and said not which configuration each was."""
    experiment = {**_experiment("table1-today-raft"), "parameters": {"sweep": {"block_size": [10, 100]}}}
    question = next(q for q in experiment["questions"] if q["id"] == "v31-over-v12")
    groups = [_group("fabric-3.1-raft", [1000, 1010, 990], block_size=10),
              _group("fabric-1.2-kafka", [500, 505, 495], block_size=10),
              _group("fabric-3.1-raft", [400, 404, 396], block_size=100),
              _group("fabric-1.2-kafka", [800, 808, 792], block_size=100)]
    answered = answer_question(question, experiment, groups, CONTEXT, PROVEN)
    assert answered["configurations"] == ["block_size=10", "block_size=100"]
    assert answered["measured"] == [2.0, 0.5] and answered["answer"] == "no"
    shown = question_blocks({"questions": [answered]})[0][2][0][2]
    assert shown.startswith("block_size=10: 2 [") and "; block_size=100: 0.5 [" in shown, shown
    assert "block_size=100: 0.5 [" in answered["reason"]
    # one configuration: a single estimate, nothing to name
    single = answer_question(question, experiment, groups[:2], CONTEXT, PROVEN)
    assert not isinstance(single["measured"], list) and single.get("configurations") is None


def test_the_papers_report_lists_each_revisits_answers_and_the_command_of_one_not_run():
    """"The idea on today's Fabric" (harness/report/revisits.py): a revisit run shows its answers, one not run
    its command; a paper without revisits has no such section."""
    doc = yaml.safe_load((PAPERS / "fastfabric.yaml").read_text(encoding="utf-8"))
    experiments = doc["experiments"]
    experiment = next(e for e in experiments if e["id"] == "table1-revisit-v31")
    def group(variant, values):  # the experiment's metric: the peer's own commit times
        g = _group(variant, values)
        g["metrics"] = {"throughput_tps": g["metrics"]["delivery_throughput_tps"]}
        return g
    groups = [group("fabric-3.1-raft", [1500, 1610, 1550]), group("fabric-1.2", [1000, 1050, 1020]),
              group("fastfabric", [1490, 1600, 1570])]
    answered = [answer_question(q, experiment, groups, CONTEXT, PROVEN) for q in experiment["questions"]]
    (head, intro, (_, headers, rows)) = revisit_blocks("fastfabric", experiments, {"table1-revisit-v31": answered})
    assert head == ("h2", "The idea on today's Fabric") and headers[0] == "revisit (ours)"
    mine = [r for r in rows if r[0] == "`table1-revisit-v31`"]
    assert [r[5].split("**")[1] for r in mine] == ["undecided", "yes", "yes"] and mine[0][1] == "Table I"
    not_run = [r for r in rows if r[0] == "`fig6-revisit-v31`"]
    assert not_run and all(r[4] == "not run yet" and "--experiment fig6-revisit-v31" in r[5] for r in not_run)
    assert revisit_blocks("fastfabric", [e for e in experiments if not e.get("revisits")], {}) == []
