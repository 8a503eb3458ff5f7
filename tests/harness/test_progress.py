"""Progress output when not on a terminal: one plain line per event."""

import io

from harness.progress import Phase, PlaybookPhases, Progress, clock


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


LOG = """$ ansible-playbook -i inventory.yml end-to-end.yml

PLAY [Start the orderer] *******************************************************

TASK [orderer : Create the orderer working directory] **************************
ok: [orderer1]

TASK [process : Start orderer in the background] *******************************
changed: [orderer1]

PLAY [Wait until the block watcher has seen every transfer] ********************

TASK [blockwatch : Wait until every transfer has been delivered (or the watcher has exited)] ***
PROGRESS [peer1]: measuring: block 3, 300 of 2000 transfers delivered
FAILED - RETRYING: [peer1]: Wait until every transfer has been delivered (or the watcher has exited) (599 retries left).
PROGRESS [peer1]: measuring: block 4, 400 of 2000 transf"""


def test_playbook_phases_follow_the_log_as_it_is_written(tmp_path):
    """Play, role and its hosts (the inventory group of the same name), the task or a waiting task's report;
    a task of the process role stays in the role that included it; an unfinished line waits for its end."""
    log = tmp_path / "ansible-run.log"
    clock_s = iter(range(100))
    phases = PlaybookPhases(log, {"orderer": ["orderer1"], "blockwatch": ["peer1"]}, now=lambda: next(clock_s))
    assert phases.update().text == "starting (0:01)"
    lines = LOG.split("\n")
    log.write_text("\n".join(lines[:7]) + "\n")
    first = phases.update()
    assert first.text == "Start the orderer / role orderer on orderer1: Create the orderer working directory (0:01)"
    log.write_text("\n".join(lines[:10]) + "\n")
    second = phases.update()
    assert second.key == first.key and second.text.endswith(": Start orderer in the background (0:02)")
    log.write_text(LOG)
    waiting = phases.update()
    assert waiting.key != first.key and waiting.report == "measuring: block 3, 300 of 2000 transfers delivered on peer1"
    assert waiting.text.startswith("Wait until the block watcher has seen every transfer / role blockwatch on peer1: "
                                   "measuring: block 3")
    with open(log, "a") as f:
        f.write("erred\n")
    assert phases.update().report.startswith("measuring: block 4, 400 of 2000 transferred")


def test_a_role_shorter_than_the_poll_still_reaches_the_run_log(tmp_path):
    """Two plays and their roles written between two polls: each role is a phase of its own, then the last."""
    log = tmp_path / "ansible-run.log"
    log.write_text(LOG)
    phases = PlaybookPhases(log, {"orderer": ["orderer1"], "blockwatch": ["peer1"]}, now=lambda: 0)
    out = phases.updates()
    assert [p.text.split(":")[0] for p in out] == ["Start the orderer / role orderer on orderer1",
                                                  "Wait until the block watcher has seen every transfer / role blockwatch on peer1",
                                                  "Wait until the block watcher has seen every transfer / role blockwatch on peer1"]
    assert out[-1].report and phases.updates()[-1].key == out[-1].key
    t = [0.0]
    text = io.StringIO()
    p = Progress(1, stream=text, tty=False, now=lambda: t[0], log=tmp_path / "progress.log")
    p.start("a")
    for phase in out:
        p.phase("a", phase)
    logged = (tmp_path / "progress.log").read_text()
    assert "role orderer on orderer1" in logged and "role blockwatch on peer1" in logged


def test_phases_on_the_line_and_in_the_run_log(tmp_path):
    """A plain line per new play or role, a waiting task's report at most every PLAIN_EVERY_S; all in the log."""
    t = [0.0]
    out = io.StringIO()
    p = Progress(1, title="e", stream=out, tty=False, now=lambda: t[0], log=tmp_path / "progress.log")
    p.start("a")
    for t[0], phase in [(1, Phase(("p", "r"), "deploy")), (2, Phase(("p", "r"), "deploy, next task")),
                        (3, Phase(("w", "b"), "block 1", "block 1")), (5, Phase(("w", "b"), "block 2", "block 2")),
                        (14, Phase(("w", "b"), "block 9", "block 9"))]:
        p.phase("a", phase)
    assert out.getvalue().splitlines() == ["e [0/1] running a (elapsed 0:00)", "e [0/1] a (elapsed 0:01): deploy",
                                           "e [0/1] a (elapsed 0:03): block 1", "e [0/1] a (elapsed 0:14): block 9"]
    logged = (tmp_path / "progress.log").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in logged] == out.getvalue().splitlines()
    assert logged[0][:2] == "20" and logged[0][19] == "Z"  # UTC time stamps


def test_on_a_terminal_the_phase_redraws_the_line():
    out = io.StringIO()
    p = Progress(1, stream=out, tty=True, now=lambda: 0)
    p.start("a")
    p.phase("a", Phase(("p",), "teardown: Stop components (0:01)"))
    assert out.getvalue().endswith("\r\x1b[2K[0/1] a (elapsed 0:00): teardown: Stop components (0:01)")
