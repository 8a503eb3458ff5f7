"""Report blocks as Markdown and as one self-contained HTML page.

A block is a tuple: ``("h1" | "h2" | "p", text)``, ``("img", file name, PNG bytes, caption)`` or
``("table", headers, rows)``; texts may hold Markdown's ``code`` and **bold** spans, which the HTML keeps.
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
    return "\n".join(lines)


def _inline(text: str) -> str:
    """HTML of a text with Markdown's ``code`` and **bold** spans."""
    out = html.escape(str(text))
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def to_html(blocks: list[tuple], title: str) -> str:
    """Render report blocks as one self-contained HTML page (figures inlined as base64 PNG)."""
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;"
             "text-align:left}figure{margin:1em 0}figcaption{font-size:.9em;color:#444}</style>",
             "</head><body>"]
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2"):
            parts.append(f"<{kind}>{_inline(block[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "img":
            data = base64.b64encode(block[2]).decode()
            parts.append(f"<figure><img alt=\"{html.escape(block[1])}\" src=\"data:image/png;base64,{data}\">"
                         f"<figcaption>{_inline(block[3])}</figcaption></figure>")
        elif kind == "table":
            parts.append("<table><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in block[1]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in block[2]]
            parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
