"""Render a paper's report (Markdown and self-contained HTML) from stored runs only.

For every experiment of the paper's catalogue the report pools the repetitions
of every complete run of one configuration (``selection.select_runs``: the strongest
stored, whatever ran last: judged_when met, then scale, cores, repetitions), or of the runs
named with ``--run`` / started ``--since`` a date, and lists every run it saw
with why it is not pooled (incomplete, restricted to some variants, another
configuration). It shows a figure drawn like the paper's (same axes and series)
with the measured means and their 95% intervals and the published values beside
them, a table of the same numbers, and a verdict per claim with its interval
(harness/stats.py). Experiments that cannot run yet are listed with their
reason. Rendering the same stored runs twice gives byte-identical files:
nothing depends on the time of rendering, dictionaries are sorted and PNGs are
written without software or time metadata.

A report is a list of blocks (``render``), made per experiment (``experiment``) from the figures
(``figures``), the claims and their verdicts (``verdicts``, ``cores``), the pooled points' checks and
timing (``points``) and their hosts' resources (``hosts``), in the words of ``text``; ``paper``
assembles them with the fidelity section (harness/fidelity.py) and the first screen (``glance``: verdict
counts, what they were judged on, what to run next) and writes the files; ``site`` writes
``reports/index.html`` across the papers; ``render_all`` renders every paper.
"""

from .paper import render_paper
from .site import write_index

__all__ = ["render_all", "render_paper", "write_index"]


def render_all(results, reports, papers_dir=None, export=None) -> list:
    """Render every paper of the catalogue (``render_paper``) and the site's ``reports/index.html``; with
    ``export`` (a function ``(paper, results, out)``, harness/export.py's ``export_paper``), also each
    paper's export where it has stored runs. Return the report folders."""
    from pathlib import Path

    from ..catalogue import list_papers
    from ..errors import HarnessError
    outs = []
    for paper in list_papers(papers_dir):
        out = render_paper(paper, Path(results), Path(reports), papers_dir)
        if export is not None:
            try:
                export(paper, results=Path(results), out=out / "export", papers_dir=papers_dir)
            except HarnessError:  # no stored runs: nothing to export
                pass
        outs.append(out)
    write_index(Path(reports), papers_dir)
    return outs
