"""Report blocks as Markdown and as one self-contained HTML page.

A block is a tuple: ``("h1" | "h2" | "p", text)``, ``("img", file name, PNG bytes, caption)``,
``("table", headers, rows)``, ``("pre", text)`` (a command to copy) or ``("claims", headers, rows, details,
notes)`` (one line per claim, each with its ``(label, text)`` details folded under it, and the sentences
several claims share said once as numbered notes); texts may hold Markdown's ``code`` and **bold** spans,
which the HTML keeps. In the HTML, a bold verdict is a badge whose symbol and words read without its
colour, and every ``h2`` has an ``id`` to link to.
"""

from __future__ import annotations

import base64
import html
import re


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[tuple]) -> str:
    """Render report blocks as Markdown (figures referenced by relative path)."""
    lines = []
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            lines += [f"# {block[1]}", ""]
        elif kind == "h2":
            lines += [f"## {block[1]}", ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "img":
            lines += [f"![{block[1]}]({block[1]})", "", f"*{block[3]}*", ""]
        elif kind == "table":
            headers, rows = block[1], block[2]
            lines.append("| " + " | ".join(_cell(h) for h in headers) + " |")
            lines.append("|" + "---|" * len(headers))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "pre":
            lines += ["```", block[1], "```", ""]
        elif kind == "claims":
            headers, rows, details, notes = block[1:5]
            lines.append("| " + " | ".join(_cell(h) for h in headers) + " |")
            lines.append("|" + "---|" * len(headers))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
            for i, (row, items) in enumerate(zip(rows, details), 1):
                lines.append(f"{i}. {row[1] if len(row) > 1 else row[0]}: "
                             + "; ".join(f"{label}: {text}" for label, text in items))
            lines += [""] + [f"[{i}] {note}" for i, note in enumerate(notes, 1)] + ([""] if notes else [])
    return "\n".join(lines)


#: A verdict's badge: a symbol and the words, so that it reads the same without its colour.
BADGES = {"reproduced": ("✓", "ok"), "not reproduced": ("✗", "bad"), "inconclusive": ("?", "open"),
          "not comparable": ("–", "na")}


def badge(verdict: str) -> str:
    """The HTML badge of a verdict (its words and symbol, the colour a third cue)."""
    symbol, cls = BADGES[verdict]
    return f'<strong class="v v-{cls}">{symbol} {html.escape(verdict)}</strong>'


def _bold(match: re.Match) -> str:
    text = match.group(1)
    return badge(text) if text in BADGES else f"<strong>{text}</strong>"


def _inline(text: str) -> str:
    """HTML of a text with Markdown's ``code`` and **bold** spans (a bold verdict as its badge) and
    ``[N](#anchor)`` links."""
    out = html.escape(str(text))
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\[([^\]]+)\]\((#[\w-]+)\)", r'<a href="\2">\1</a>', out)
    return re.sub(r"\*\*([^*]+)\*\*", _bold, out)


def slug(text: str) -> str:
    """An ``id`` for a heading: lower case words joined by ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "section"


#: Fits 1280 px and narrower without scrolling sideways: cells break long words, a table wider than the
#: page scrolls inside its own box, figures shrink.
STYLE = ("body{font-family:sans-serif;max-width:72em;margin:1.5em auto;padding:0 1em;line-height:1.35}"
         ".wide{overflow-x:auto;max-width:100%}"
         "table{border-collapse:collapse;margin:1em 0;max-width:100%}"
         "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top;overflow-wrap:anywhere}"
         "figure{margin:1em 0}img{max-width:100%;height:auto}figcaption{font-size:.9em;color:#444}"
         "pre{background:#f4f4f4;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere}"
         ".v{display:inline-block;padding:0 .4em;border-radius:.3em;border:1px solid;white-space:nowrap}"
         ".v-ok{background:#dff3df;color:#14521a}.v-bad{background:#fbe0de;color:#8a1a12}"
         ".v-open{background:#fff1cc;color:#6b4b00}.v-na{background:#eee;color:#444}"
         "table.claims{width:100%;table-layout:fixed}table.claims tr.more td{border-top:none;font-size:.9em}"
         "details summary{cursor:pointer;color:#345}ol.notes{font-size:.9em}")


def _claims_html(headers, rows, details, notes, widths=None) -> list[str]:
    cols = "".join(f'<col style="width:{w}">' for w in widths or [])
    parts = [f'<table class="claims"><colgroup>{cols}</colgroup><tr>'
             + "".join(f"<th>{_inline(h)}</th>" for h in headers) + "</tr>"]
    for row, items in zip(rows, details):
        parts.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
        if items:
            parts.append(f'<tr class="more"><td colspan="{len(headers)}"><details><summary>'
                         + ", ".join(html.escape(label) for label, _ in items) + "</summary><dl>"
                         + "".join(f"<dt>{html.escape(label)}</dt><dd>{_inline(text)}</dd>" for label, text in items)
                         + "</dl></details></td></tr>")
    parts.append("</table>")
    if notes:
        parts.append('<ol class="notes">' + "".join(f'<li id="note-{i}">{_inline(n)}</li>'
                                                     for i, n in enumerate(notes, 1)) + "</ol>")
    return parts


def to_html(blocks: list[tuple], title: str) -> str:
    """Render report blocks as one self-contained HTML page (figures inlined as base64 PNG)."""
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(title)}</title>",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<style>{STYLE}</style>",
             "</head><body>"]
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            parts.append(f"<h1>{_inline(block[1])}</h1>")
        elif kind == "h2":
            parts.append(f'<h2 id="{slug(block[1])}">{_inline(block[1])}</h2>')
        elif kind == "pre":
            parts.append(f"<pre>{html.escape(block[1])}</pre>")
        elif kind == "claims":
            parts += _claims_html(*block[1:5], widths=block[5] if len(block) > 5 else None)
        elif kind == "p":
            parts.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "img":
            data = base64.b64encode(block[2]).decode()
            parts.append(f"<figure><img alt=\"{html.escape(block[1])}\" src=\"data:image/png;base64,{data}\">"
                         f"<figcaption>{_inline(block[3])}</figcaption></figure>")
        elif kind == "table":
            parts.append('<div class="wide"><table><tr>' + "".join(f"<th>{_inline(h)}</th>" for h in block[1]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in block[2]]
            parts.append("</table></div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
