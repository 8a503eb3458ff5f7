"""A paper's report: at the top what was found (``glance``: verdict counts, what they were judged on, what to
run next), the Claims table of every experiment, the questions of its revisits on today's Fabric
(``revisits``), each experiment's section, what has not run, and the
fidelity section; written as Markdown and HTML, each section also into its run, with ``glance.json`` for the
site's index (``site``), which is written anew."""

from __future__ import annotations

from pathlib import Path

from .. import SCHEMA_VERSION, fidelity
from ..catalogue import load_paper
from ..errors import HarnessError
from ..rundir import Run
from ..selection import select_runs
from ..rundir import write_json
from .experiment import experiment_blocks
from .glance import glance_blocks
from .render import to_html, to_markdown
from .revisits import revisit_blocks
from .site import write_index
from .text import fmt
from .verdicts import CLAIM_HEADERS, VERDICT_METHOD, claims_block


def _claims_once(blocks: list[tuple], experiment_id: str) -> list[tuple]:
    """A section of the paper's report: its claims table is the paper's Claims table at the top, so
    the section points there instead of repeating it (a run's own report.md keeps its table)."""
    out = []
    for b in blocks:
        if b == ("p", VERDICT_METHOD):  # said once, under the Claims table
            continue
        if b[0] == "table" and list(b[1]) == CLAIM_HEADERS:
            out.append(("p", f"Verdicts of this experiment's {len(b[2])} claim(s): rows `{experiment_id}` of the "
                             "Claims table at the top."))
        else:
            out.append(b)
    return out


def render_paper(paper_id: str, results: Path, reports: Path, papers_dir: Path | None = None,
                 runs: list[Path] | None = None, since: str | None = None) -> Path:
    """Render ``reports/<paper>/report.md`` and ``report.html`` (and each experiment's section as
    ``report.md`` of its newest pooled run); return the dir.

    Each experiment pools its complete runs of one configuration (``selection.select_runs``); ``runs``
    (run directories of this paper) or ``since`` (a UTC date or time) restrict the runs considered.
    """
    paper = load_paper(paper_id, papers_dir)
    info = paper.doc["paper"]
    for path in runs or []:
        named = Run.open(path)  # refuses a directory that is not a run
        if named.metadata["paper"] != paper_id:
            raise HarnessError(f"--run {path}: a run of paper {named.metadata['paper']!r}, not {paper_id!r}")
    out = Path(reports) / paper_id
    (out / "figures").mkdir(parents=True, exist_ok=True)
    body, all_claims, not_runnable, not_run, entries = [], [], [], [], []
    questions_of: dict[str, list[dict]] = {}
    for experiment in paper.experiments:
        selection = select_runs(results, paper_id, experiment["id"], named=runs, since=since,
                                judged_when=experiment.get("judged_when") or None)
        if selection is None:
            if experiment.get("runnable"):
                not_run.append([experiment["id"], experiment["title"]])
            else:
                not_runnable.append([experiment["id"], experiment["title"],
                                     experiment.get("not_runnable_reason") or "not runnable"])
            continue
        figure = f"figures/{experiment['id']}.png"
        blocks, claims, questions_of[experiment["id"]] = experiment_blocks(experiment, selection, figure)
        run = selection.shown
        body += _claims_once(blocks, experiment["id"])
        all_claims += [{**c, "experiment": experiment["id"]} for c in claims]
        entries.append({"id": experiment["id"], "claims": claims, "selection": selection, "experiment": experiment})
        for _, name, png, _caption in (b for b in blocks if b[0] == "img"):
            (out / name).write_bytes(png)
            (run.path / "figures").mkdir(exist_ok=True)
            (run.path / name).write_bytes(png)
        (run.path / "report.md").write_text(to_markdown(blocks), encoding="utf-8")

    glance, facts = glance_blocks(paper_id, entries, info.get("hardware"), not_run)
    head = [("h1", f"{info['title']}"),
            ("p", ", ".join(info.get("authors") or []) + (f". {info['venue']}." if info.get("venue") else ""))]
    head += glance + [
            ("p", "Measured by this repository's harness from the stored runs named in each section "
                  "(every complete run of one configuration, pooled); published values are quoted from the paper "
                  "with their place in it.")]
    if runs is not None or since:
        head.append(("p", "Runs considered: " + (f"those named with --run ({len(runs)})" if runs is not None else "all")
                          + (f", started since {since}" if since else "") + "."))
    if all_claims:
        head += [("h2", "Claims"), claims_block(all_claims), ("p", VERDICT_METHOD)]
    head += revisit_blocks(paper_id, paper.experiments, questions_of)
    tail = []
    if not_run:
        title = "Not run yet" if runs is None and not since else "No run selected"
        tail += [("h2", title), ("table", ["experiment", "title"], not_run)]
    if not_runnable:
        tail += [("h2", "Not runnable yet"), ("table", ["experiment", "title", "reason"], not_runnable)]
    body += fidelity.blocks(fidelity.fidelity(results, paper_id, paper.experiments, info.get("baseline_system")), fmt)
    blocks = head + body + tail
    (out / "report.md").write_text(to_markdown(blocks), encoding="utf-8")
    (out / "report.html").write_text(to_html(blocks, info["title"]), encoding="utf-8")
    write_json(out / "glance.json", {"schema_version": SCHEMA_VERSION, **facts, "title": info["title"], "selected": runs is not None or bool(since)})
    write_index(Path(reports), papers_dir)
    return out
