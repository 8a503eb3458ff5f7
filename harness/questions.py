"""Questions of ours (catalogue ``questions``): a same-run ratio answered yes, no or undecided with the claims'
statistics and their evidence rule. The caller (``analyze``) passes its claim judge in, so this module
needs nothing of analyze's and the two import no loop."""

from __future__ import annotations

from typing import Callable

from . import stats

#: A question's answer from the verdict on "the ratio is above the threshold" (``answer_question``).
ANSWERS = {stats.REPRODUCED: "yes", stats.NOT_REPRODUCED: "no", stats.INCONCLUSIVE: "undecided",
           "not comparable": "not answered"}


def answer_question(question: dict, judge: Callable[[dict], dict]) -> dict:
    """A question of ours (catalogue ``questions``: no paper's claim, so it may come out either way), e.g. "is
    v3.1 with Raft faster than Fabric 1.2 with Kafka?": its ratio judged as a claim whose band is everything
    above ``threshold`` (default 1). **yes** when the ratio's 95% interval lies above it, **no** when wholly
    below, **undecided** when it straddles it (with the repetitions that would decide it), **not answered**
    when the two sides are not comparable here. ``judge`` judges a claim with the claims' statistics, pairing
    and evidence rule (``analyze``'s evaluate_claim then with_evidence)."""
    threshold = float(question.get("threshold", 1.0))
    as_claim = {"id": question["id"], "statement": question["question"], "compare": "ratio",
                "numerator": question["numerator"], "denominator": question["denominator"],
                "metric": question.get("metric"), "expected": threshold, "bound": "lower",
                "tolerance": {"absolute": 0.0}}
    judged = judge(as_claim)
    return {"id": question["id"], "question": question["question"], "threshold": threshold,
            "answer": ANSWERS.get(judged["verdict"], judged["verdict"]),
            **{k: judged.get(k) for k in ("metric", "measured", "interval", "configurations", "repetitions",
                                          "repetitions_needed", "method", "reason", "evidence_class",
                                          "control")}}
