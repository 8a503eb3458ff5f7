"""A paper's "The idea on today's Fabric" section (issue 35): the experiments of ours that re-run one of the
paper's against today's Fabric (catalogue ``revisits``), each question with its same-run answer, and those not
run yet with the command that runs them."""

from __future__ import annotations

from .verdicts import evidence_class_text, measured_text

TITLE = "The idea on today's Fabric"
HEADERS = ["revisit (ours)", "re-runs", "question", "ratio", "measured", "answer", "evidence"]


def revisit_blocks(paper_id: str, experiments: list[dict], questions_of: dict[str, list[dict]]) -> list[tuple]:
    """The section's blocks (none where the paper has no revisit). ``questions_of``: each run experiment's
    answered questions (``analyze_pool``'s ``questions``); an experiment absent from it has not run."""
    revisits = [e for e in experiments if e.get("revisits")]
    if not revisits:
        return []
    refs = {e["id"]: e.get("ref", e["id"]) for e in experiments}
    rows = []
    for experiment in revisits:
        what = [f"`{experiment['id']}`", "; ".join(refs.get(r, r) for r in experiment["revisits"])]
        answered = questions_of.get(experiment["id"])
        if answered is None:
            command = f"`invoke reproduce --paper {paper_id} --experiment {experiment['id']} --build upstream`"
            rows += [[*what, q["question"], f"> {q.get('threshold', 1)}?", "not run yet", command, "–"]
                     for q in experiment.get("questions") or []]
            continue
        rows += [[*what, q["question"], f"> {q['threshold']:g}?", measured_text(q),
                  f"**{q['answer']}**" + (f" ({q['repetitions_needed']} repetitions would decide it)"
                                          if q["answer"] == "undecided" and q.get("repetitions_needed") else
                                          f" ({q['reason']})" if q["answer"] == "not answered" and q.get("reason")
                                          else ""),
                  evidence_class_text(q.get("evidence_class"), q.get("control"))] for q in answered]
    return [("h2", TITLE),
            ("p", "Experiments of ours, not the paper's: each re-runs one of the paper's experiments against "
                  "stock Fabric v3.1 beside the published code, on this harness's drivers and validity checks, in "
                  "one run, and asks a question its same-run ratio can answer either way (**yes** when the 95% "
                  "interval lies above the threshold, **no** when wholly below, **undecided** when it straddles "
                  "it). Each experiment's own section below gives its table, deviations and runs."),
            ("table", HEADERS, rows)]
