"""Questions of ours (catalogue ``questions``): a same-run ratio answered yes, no or undecided with the claims'
statistics (``analyze.evaluate_claim``) and their evidence rule (``analyze.with_evidence``)."""

from __future__ import annotations

from . import stats
from .analyze import evaluate_claim, with_evidence

#: A question's answer from the verdict on "the ratio is above the threshold" (``answer_question``).
ANSWERS = {stats.REPRODUCED: "yes", stats.NOT_REPRODUCED: "no", stats.INCONCLUSIVE: "undecided",
           "not comparable": "not answered"}


def answer_question(question: dict, experiment: dict, groups: list[dict], context: dict, summaries: list[dict]) -> dict:
    """A question of ours (catalogue ``questions``: no paper's claim, so it may come out either way), e.g. "is
    v3.1 with Raft faster than Fabric 1.2 with Kafka?": its ratio judged as a claim whose band is everything
    above ``threshold`` (default 1). **yes** when the ratio's 95% interval lies above it, **no** when wholly
    below, **undecided** when it straddles it (with the repetitions that would decide it), **not answered**
    when the two sides are not comparable here. Same statistics, pairing and evidence rule as claims."""
    threshold = float(question.get("threshold", 1.0))
    as_claim = {"id": question["id"], "statement": question["question"], "compare": "ratio",
                "numerator": question["numerator"], "denominator": question["denominator"],
                "metric": question.get("metric"), "expected": threshold, "bound": "lower",
                "tolerance": {"absolute": 0.0}}
    judged = with_evidence(evaluate_claim(as_claim, experiment, groups, context), summaries)
    return {"id": question["id"], "question": question["question"], "threshold": threshold,
            "answer": ANSWERS.get(judged["verdict"], judged["verdict"]),
            **{k: judged.get(k) for k in ("metric", "measured", "interval", "repetitions", "repetitions_needed",
                                          "method", "reason", "evidence_class")}}
