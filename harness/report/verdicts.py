"""The claims table: each claim's measured value, verdict, caveat and what its counts rest on; how a
verdict is reached; and the control points that show the checks would catch a bad count."""

from __future__ import annotations

from .text import fmt


#: ``caveat``: the claim's ``comparable_on`` (what a comparison with the paper needs), beside any verdict;
#: ``evidence``: what the counts rest on (harness/validity.py's classes), the build, the host's cores and the
#: runs whose repetitions were pooled.
CLAIM_HEADERS = ["claim", "expected", "measured [95% CI] (n)", "verdict", "reason", "caveat (comparable on)",
                 "evidence (counts, build, cores, runs pooled)"]


#: How the claims table says what a claim's counts rest on (the weakest of its pooled points).
EVIDENCE_TEXT = {
    "ledger-proven": "ledger-proven (every count held against the ledger's codes, which our verifier re-derived)",
    "validator's codes": "counts not ledger-proven: the ledger's codes, derived only by the validator that wrote "
                         "them (our verifier does not run on this build)",
    "independent check": "counts not ledger-proven: an independent check passed",
    "driver only": "counts not ledger-proven: the driver's own count, no independent check",
    "no transactions counted": "no transactions counted",
    None: "no complete point",
}


def evidence_class_text(evidence_class: str | None, control: str | None = None) -> str:
    """What a claim's counts rest on, and, where a control could prove its checks, that control's outcome."""
    text = EVIDENCE_TEXT.get(evidence_class, str(evidence_class))
    return text + (f"; control {control}" if control else "")


def with_caveats(claims: list[dict], experiment: dict) -> list[dict]:
    """The verdicts with each claim's ``comparable_on`` from the catalogue (analyze keeps it for
    "not comparable" verdicts only, inside the reason)."""
    caveats = {c["id"]: c.get("comparable_on") for c in experiment.get("claims") or [] if c.get("id")}
    return [{**c, "comparable_on": c.get("comparable_on") or caveats.get(c.get("id"))} for c in claims]


def _reason_text(claim: dict) -> str:
    """The verdict's reason without the ``comparable on`` text analyze appends (it has its own column)."""
    reason = claim.get("reason") or ""
    caveat = claim.get("comparable_on")
    return reason.replace(f"; comparable on: {caveat}", "") if caveat else reason


def measured_text(claim: dict) -> str:
    """A claim's measured value with its 95% interval and repetitions (one per configuration where it
    holds at each), e.g. ``1.02 [0.95, 1.1] (n=3)``; ``(n=1, no interval)`` for a single repetition."""
    measured = claim.get("measured")
    if measured is None:
        return "–"
    n = claim.get("repetitions")
    values = measured if isinstance(measured, list) else [measured]
    intervals = claim.get("interval") if isinstance(measured, list) else [claim.get("interval")]
    intervals = intervals or [None] * len(values)
    texts = [fmt(v) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else (" (no interval)" if n is not None else ""))
             for v, ci in zip(values, intervals)]
    if isinstance(measured, list) and len(claim.get("configurations") or []) == len(texts):  # which is which
        texts = [f"{c}: {t}" for c, t in zip(claim["configurations"], texts)]
    return "; ".join(texts) + (f" (n={n})" if n is not None else "")


def verdict_text(claim: dict) -> str:
    """The claim's verdict as measured and, where the paper states its cores and they differ from those
    measured, the verdict at the paper's cores (judge.cores_section)."""
    text = f"**{claim['verdict']}**"
    if claim.get("judged_at_scale"):  # harness/report/conditions.py: never a verdict where the scale cannot show it
        return text + f" at this scale (scale {claim['judged_at_scale']} judges it)"
    cores = claim.get("cores") or {}
    at = [m["cores"] for m in cores.get("measured") or []]
    if cores.get("verdict") and at and cores.get("paper") not in at:  # the verdict shown is at the most cores
        text += f" at {max(at)} cores; at the paper's {cores['paper']}: **{cores['verdict']}**"
    return text


def claims_rows(claims: list[dict]) -> list[list[str]]:
    """One row of the claims table (``CLAIM_HEADERS``) per claim."""
    return [[c.get("statement") or c["id"], f"{c['compare']} {fmt(c['expected'])}", measured_text(c),
             verdict_text(c), _reason_text(c), c.get("comparable_on") or "–",
             c.get("evidence") or "–"] for c in claims]


#: How a verdict is reached, said once under each claims table (harness/stats.py, docs/catalogue.md).
VERDICT_METHOD = ("Verdicts: **reproduced** when the measured value's 95% interval lies inside the claim's band, "
                  "**not reproduced** when it lies wholly outside, **inconclusive** otherwise (with the repetitions "
                  "that would decide it at the observed spread) and always at one repetition, which has no spread; "
                  "**not comparable** when it cannot be measured here. Ratios pair the repetitions of one run "
                  "(same run, same repetition index): Student t on the log ratios; sides from different runs: "
                  "Welch t on the log values. Where the cores measured differ from the paper's hardware threads, "
                  "the verdict at the paper's cores follows: from the trend over a `cpus` sweep, else "
                  "**inconclusive** (docs/catalogue.md, \"How a claim is judged\", \"Cores\").")


#: The questions table (ours, not the papers': ``answer_question``).
QUESTION_HEADERS = ["question (ours)", "ratio", "measured", "answer", "evidence"]


def question_blocks(summary: dict) -> list[tuple]:
    """The experiment's questions with their answers (none without questions)."""
    questions = summary.get("questions") or []
    if not questions:
        return []
    rows = [[q["question"], f"> {fmt(q['threshold'])}?", measured_text(q),
             f"**{q['answer']}**" + (f" ({q['repetitions_needed']} repetitions would decide it)"
                                     if q["answer"] == "undecided" and q.get("repetitions_needed") else ""),
             evidence_class_text(q.get("evidence_class"), q.get("control"))] for q in questions]
    return [("table", QUESTION_HEADERS, rows),
            ("p", "Questions are ours, not the paper's: each is a same-run ratio, answered **yes** when its 95% "
                  "interval lies above the threshold, **no** when wholly below, **undecided** when it straddles it "
                  "(the statistics of the claims, harness/questions.py answer_question).")]


def control_blocks(summary: dict) -> list[tuple]:
    """One sentence on the run's control points beside the verdicts: what each planted and whether the
    ledger's codes and our verifier found exactly that (harness/plan.py add_controls)."""
    controls = summary.get("controls") or []
    if not controls:
        return [("p", "**Control:** none in these runs (the driver cannot corrupt transactions, or the runs "
                      "were made with --no-control): nothing here shows that the checks would catch a bad count.")]
    parts = []
    for c in controls:
        planted = ", ".join(f"{n} {k}" for k, n in (c.get("corrupted") or {}).items()) or "nothing"
        found = (f"the ledger marked {c['ledger_invalid']} invalid" if c.get("ledger_invalid") is not None
                 else "no ledger codes")
        if c.get("refused_at_broadcast"):
            found = f"the orderer refused {c['refused_at_broadcast']} at broadcast; " + found
        outcome = ("passed" if c["point_status"] == "complete" and c.get("status") == "passed"
                   else f"**failed** ({c.get('reason') or c['point_status']})")
        parts.append(f"`{c['point']}` planted {planted}; {found}; {outcome}")
    return [("p", "**Control** (a point that corrupts 1% of its transactions of each kind its driver supports; "
                  "its ledger codes, and our verifier where it runs on the build, must mark exactly those invalid): " + "; ".join(parts) + ".")]


#: The claims table of a paper's report: one line per claim; reason, caveat and evidence folded under it.
CLAIM_LINE_HEADERS = ["experiment", "claim", "published", "measured [95% CI] (n)", "verdict"]
#: Column widths of that table in the HTML (it fits 1280 px without scrolling sideways).
CLAIM_LINE_WIDTHS = ["14%", "38%", "10%", "16%", "22%"]


def claims_block(claims: list[dict]) -> tuple:
    """The ``("claims", ...)`` block (harness/report/render.py) of claims that carry their ``experiment``:
    one line per claim (statement, published value, measured value with interval and n, verdict), its
    reason, caveat and evidence as details; a sentence (a ``;``-separated part) that several claims'
    details share is said once, as a numbered note the details point to."""
    rows, raw = [], []
    for c, row in zip(claims, claims_rows(claims)):
        statement, expected, measured, verdict, reason, caveat, evidence = row
        rows.append([c.get('experiment', '–'), statement, expected, measured, verdict])
        raw.append([(label, text) for label, text in (("reason", reason), ("caveat (comparable on)", caveat),
                                                       ("evidence", evidence)) if text and text != "–"])
    seen: dict[str, int] = {}
    for items in raw:
        for part in {p for _, text in items for p in text.split("; ")}:
            seen[part] = seen.get(part, 0) + 1
    notes: list[str] = []

    def short(text: str) -> str:
        out = []
        for part in text.split("; "):
            if seen.get(part, 0) > 1 and len(part) > 24:
                if part not in notes:
                    notes.append(part)
                n = notes.index(part) + 1
                out.append(f"[note {n}](#note-{n})")
            else:
                out.append(part)
        return "; ".join(out)

    details = [[(label, short(text)) for label, text in items] for items in raw]
    return ("claims", CLAIM_LINE_HEADERS, rows, details, notes, CLAIM_LINE_WIDTHS)
