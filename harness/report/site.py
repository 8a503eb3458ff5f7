"""``reports/index.html``: every paper of the catalogue with its verdict counts, the date and build of the
runs behind them, and links to its report, its export and the regression pages (``reports/regress/...``).
Made from each rendered paper's ``glance.json`` (harness/report/glance.py), so rendering one paper rewrites
the index with the others as last rendered. Static files with relative links only: it opens from file://
and from any static host."""

from __future__ import annotations

import html
from pathlib import Path

from ..catalogue import list_papers
from ..errors import HarnessError
from ..rundir import read_json
from .glance import VERDICTS
from .render import STYLE, badge

#: The export's files (harness/export.py) the index links where they exist.
EXPORT_FILES = ("claims.csv", "measurements.csv", "claims.parquet", "measurements.parquet")


def _link(href: str, text: str) -> str:
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'


def regress_pages(reports: Path) -> list[Path]:
    """The regression pages under ``reports/regress`` (``<system>/<experiment>/index.html``), relative."""
    root = Path(reports) / "regress"
    return sorted(p.relative_to(reports) for p in root.glob("**/index.html")) if root.is_dir() else []


def _runs_text(runs: list[dict]) -> str:
    if not runs:
        return "no stored run"
    dates = sorted(r["started_utc"] for r in runs if r.get("started_utc"))
    span = (dates[0][:10] if dates[0][:10] == dates[-1][:10] else f"{dates[0][:10]} to {dates[-1][:10]}") if dates else "–"
    builds = sorted({r["build"] for r in runs})
    return f"{len(runs)} run(s), {span} (UTC); " + "; ".join(html.escape(b) for b in builds)


def index_html(reports: Path, papers: list[str]) -> str:
    """The index page's HTML."""
    reports = Path(reports)
    rows = []
    for paper in papers:
        glance = reports / paper / "glance.json"
        try:
            facts = read_json(glance) if glance.is_file() else None
        except HarnessError:  # written by another version of the harness: render the paper again
            facts = None
        links = []
        if (reports / paper / "report.html").is_file():
            links.append(_link(f"{paper}/report.html", "report"))
        if (reports / paper / "report.md").is_file():
            links.append(_link(f"{paper}/report.md", "Markdown"))
        exported = [_link(f"{paper}/export/{name}", name) for name in EXPORT_FILES
                    if (reports / paper / "export" / name).is_file()]
        links += ["export: " + ", ".join(exported)] if exported else []
        if facts is None:
            counts = "not rendered yet (<code>invoke report --paper " + html.escape(paper) + "</code>)"
            runs = "–"
            title = paper
        else:
            tally = facts.get("counts") or {}
            counts = " · ".join(f'<span class="count">{(tally.get(v) or {}).get("n", 0)}&nbsp;{badge(v)}</span>'
                                for v in VERDICTS)
            nexts = facts.get("next") or []
            if nexts:
                counts += "<br>run next: " + "<br>".join(f"<code>{html.escape(n['command'])}</code>" for n in nexts)
            runs = _runs_text(facts.get("runs") or [])
            title = facts.get("title") or paper
            if facts.get("selected"):
                runs += " (only the runs named with --run/--since)"
        rows.append(f"<tr><td><strong>{html.escape(paper)}</strong><br>{html.escape(title)}</td><td>{counts}</td>"
                    f"<td>{runs}</td><td>{' · '.join(links) or '–'}</td></tr>")
    regress = regress_pages(reports)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>fabricrepro: verdicts across the papers</title>",
             f"<style>{STYLE}.count{{white-space:nowrap;display:inline-block;margin:.1em 0}}</style>", "</head><body>",
             "<h1>Verdicts across the papers</h1>",
             "<p>Each paper's claims as judged from its stored runs (<code>invoke report</code> renders them all; "
             "verdicts: docs/catalogue.md, \"How a claim is judged\").</p>",
             '<div class="wide"><table id="papers"><tr><th>paper</th><th>verdicts</th><th>runs behind them '
             "(started, build)</th><th>links</th></tr>", *rows, "</table></div>",
             '<h2 id="regressions">Regression pages</h2>']
    if regress:
        parts.append("<ul>" + "".join(f"<li>{_link(p.as_posix(), p.parent.as_posix().removeprefix('regress/'))}</li>"
                                      for p in regress) + "</ul>")
    else:
        parts.append("<p>None yet (<code>invoke regress</code>, docs/regress.md).</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_index(reports: Path, papers_dir: Path | None = None) -> Path:
    """Write ``reports/index.html`` for every paper of the catalogue; return its path."""
    path = Path(reports) / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(index_html(Path(reports), list_papers(papers_dir)), encoding="utf-8")
    return path
