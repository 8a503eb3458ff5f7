"""One way every report figure becomes PNG bytes, so that reports are byte-for-byte reproducible.

The figure modules (report, resources, regress and each paper's additions) draw with matplotlib inside
`plt.rc_context(FIGURE_RC)` and hand the figure to `png_bytes`. Fixed settings and no "Software" stamp keep
the same data rendering to the same bytes (the report tests compare renders).
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

#: Rendering settings that fix the output: dpi, font size, and the SVG hash salt (SVG ids otherwise vary).
FIGURE_RC = {"svg.hashsalt": "fabricrepro", "figure.dpi": 100, "savefig.dpi": 100, "font.size": 9}


def png_bytes(fig, *, tight_layout: bool = True) -> bytes:
    """Lay the figure out (unless the caller placed it), render it as PNG without matplotlib's version
    stamp, and close it."""
    if tight_layout:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
