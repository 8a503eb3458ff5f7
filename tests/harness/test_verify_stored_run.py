"""``invoke verify`` fails closed (issue 31): on a copy of a stored run where evidence was removed, cut or
altered, the re-check fails the point and names the cause; the untouched copy passes (positive control).

Two real smoke runs of the reference build (this repository's Go commands in bin/, no test double), each
with its control point: FastFabric's Fig. 5 on Fabric 1.2's committer benchmark (pre-made blocks, a timed
section, a kept ledger) and Table I's end-to-end network (orderer, peer, block watcher, load generator;
blocks of 50). They are the runs of labs 01 and 02 (their documented ``invoke reproduce`` commands), made
once per session by the fixture ``lab_run`` (tests/conftest.py), whose test tests/labs/test_labs.py reads
them too. Each case copies a stored run and tampers with one file, as someone editing a shared run would.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness import REPO_ROOT, ledger
from harness.verify import recheck_point, verify_run

NEEDED = ["blockfile", "committerbench", "cryptogen", "configtxgen", "orderer", "peer", "blockwatch", "loadgen"]
_missing = [c for c in NEEDED if not (REPO_ROOT / "bin" / c).is_file()]

# network: Table I's orderer and peer listen on the catalogue's fixed ports
pytestmark = [pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook"),
              pytest.mark.skipif(bool(_missing), reason=f"bin/ lacks {', '.join(_missing)} (invoke build)"),
              pytest.mark.network]


#: The stored runs, by what they run: the committer benchmark (lab 01) and the end-to-end network (lab 02).
BENCH, NETWORK = "fig5-peer-block-latency", "table1-end-to-end"


@pytest.fixture(scope="module")
def stored(lab_run, request) -> dict[str, Path]:
    """The two stored runs' directories, by experiment: those of labs 01 and 02 (tests/conftest.py)."""
    # the labs' commands start networks, and a module's fixture runs before the test takes the network lock
    where = {BENCH: lab_run("01", config=request.config)[0], NETWORK: lab_run("02", config=request.config)[0]}
    runs = {}
    for experiment, base in where.items():
        (run,) = [p for p in (base / "results" / "fastfabric" / experiment).glob("2*") if not p.is_symlink()]
        meta = json.loads((run / "metadata.json").read_text())
        # what the cases below rely on, should a lab's command change: the reference build, a control point
        assert meta["build"]["kind"] == "reference" and meta["status"] == "complete", (run, meta.get("reason"))
        assert sorted(p.name.startswith("control__") for p in (run / "points").iterdir()) == [False, True], run
        runs[experiment] = run
    return runs


def copy_point(stored: dict[str, Path], experiment: str, tmp_path: Path) -> Path:
    """A copy of the stored run; its one measured point's directory (not its control point)."""
    run = shutil.copytree(stored[experiment], tmp_path / "run", symlinks=True)
    (point,) = sorted(p for p in (run / "points").iterdir() if not p.name.startswith("control__"))
    return point


def failure(point: Path) -> str:
    result = recheck_point(point)
    assert not result["passed"], "the tampered copy passed"
    return "\n".join(result["reasons"])


def test_the_untouched_runs_and_the_control_pass(stored):
    for experiment in (NETWORK, BENCH):
        results = verify_run(stored[experiment])
        assert [(r["point"].startswith("control__"), r["passed"]) for r in results] == [(True, True), (False, True)], results
        control = json.loads((stored[experiment] / "points" / results[0]["point"] / "summary.json").read_text())
        section = control["validity"]["control"]
        assert section["status"] == "passed" and section["planned"] == ["bad_creator", "bad_endorsement", "stale_read"]
        # every planned kind was corrupted, and the ledger marks exactly those that reached it invalid
        assert all(section["corrupted"][k] > 0 for k in section["planned"])
        assert section["ledger_invalid"] == sum(section["corrupted"].values()) - section["refused_at_broadcast"]
        assert all(v["status"] == "agreed" for v in control["validity"]["verifier"])

    # The network's control: the endorsements the load generator says it forged (its stderr, "forged <txid>",
    # cmd/loadgen) are its mutations.csv's bad endorsements and exactly the kept ledger's
    # ENDORSEMENT_POLICY_FAILUREs (the peer's ledger decoded by bin/blockfile).
    (point,) = (stored[NETWORK] / "points").glob("control__*")
    forged = {line.split()[1] for log in point.glob("logs/*/loadgen*.log")
              for line in log.read_text().splitlines() if line.startswith("forged ")}
    mutations = pd.read_csv(point / "raw" / "localhost" / "mutations.csv", dtype={"tx_id": str})
    codes = ledger.agreed_codes(ledger.kept_ledgers(point, REPO_ROOT / "bin" / "blockfile"))[0]
    refused = set(codes.loc[codes["validation_code"] == "ENDORSEMENT_POLICY_FAILURE", "tx_id"])
    assert forged and forged == set(mutations.loc[mutations["mutation"] == "bad_endorsement", "tx_id"]) == refused


def test_a_control_the_checks_do_not_find_fails(stored, tmp_path):
    """Negative control of the control: a control point whose ledger shows fewer invalid transactions than
    the driver corrupted (here: the mutation log lists one transfer more) fails."""
    run = shutil.copytree(stored[BENCH], tmp_path / "run", symlinks=True)
    (control,) = (run / "points").glob("control__*")
    path = control / "raw" / "localhost" / "mutations.csv"
    rows = pd.read_csv(path)
    codes = pd.read_csv(path.parent / "blocks.csv")
    extra = rows.iloc[[0]].assign(tx_index=(rows["tx_index"].iloc[0] + 1) % int(codes["tx_count"].iloc[0]))
    pd.concat([rows, extra]).to_csv(path, index=False)
    text = "\n".join(recheck_point(control)["reasons"])
    assert "have another code than planned" in text or "the ledger marks" in text, text


def test_deleted_block_files_fail(stored, tmp_path):
    point = copy_point(stored, BENCH, tmp_path)
    shutil.rmtree(point / "raw" / "localhost" / "blocks")
    assert "no kept block files of committerbench on host localhost" in failure(point)


@pytest.mark.parametrize("how", ["deleted", "emptied", "header only"])
def test_deleted_or_emptied_block_txs_fail(stored, tmp_path, how):
    point = copy_point(stored, NETWORK, tmp_path)
    path = point / "raw" / "localhost" / "block_txs.csv"
    if how == "deleted":
        path.unlink()
    else:
        path.write_text("" if how == "emptied" else path.read_text().splitlines()[0] + "\n")
    assert "the point has no block_txs rows" in failure(point)


def test_a_truncated_block_file_fails(stored, tmp_path):
    point = copy_point(stored, BENCH, tmp_path)
    (blockfile,) = point.glob("raw/localhost/blocks/committerbench/*/blockfile_*")
    data = blockfile.read_bytes()
    blockfile.write_bytes(data[:len(data) * 2 // 3])
    assert "cut record" in failure(point)


def test_altered_driver_counts_fail(stored, tmp_path):
    point = copy_point(stored, BENCH, tmp_path)
    path = point / "raw" / "localhost" / "blocks.csv"
    blocks = pd.read_csv(path)
    blocks.loc[3, "valid_count"] += 1
    blocks.to_csv(path, index=False)
    text = failure(point)
    assert "the driver's block log on host localhost counts" in text and f"first block {blocks.loc[3, 'block_number']}" in text


def test_a_block_on_one_side_only_fails(stored, tmp_path):
    point = copy_point(stored, NETWORK, tmp_path)
    path = point / "raw" / "localhost" / "deliveries.csv"
    deliveries = pd.read_csv(path)
    extra = deliveries.iloc[[-1]].assign(block_number=deliveries["block_number"].max() + 1)
    pd.concat([deliveries, extra]).to_csv(path, index=False)
    assert f"(first: block {int(extra['block_number'].iloc[0])}" in failure(point)
    # and a block the ledger holds that the block watcher no longer reports
    deliveries.drop(index=len(deliveries) // 2).to_csv(path, index=False)
    assert "missing from the block watcher on host localhost" in failure(point)


def test_a_stored_table_that_differs_from_the_raw_files_fails(stored, tmp_path):
    # the metrics come from blocks.parquet: one block's count altered there, the raw CSV untouched
    from harness.collect import read_table, write_table
    point = copy_point(stored, BENCH, tmp_path)
    blocks = read_table(point / "blocks.parquet")
    blocks.loc[0, "valid_count"] += 1
    write_table(blocks, point / "blocks.parquet", "blocks")
    assert "table blocks: the raw files (" in failure(point)


def test_a_removed_timed_section_line_fails(stored, tmp_path):
    point = copy_point(stored, BENCH, tmp_path)
    for log in point.glob("logs/localhost/committerbench.*"):
        log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                               if "fabricrepro timed_section" not in line))
    assert "work check: not measured: no timed-section line" in failure(point)


def test_a_deleted_declared_log_fails(stored, tmp_path):
    point = copy_point(stored, NETWORK, tmp_path)
    (point / "logs" / "localhost" / "peer.log").unlink()
    assert "the log of peer on host localhost is missing" in failure(point)


def test_a_pattern_line_past_a_stop_offset_of_zero_fails(stored, tmp_path):
    point = copy_point(stored, NETWORK, tmp_path)
    (point / "raw" / "localhost" / "log_bytes_at_stop.csv").write_text("log,bytes\npeer.log,0\n")
    with open(point / "logs" / "localhost" / "peer.log", "a") as f:
        f.write("panic: runtime error: invalid memory address\n")
    assert "log line(s) of go_panic" in failure(point)


# ---- issue 45: every planned point accounted for; no check disabled by its own input; the verifier's cache


def test_a_deleted_control_point_fails_the_run_naming_it(stored, tmp_path):
    """``invoke verify`` walks the run's plan (resolved.yaml), not the folders that are left: a control point
    whose folder was deleted fails, named, and the run is no longer complete (never pooled)."""
    from harness.selection import select_runs
    results = tmp_path / "results"
    run = shutil.copytree(stored[NETWORK], results / "fastfabric" / NETWORK / stored[NETWORK].name, symlinks=True)
    assert select_runs(results, "fastfabric", NETWORK).complete   # positive control: the untouched copy pools
    (control,) = (run / "points").glob("control__*")
    shutil.rmtree(control)
    verdicts = verify_run(run)
    assert [(r["point"], r["passed"]) for r in verdicts] == [(control.name, False), (verdicts[1]["point"], True)]
    assert verdicts[0]["reasons"] == [f"a control point of the run's plan (resolved.yaml) is missing: the run holds "
                                      f"no points/{control.name}/ (point.json)"]
    proc = subprocess.run([sys.executable, "-m", "invoke", "verify", str(run), "--point", control.name],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and f"FAIL {control.name} (stored: missing)" in proc.stdout, proc.stdout + proc.stderr
    selection = select_runs(results, "fastfabric", NETWORK)
    assert not selection.complete and selection.listed[0]["why"].startswith("incomplete: 1 planned point(s) missing")
    assert control.name in selection.listed[0]["why"]


def test_a_stop_offset_that_would_hide_the_log_fails(stored, tmp_path):
    """A log_bytes_at_stop.csv saying the peer's log held 1 byte when the stop began would hide a panic line
    in it; the peer's commit lines, written while the point ran, lie past that length: the point fails."""
    point = copy_point(stored, NETWORK, tmp_path)
    (point / "raw" / "localhost" / "log_bytes_at_stop.csv").write_text("log,bytes\npeer.log,1\n")
    log = point / "logs" / "localhost" / "peer.log"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:len(lines) // 2]) + "panic: runtime error: invalid memory address\n"
                   + "".join(lines[len(lines) // 2:]))
    text = failure(point)
    assert "log_bytes_at_stop.csv says peer.log held 1 bytes when the stop began, but its committed_block line" in text


def test_a_deleted_log_is_not_replaced_by_the_out_file_kept(stored, tmp_path):
    """Each declared log is one file: the committer benchmark's .log (its stderr: the committer's lines) deleted,
    its .out kept, fails naming the file."""
    point = copy_point(stored, BENCH, tmp_path)
    (point / "logs" / "localhost" / "committerbench.log").unlink()
    assert (point / "logs" / "localhost" / "committerbench.out").stat().st_size
    assert "the log of committerbench on host localhost is missing (logs/localhost/committerbench.log)" in failure(point)


def test_a_cost_line_claiming_1_us_per_verification_fails(stored, tmp_path):
    """The work check's cost is the harness's, measured at the run's start: the committer's verify_cost line
    rewritten to 1 us (its stop offset made to match) cannot lower it, and fails as a contradiction."""
    point = copy_point(stored, BENCH, tmp_path)
    log = point / "logs" / "localhost" / "committerbench.log"
    text = re.sub(r"(?m)^fabricrepro verify_cost verifies (\d+) .*$",
                  r"fabricrepro verify_cost verifies \1 before_cpu_ns_per_verify 1000 after_cpu_ns_per_verify 1000",
                  log.read_text())
    log.write_text(text)
    offsets = point / "raw" / "localhost" / "log_bytes_at_stop.csv"
    offsets.write_text(re.sub(r"(?m)^committerbench\.log,\d+$", f"committerbench.log,{len(text.encode())}",
                              offsets.read_text()))
    result = recheck_point(point)
    assert not result["passed"] and len(result["problems"]) == 1, result["problems"]
    assert re.search(r"verify_cost line says 1\.00 us per verification, the harness measured \d+\.\d+ us on this "
                     r"machine at the run's start: more than x3 apart", result["problems"][0]), result["problems"]


def test_a_code_flipped_with_its_file_time_restored_is_caught_by_the_analysis(stored, tmp_path):
    """A report's analysis reuses our verifier's stored result (verifier.json) only for block files of the same
    content and the same verifier: one transaction's code flipped in the kept block file, its size and
    modification time restored, is verified anew and disagrees."""
    import os
    from harness import validity
    from harness.collect import raw_tables
    from harness.rundir import read_json
    point = copy_point(stored, BENCH, tmp_path)

    def analysis_problems():
        return validity.check_point(point, read_json(point / "point.json"), raw_tables(point),
                                    context=validity.point_context(point))[1]

    assert analysis_problems() == []   # and verifier.json holds this content's result
    (blockfile,) = point.glob("raw/localhost/blocks/committerbench/*/blockfile_*")
    stat, data = blockfile.stat(), bytearray(blockfile.read_bytes())
    codes = ledger.decode_ledger([blockfile], REPO_ROOT / "bin" / "blockfile")
    last = int(codes["block_number"].max())
    start = filter_offset(bytes(data), last)
    victim = next(i for i in range(100) if data[start + i] == 0)   # a VALID transfer of the last block
    data[start + victim] = 11                                     # MVCC_READ_CONFLICT
    blockfile.write_bytes(bytes(data))
    os.utime(blockfile, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert blockfile.stat().st_size == stat.st_size and blockfile.stat().st_mtime_ns == stat.st_mtime_ns
    problems = analysis_problems()
    assert any(p.startswith("our verifier disagrees with the ledger localhost/committerbench/")
               and f"block {last} tx {victim} recorded MVCC_READ_CONFLICT, derived VALID" in p for p in problems), problems
    cached = json.loads((point / "verifier.json").read_text())
    assert [v["section"]["status"] for v in cached.values()] == ["failed"]


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        x |= (b & 0x7F) << shift
        if b < 0x80:
            return x, pos
        shift += 7


def _fields(buf: bytes, pos: int, end: int) -> list[tuple[int, object]]:
    """One protobuf message's fields: (number, a varint's value or a length-delimited field's (start, end))."""
    out = []
    while pos < end:
        key, pos = _uvarint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _uvarint(buf, pos)
        elif wire == 2:
            n, pos = _uvarint(buf, pos)
            value, pos = (pos, pos + n), pos + n
        elif wire in (1, 5):
            value, pos = None, pos + (8 if wire == 1 else 4)
        else:
            raise ValueError(f"wire type {wire} at byte {pos}")
        out.append((number, value))
    return out


def filter_offset(data: bytes, block_number: int) -> int:
    """Where a block's TRANSACTIONS_FILTER starts in a block file of the reference build's block store
    (internal/ledger/blkstorage): records of a varint length and a marshaled common.Block (header 1 with the
    number 1; metadata 3 with its entries 1, the filter at index 2)."""
    pos = 0
    while pos < len(data):
        length, pos = _uvarint(data, pos)
        block = dict((n, v) for n, v in _fields(data, pos, pos + length) if n in (1, 3))
        if dict(_fields(data, *block[1])).get(1, 0) == block_number:
            return [v for n, v in _fields(data, *block[3]) if n == 1][2][0]
        pos += length
    raise ValueError(f"block {block_number} not found")


def test_invoke_verify_exits_non_zero_naming_the_cause(stored, tmp_path):
    point = copy_point(stored, BENCH, tmp_path)
    shutil.rmtree(point / "raw" / "localhost" / "blocks")
    proc = subprocess.run([sys.executable, "-m", "invoke", "verify", str(point.parent.parent)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"FAIL {point.name} (stored: complete)" in proc.stdout and "no kept block files" in proc.stdout
    ok = subprocess.run([sys.executable, "-m", "invoke", "verify", str(stored[BENCH])],
                        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "2 of 2 point(s) passed" in ok.stdout, ok.stdout + ok.stderr


def test_codes_our_verifier_did_not_re_derive_are_the_validators_not_ledger_proven(stored, tmp_path, monkeypatch):
    """The measured point is ledger-proven because our verifier re-derived its ledger's codes; the same
    point checked under rules that do not run the verifier (a system that declares no verify) is only the validator's word."""
    from harness import validity
    point = copy_point(stored, NETWORK, tmp_path)
    context = {**validity.point_context(point), "fresh_verifier": True}
    from harness.collect import raw_tables
    tables = raw_tables(point)
    section, problems = validity.check_point(point, json.loads((point / "point.json").read_text()), tables,
                                             context=context)
    assert problems == [] and section["evidence"] == validity.LEDGER_PROVEN and section["controllable"]
    real = validity.load_rules

    def without_verifier(system, systems_dir=validity.SYSTEMS):
        rules = real(system, systems_dir)
        for by_build in rules["evidence"].values():
            for decl in by_build.values():
                decl.pop("verify", None)
        return rules
    monkeypatch.setattr(validity, "load_rules", without_verifier)
    section, problems = validity.check_point(point, json.loads((point / "point.json").read_text()), tables,
                                             context=context)
    assert problems == [] and section["evidence"] == validity.VALIDATOR_CODES and "verifier" not in section


def test_a_control_that_fails_on_re_analysis_fails_its_run(stored, tmp_path):
    """The control's mutation log made to list one transfer more than the ledger marks invalid: re-analysed,
    the control fails, the run that was complete is failed naming it, and its measured point says so."""
    from harness.analyze import analyze_run
    from harness.rundir import Run
    run_dir = shutil.copytree(stored[BENCH], tmp_path / "results" / "fastfabric" / BENCH / stored[BENCH].name,
                              symlinks=True)
    analyze_run(Run.open(run_dir))  # positive control: the untouched copy stays complete, its point controlled
    (measured,) = [p for p in (run_dir / "points").iterdir() if not p.name.startswith("control__")]
    assert json.loads((measured / "summary.json").read_text())["controlled"] == "passed"
    assert Run.open(run_dir).metadata["status"] == "complete"
    (control,) = (run_dir / "points").glob("control__*")
    path = control / "raw" / "localhost" / "mutations.csv"
    rows = pd.read_csv(path)
    count = int(pd.read_csv(path.parent / "blocks.csv")["tx_count"].iloc[0])
    pd.concat([rows, rows.iloc[[0]].assign(tx_index=(rows["tx_index"].iloc[0] + 1) % count)]).to_csv(path, index=False)
    analyze_run(Run.open(run_dir))
    meta = Run.open(run_dir).metadata
    assert meta["status"] == "failed" and meta["reason"] == f"a control point failed on re-analysis: {control.name}"
    assert json.loads((measured / "summary.json").read_text())["controlled"] == "failed"
