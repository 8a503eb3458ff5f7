"""The HTML report checked in a real browser (issue 23, item 5): a report rendered from a run store
of TEST DOUBLES (test_pooling's ``make_run``: fixture runs written directly, nothing deployed) is
loaded in headless Chromium (Debian's ``chromium``, installed by ``invoke setup``), which must decode
every figure and show the paper's claims table.

The page is opened from a file:// URL, so no server runs. A copy of the report carries a small
script that, once the page has loaded, writes what the browser saw into the DOM, and Chromium's
``--dump-dom`` hands that DOM back.
"""

import json
import re
import shutil
import subprocess

import pytest

from harness.report import render_paper
from tests.harness.test_pooling import _equal_speed, make_run

CHROMIUM = shutil.which("chromium")

#: Run after the page's load event: each image's decoded width and every table's header row.
PROBE = """<script>
window.addEventListener('load', () => {
  const seen = {
    images: [...document.images].map(i => ({alt: i.alt, width: i.naturalWidth, complete: i.complete})),
    tables: [...document.querySelectorAll('table')].map(t => ({
      heading: (t.previousElementSibling && /^H[12]$/.test(t.previousElementSibling.tagName))
        ? t.previousElementSibling.textContent : null,
      headers: [...t.querySelectorAll('th')].map(th => th.textContent),
      rows: t.rows.length - 1})),
  };
  const out = document.createElement('pre');
  out.id = 'browser-check';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
});
</script>"""


def chromium(args: list[str], profile, timeout: int = 120) -> subprocess.CompletedProcess:
    """Headless Chromium with no network of its own (no sandbox: tests may run as root)."""
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def seen_in_browser(report, tmp_path) -> dict:
    """What Chromium saw of ``report`` (an HTML file): its images and tables, from PROBE."""
    probed = tmp_path / "probed.html"
    probed.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = chromium(["--dump-dom", probed.as_uri()], tmp_path / "profile")
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="browser-check">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the probe did not run; Chromium printed: {done.stdout[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (invoke setup installs Debian's chromium)")
def test_every_figure_loads_and_the_claims_table_is_shown(root, tmp_path):
    results = tmp_path / "results"
    for name, started in (("run-a", "2026-01-01T00:00:00Z"), ("run-b", "2026-01-02T00:00:00Z")):
        make_run(results, root, name, _equal_speed([100, 102, 98], [50, 51, 49]), started=started)
    out = render_paper("mini", results, tmp_path / "reports", root / "papers")

    seen = seen_in_browser(out / "report.html", tmp_path)

    assert seen["images"], "the report has no figure"
    assert [i["alt"] for i in seen["images"] if not (i["complete"] and i["width"] > 0)] == []
    claims = [t for t in seen["tables"] if t["heading"] == "Claims"]
    assert len(claims) == 1, seen["tables"]
    assert "verdict" in claims[0]["headers"] and claims[0]["rows"] > 0


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (invoke setup installs Debian's chromium)")
def test_a_broken_figure_is_caught(tmp_path):
    """The check itself: an image the browser cannot decode reads as not loaded."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><img alt="broken" src="data:image/png;base64,AAAA"></body></html>')
    assert seen_in_browser(page, tmp_path)["images"] == [{"alt": "broken", "width": 0, "complete": True}]
