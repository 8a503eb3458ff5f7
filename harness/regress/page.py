"""The page and the printed summary of ``invoke regress``, and another system's series shown beside them."""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

from ..errors import HarnessError
from ..rundir import read_json
from .build import REFERENCE
from .lines import ordering_name


def playbook_of(system: str, driver: str, systems_dir: Path | None = None) -> str | None:
    """The playbook that runs ``driver`` for ``system``'s upstream build (None for the reference build)."""
    from ..builds import upstream_driver
    return (upstream_driver(system, driver, systems_dir) or {}).get("playbook") if system != REFERENCE else None


def beside_series(folder: Path, doc: dict, systems_dir: Path | None = None) -> dict:
    """Another system's series of the same experiment (``folder``'s regress.json), to be shown beside ``doc``.

    A system's upstream driver of an experiment is its own deployment and
    client (e.g. FastFabric's published broadcast client and deliver client
    against Fabric's network driven by our load generator), so its values are
    shown side by side, commit by commit, and not tested against this series:
    a ratio between two drivers' metrics is no like-for-like comparison.
    """
    if not (folder / "regress.json").is_file():
        raise HarnessError(f"--beside {folder}: no regress.json (make that page first with invoke regress)")
    other = read_json(folder / "regress.json")
    if (other["paper"], other["experiment"]) != (doc["paper"], doc["experiment"]):
        raise HarnessError(f"--beside {folder}: a page of {other['paper']}:{other['experiment']}, not "
                           f"{doc['paper']}:{doc['experiment']}")
    driver = other.get("driver") or doc["driver"]  # the experiment's driver: pages made before it was recorded
    keep = ("sha", "short", "ref", "subject", "values", "median", "low", "high", "coverage", "not_measurable",
            "runs", "patches", "vs_previous")
    return {"page": str(folder), "system": other["system"], "variant": other.get("variant"),
            "metric": other["metric"], "repository": other.get("repository"), "commits_spec": other["commits_spec"],
            "driver": driver, "playbook": playbook_of(other["system"], driver, systems_dir),
            "own_playbook": playbook_of(doc["system"], doc["driver"], systems_dir),
            "commits": [{k: r[k] for k in keep if k in r} for r in other["commits"]]}


def _figure(doc: dict) -> bytes:
    # matplotlib only when a page is drawn: the rest of regress runs without it.
    from ..figure_png import png_bytes
    import matplotlib.pyplot as plt

    rows = doc["commits"]
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(rows) + 2), 3.4))
    ok = [i for i, r in enumerate(rows) if not r.get("not_measurable")]
    for i in ok:
        ax.scatter([i] * len(rows[i]["values"]), rows[i]["values"], s=12, color="tab:blue", alpha=0.6)
    ax.errorbar(ok, [rows[i]["median"] for i in ok],
                yerr=[[rows[i]["median"] - rows[i]["low"] for i in ok], [rows[i]["high"] - rows[i]["median"] for i in ok]],
                color="tab:blue", capsize=3, label="median and its interval")
    changed = [i for i in ok if rows[i]["sha"] in doc["change_points"]
               or rows[i]["sha"] == (doc.get("bisect") or {}).get("first_changed")]
    ax.scatter(changed, [rows[i]["median"] for i in changed], s=120, facecolors="none", edgecolors="tab:red",
               label="change point", zorder=3)
    for i, r in enumerate(rows):
        if r.get("boundary"):  # between this row and the measured one before it: no comparison across
            ax.axvline(i - 0.5, color="tab:gray", linestyle="--", linewidth=1)
    lost = [i for i, r in enumerate(rows) if r.get("not_measurable")]
    if lost:
        ax.scatter(lost, [ax.get_ylim()[0]] * len(lost), marker="x", color="tab:gray", label="not measurable",
                   clip_on=False)
    ax.set_xticks(range(len(rows)), [r.get("ref") or r["short"][:7] for r in rows], rotation=45, ha="right",
                  fontsize=7)
    ax.set_ylabel(doc["metric"])
    ax.legend(fontsize=7)
    return png_bytes(fig)


def _effect(vs: dict) -> str:
    e = vs.get("effect") or {}
    if e.get("ratio") is None:
        return ""
    if e.get("low") is None:
        return f"×{e['ratio']:.3f} ({e.get('why', 'no interval')})"
    return f"×{e['ratio']:.3f} [{e['low']:.3f}, {e['high']:.3f}] ({e['coverage']:.1%})"


def _false_positive_text(doc: dict) -> str:
    fp = doc.get("false_positives")
    if "false_positive_rate" in doc:
        return (f"Repeated runs of one commit: of {len(doc['noise_pairs'])} pairs of batches, "
                f"{sum(p.get('flagged', False) for p in doc['noise_pairs'])} flagged by the first test "
                f"(rate {doc['flagged_rate']:.2f}), {sum(p['changed'] for p in doc['noise_pairs'])} still called "
                f"after the alternating re-measurement (false-positive rate {doc['false_positive_rate']:.2f}).")
    if fp:
        return (f"False-positive rate of this test for {doc['system']} / {doc['experiment']} on this machine: "
                f"{fp['false_positive_rate']:.2f} ({fp['called']} of {fp['pairs']} pairs of batches of one commit, "
                f"<code>{fp['commit'][:10]}</code>, called; {fp['flagged']} flagged by the first test), measured "
                f"with --batches {fp['batches']} x {fp['repeat']} points at scale {fp['scale']} on "
                f"{fp['measured_at']}.")
    return (f"False-positive rate of this test for {doc['system']} / {doc['experiment']}: not measured yet "
            f"(<code>invoke regress --system {doc['system']} --experiment {doc['paper']}:{doc['experiment']} "
            + (f"--variant {doc['variant']} " if doc.get("variant") else "")
            + (f"--metric {doc['metric']} " if doc.get("metric_option") else "")
            + "--commits &lt;commit&gt; --batches 4</code>).")


def _patches_text(row: dict, why: bool = False) -> str:
    """What became of each patch of the series at this commit: applied, skipped or already in upstream."""
    return "; ".join(f"{p['name'].split('-', 1)[0]} {p['status']}" + (f" ({p['why']})" if why and p.get("why") else "")
                     for p in row.get("patches") or [])


def _value_text(row: dict | None) -> str:
    """One commit's sample in a cell or a line: its median with the interval and n, or why there is none."""
    if row is None:
        return "not in this series"
    if row.get("not_measurable"):
        return f"not measurable: {row['not_measurable']}"
    return f"{row['median']:.4g} [{row['low']:.4g}, {row['high']:.4g}] ({row['coverage']:.1%}), n={len(row['values'])}"


def side_by_side(doc: dict) -> list[tuple[str, dict | None, dict | None]]:
    """(name, this series' row, the other's row) per commit: this series' order, then the other's own commits."""
    other = {r["sha"]: r for r in doc["beside"]["commits"]}
    ours = {r["sha"] for r in doc["commits"]}
    return ([(r.get("ref") or r["short"], r, other.get(r["sha"])) for r in doc["commits"]]
            + [(r.get("ref") or r["short"], None, r) for r in doc["beside"]["commits"] if r["sha"] not in ours])


def _beside_note(doc: dict) -> str:
    b = doc["beside"]
    return (f"{b['system']} ({b.get('variant') or 'reference build'}, {b['metric']}, driver {b['driver']}: "
            f"{b.get('playbook')}) beside {doc['system']} ({doc.get('variant') or 'reference build'}, "
            f"{doc['metric']}, driver {doc['driver']}: {b.get('own_playbook')}). Each system runs its own "
            "deployment and client for this experiment, so the two columns are not a like-for-like ratio "
            "and no test compares them; each column's own comparisons are on its page.")


def segment_text(row: dict) -> str:
    """Where a commit was measured: its system, variant, ordering service and release."""
    seg = row.get("segment") or {}
    if not seg:
        return ""
    return (f"{seg['system']}" + (f", {seg['variant']}" if seg.get("variant") else "")
            + (f", {ordering_name(seg['ordering_service'])}" if seg.get("ordering_service") else "")
            + (f", release {row['release']}" if row.get("release") else ""))


def _commit_rows(doc: dict, out: Path) -> tuple[list[str], list[str]]:
    """The table's row per commit, and once per commit its details: message, diff stat and patches; a
    boundary's row before the commit after it."""
    esc = html.escape
    rows, details, seen = [], [], set()
    for r in doc["commits"]:
        anchor = f"c-{r['short']}"
        name = f"<a href=\"#{anchor}\"><code>{esc(r.get('ref') or r['short'])}</code></a>"
        if r.get("boundary"):
            b = r["boundary"]
            rows.append(f"<tr class=boundary><td colspan=12>boundary: {esc(b['why'])} ("
                        + esc("; ".join(f"{k} {x} → {y}" for k, (x, y) in b["changes"].items())) + ")</td></tr>")
        where = esc(segment_text(r))
        if r.get("not_measurable"):
            rows.append(f"<tr class=lost><td>{name}</td><td>{esc(r['subject'])}</td><td>{where}</td>"
                        f"<td colspan=9>not measurable: {esc(r['not_measurable'])}</td></tr>")
        else:
            vs = r.get("vs_previous") or r.get("vs_first") or {}
            verdict = ("yes" if vs.get("changed") else "flagged, not confirmed" if vs.get("flagged") else
                       "not compared" if r.get("boundary") else "")
            links = " ".join(f'<a href="{esc(os.path.relpath(p, out))}/summary.json">{esc(Path(p).name)}</a>'
                             for p in r["runs"])
            rows.append(f"<tr{' class=changed' if vs.get('changed') else ''}><td>{name}</td>"
                        f"<td>{esc(r['subject'])}</td><td>{where}</td><td>{len(r['values'])}</td><td>{r['median']:.4g} "
                        f"[{r['low']:.4g}, {r['high']:.4g}] ({r['coverage']:.1%})</td>"
                        f"<td>{vs.get('p', '')}</td><td>{format(vs['relative_change'], '+.1%') if vs else ''}</td>"
                        f"<td>{esc(_effect(vs))}</td><td>{verdict}</td><td>{esc(_patches_text(r))}</td>"
                        f"<td>{esc(r.get('evidence') or 'not recorded')}</td><td>{links}</td></tr>")
        if r["sha"] not in seen:
            seen.add(r["sha"])
            details.append(f"<details id=\"{anchor}\"><summary><code>{esc(r['sha'])}</code>"
                           f"{' (' + esc(r['ref']) + ')' if r.get('ref') else ''} {esc(r['subject'])}</summary>"
                           + (f"<p>Patches: {esc(_patches_text(r, why=True))}</p>" if r.get("patches") else "")
                           + f"<pre>{esc(r.get('message', ''))}\n\n{esc(r.get('diffstat', ''))}</pre></details>")
    return rows, details


def _notes(doc: dict, out: Path) -> str:
    """The paragraphs above the figure: the false-positive rate, the bisection and the re-measurements that
    confirmed its steps, the series beside this one, and how many commits are not measurable."""
    esc = html.escape
    extra = f"<p>{_false_positive_text(doc)}</p>"
    bisect = doc.get("bisect")
    if bisect:
        first = bisect.get("first_changed")
        extra += (f"<p>Bisect: first changed commit <code>{esc(first[:10]) if first else 'none'}</code>"
                  + (f" ({esc(bisect['why'])})" if bisect.get("why") else "") + ".</p>")
        for r in doc["commits"]:
            conf = (r.get("vs_first") or {}).get("confirmation")
            if conf and "values_before" in conf:
                extra += (f"<p>Re-measurement of <code>{esc(r['short'])}</code> against the first commit, "
                          f"alternating point by point: p {conf['p']}, change {conf['relative_change']:+.1%}, "
                          f"effect {esc(_effect(conf))}: {'confirmed' if r['vs_first']['changed'] else 'not confirmed'}"
                          ".</p>")
    if doc.get("beside"):
        b = doc["beside"]
        cells = "".join(f"<tr><td><code>{esc(name)}</code></td><td>{esc(_value_text(ours))}</td>"
                        f"<td>{esc(_value_text(theirs))}</td></tr>" for name, ours, theirs in side_by_side(doc))
        extra += (f"<h2>Beside it: {esc(b['system'])}</h2><p>{esc(_beside_note(doc))} Its page: "
                  f"<a href=\"{esc(os.path.relpath(b['page'], out))}/index.html\">{esc(Path(b['page']).name)}</a> "
                  f"({esc(b['commits_spec'])}{', ' + esc(b['repository']) if b.get('repository') else ''}).</p>"
                  f"<table><tr><th>commit</th><th>{esc(doc['system'])}: {esc(doc['metric'])}</th>"
                  f"<th>{esc(b['system'])}: {esc(b['metric'])}</th></tr>{cells}</table>")
    if doc.get("lines"):
        extra += ("<p>Across release lines: each commit is built with the recipe of the system whose release "
                  "lines cover its release (" + esc("; ".join(f"{s}: {', '.join(ls)}" for s, ls in doc["lines"].items()))
                  + ") and measured with the experiment's variant of that system.</p>")
    if doc.get("boundaries"):
        extra += (f"<p>{len(doc['boundaries'])} boundary(ies): where the system, variant, driver or ordering service "
                  "changes between two measured commits, no test compares them (a boundary row in the table); "
                  "bisection never crosses one.</p>")
    if (doc.get("bisect") or {}).get("boundary"):
        extra += f"<p>Bisect refused: {esc(doc['bisect']['why'])}.</p>"
    lost = doc.get("not_measurable") or {}
    if lost:
        extra += f"<p>{len(lost)} commit(s) not measurable (reasons in the table); comparisons and bisection skip them.</p>"
    return extra


def render_html(doc: dict, out: Path) -> str:
    """One self-contained page: the series with intervals, the change points, the commits not measurable
    and why, each commit's message and diff stat, and a row per commit linking to its runs."""
    esc = html.escape
    rows, details = _commit_rows(doc, out)
    extra = _notes(doc, out)
    png = base64.b64encode(_figure(doc)).decode()
    title = (f"{doc['system']} build" + (f", variant {doc['variant']}" if doc.get("variant") else "")
             + (f" (by release line: {', '.join(doc['lines'])})" if doc.get("lines") else ""))
    return f"""<!doctype html><meta charset="utf-8"><title>regress {esc(doc['experiment'])}</title>
<style>body{{font-family:sans-serif;max-width:70em}} td,th{{padding:2px 8px;border-bottom:1px solid #ddd}}
tr.changed{{background:#fdd}} tr.lost{{color:#777}} tr.boundary td{{border-top:2px dashed #888;font-style:italic}}</style>
<h1>{esc(title)}: {esc(doc['paper'])} / {esc(doc['experiment'])}</h1>
<p>{esc(doc['metric'])} per commit ({esc(doc['commits_spec'])}{', ' + esc(doc['repository']) if doc.get('repository') else ''}),
{doc['repeat']} points per commit at scale {esc(doc['scale'])} on {doc['cores']} cores (load average
{doc['load_average_start'][0]:.2f} at start, {doc['load_average_end'][0]:.2f} at end). Change test: {esc(doc['test'])};
each commit against the one before it that was measured, where both are of one system, variant, driver and
ordering service (else a boundary: not compared; bisect: against the first). At least
{doc['min_points']} points per commit are needed for the test to reach alpha {doc['alpha']}. Intervals: the
median's order statistics, and the ratio's Hodges–Lehmann interval, each with the coverage its sample size
reaches (nominal {doc['level']:.0%}). Evidence: what each commit's counts rest on (docs/validity.md); regress runs no
control point, so no measurement here is "reproduced"-grade: <code>invoke reproduce</code> runs a build's controls.</p>
{extra}<figure><img alt="series" src="data:image/png;base64,{png}"></figure>
<table><tr><th>commit</th><th>subject</th><th>measured with</th><th>n</th><th>median [interval]</th><th>p</th><th>relative change</th>
<th>ratio [interval]</th><th>change</th><th>patches</th><th>evidence (counts; control)</th><th>runs</th></tr>
{''.join(rows)}</table>
<h2>Commits</h2>
{''.join(details)}
"""


def main_summary(doc: dict) -> str:
    """The lines ``invoke regress`` prints at the end."""
    lines = [f"test: {doc['test']}"]
    if doc.get("lines"):
        lines.append("release lines: " + "; ".join(f"{s} {', '.join(ls)}" for s, ls in doc["lines"].items()))
    for r in doc["commits"]:
        name = (r.get("ref") or r["short"]) + (f"  ({segment_text(r)})" if doc.get("lines") and r.get("segment") else "")
        if r.get("boundary"):
            lines.append(f"--- boundary: {r['boundary']['why']}")
        if r.get("not_measurable"):
            lines.append(f"{name}  not measurable: {r['not_measurable']}")
            continue
        vs = r.get("vs_previous") or r.get("vs_first") or {}
        lines.append(f"{name}  median {r['median']:.4g} [{r['low']:.4g}, {r['high']:.4g}]  n={len(r['values'])}"
                     + (f"  p={vs['p']:.3g} change {vs['relative_change']:+.1%} {_effect(vs)}"
                        f"{'  CHANGED' if vs['changed'] else ''}"
                        + ("  flagged, not confirmed" if vs.get("flagged") and not vs["changed"] else "")
                        if vs else "")
                     + (f"  patches: {_patches_text(r)}" if r.get("patches") else ""))
    if "false_positive_rate" in doc:
        lines.append(f"flagged by the first test over {len(doc['noise_pairs'])} pairs: {doc['flagged_rate']:.2f}; "
                     f"false-positive rate over {len(doc['noise_pairs'])} pairs: {doc['false_positive_rate']:.2f}")
    elif doc.get("false_positives"):
        fp = doc["false_positives"]
        lines.append(f"false-positive rate (--batches {fp['batches']} on {fp['measured_at']}): "
                     f"{fp['false_positive_rate']:.2f} over {fp['pairs']} pairs")
    if doc.get("beside"):
        lines.append(f"beside it: {_beside_note(doc)}")
        lines += [f"{name}  {doc['system']}: {_value_text(ours)}  |  {doc['beside']['system']}: {_value_text(theirs)}"
                  for name, ours, theirs in side_by_side(doc)]
    if doc.get("bisect"):
        b = doc["bisect"]
        lines.append(f"first changed commit: {b.get('first_changed') or 'none'}"
                     + (f" ({b['why']})" if b.get("why") else ""))
    return "\n".join(lines)
