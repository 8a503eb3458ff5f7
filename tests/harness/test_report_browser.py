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

#: Run after the page's load event: each image's decoded width, every table's header row, whether the page
#: scrolls sideways, and where the first screen's verdict counts and "run next" command end.
PROBE = """<script>
window.addEventListener('load', () => {
  const glance = document.getElementById('at-a-glance');
  const after = (el, tag) => { for (let e = el && el.nextElementSibling; e; e = e.nextElementSibling)
    { if (e.tagName === tag) return e; } return null; };
  const counts = glance && glance.nextElementSibling, command = after(glance, 'PRE');
  const box = el => el ? {bottom: el.getBoundingClientRect().bottom, text: el.textContent} : null;
  const seen = {
    width: window.innerWidth, scroll_width: document.documentElement.scrollWidth,
    counts: box(counts), command: box(command),
    links: [...document.links].map(a => a.getAttribute('href')),
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


def seen_in_browser(report, tmp_path, size=(1280, 900)) -> dict:
    """What Chromium saw of ``report`` (an HTML file) in a window of ``size``: its images and tables, from
    PROBE. The probed copy sits beside the report, so its relative links resolve as the report's."""
    probed = report.with_name("probed-" + report.name)
    probed.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = chromium([f"--window-size={size[0]},{size[1]}", "--dump-dom", probed.as_uri()], tmp_path / "profile")
    probed.unlink()
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


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (invoke setup installs Debian's chromium)")
def test_the_first_screen_shows_the_counts_and_the_next_command_and_the_index_links_resolve(root, tmp_path):
    """Issue 36, item 7: at 1280x900 the verdict counts and the command to run next are on the first
    screen, nothing scrolls sideways, every image loads; every link of reports/index.html resolves. A
    screenshot of that first screen is kept in the test's folder (``first-screen.png``)."""
    from harness.report import render_all
    from tests.harness.test_report_glance import one_repetition_store
    results, reports = tmp_path / "results", tmp_path / "reports"
    one_repetition_store(results, root)
    page = reports / "regress" / "reference" / "bench" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body>a regression page</body></html>")
    render_all(results, reports, root / "papers")
    report = reports / "mini" / "report.html"

    seen = seen_in_browser(report, tmp_path)
    assert seen["width"] == 1280 and seen["scroll_width"] <= seen["width"], "the report scrolls sideways"
    assert [i["alt"] for i in seen["images"] if not (i["complete"] and i["width"] > 0)] == []
    assert seen["counts"] and "inconclusive" in seen["counts"]["text"] and seen["counts"]["bottom"] <= 900
    assert seen["command"] and "invoke reproduce --paper mini" in seen["command"]["text"]
    assert seen["command"]["bottom"] <= 900, f"the run-next command ends at {seen['command']['bottom']} px"
    shot = tmp_path / "first-screen.png"
    done = chromium(["--window-size=1280,900", "--hide-scrollbars", f"--screenshot={shot}", report.as_uri()],
                    tmp_path / "profile")
    assert done.returncode == 0 and shot.stat().st_size > 10_000, done.stderr[-2000:]

    index = seen_in_browser(reports / "index.html", tmp_path)
    assert index["scroll_width"] <= index["width"]
    links = [h for h in index["links"] if not h.startswith("#")]
    assert {"mini/report.html", "regress/reference/bench/index.html"} <= set(links)
    assert [h for h in links if not (reports / h).is_file()] == [], "a link of the index does not resolve"
