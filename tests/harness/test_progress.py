"""Progress output when not on a terminal: one plain line per event."""

import io

from harness.progress import Progress, clock


def test_plain_lines_and_failure_log():
    t = iter([0, 10, 20, 30, 40])
    out = io.StringIO()
    p = Progress(2, title="bench", stream=out, tty=False, now=lambda: next(t))
    p.start("a")
    p.finish("a", "complete", "throughput_tps = 3200")
    p.finish("b", "failed", "playbook failed", log="/runs/x/ansible-run.log")
    assert out.getvalue().splitlines() == [
        "bench [0/2] running a (elapsed 0:10)",
        "bench [1/2] a complete: throughput_tps = 3200 (elapsed 0:20, remaining ~0:20)",
        "bench [2/2] b failed: playbook failed (elapsed 0:30)",
        "  see /runs/x/ansible-run.log",
    ]
    assert "\r" not in out.getvalue()


def test_terminal_mode_redraws_one_line():
    out = io.StringIO()
    p = Progress(3, stream=out, tty=True, now=lambda: 0)
    p.start("a")
    assert out.getvalue().startswith("\r\x1b[2K") and not out.getvalue().endswith("\n")


def test_clock():
    assert (clock(59), clock(61), clock(3661)) == ("0:59", "1:01", "1:01:01")
