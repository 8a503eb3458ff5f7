"""The Fujitsu paper's independent check (systems/fujitsu-api/evidence.py, ``fujitsu-peer-states``) on
point directories built by hand.

The inputs are made by the programs that make them in a run: ``client.py blocks`` (the driver: the blocks
table and its summary line) and the role's ``peer_states.py`` (every peer's height and balances read
again), both run against test doubles of v0.6.1 peers' REST API (GET /chain, GET /chain/blocks/N,
the query JSON-RPC), with blocks shaped like fixtures/block-v061.json; the tables are made by the
harness's own collection (harness.collect.raw_tables). A consistent point passes; a peer's balance off
by one transfer, heights that differ, a client summary that is not the table's, all fail naming the
cause; every missing input fails."""

from __future__ import annotations

import contextlib
import copy
import csv
import importlib.util
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.collect import raw_tables
from harness.systems import independent_check, plugin

ROOT = Path(__file__).resolve().parents[3]
BLOCK = json.loads((Path(__file__).parent / "fixtures" / "block-v061.json").read_text())
BALANCE = 1_000_000_000


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


client = _load("transfer_client", ROOT / "workloads" / "chaincode_example02" / "client.py")
peer_states = _load("peer_states", ROOT / "systems" / "fujitsu-api" / "roles" / "fujitsu_api_client" / "files"
                    / "peer_states.py")


def _block(seconds: int, txs: int) -> dict:
    block = copy.deepcopy(BLOCK)
    block["transactions"] = [BLOCK["transactions"][0]] * txs
    block["nonHashData"]["localLedgerCommitTimestamp"] = {"seconds": seconds, "nanos": 500_000_000}
    return block


class FakePeer(ThreadingHTTPServer):
    """Test double of a v0.6.1 peer's REST API: a chain of blocks and two balances (both changeable)."""

    def __init__(self, blocks: list[dict], balances: tuple[int, int]):
        self.blocks, self.balances = blocks, balances

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, doc):
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(inner):
                if inner.path == "/chain":
                    inner._reply({"height": len(self.blocks)})
                else:
                    inner._reply(self.blocks[int(inner.path.rsplit("/", 1)[1])])

            def do_POST(inner):
                request = json.loads(inner.rfile.read(int(inner.headers["Content-Length"])))
                account = request["params"]["ctorMsg"]["args"][1]
                value = self.balances[0 if account == "a" else 1]
                inner._reply({"jsonrpc": "2.0", "result": {"status": "OK", "message": str(value)}, "id": 1})

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _chain() -> list[dict]:
    # block 0 genesis, 1 the deploy, then three blocks of 3, 4 and 3 transfers
    return [_block(100, 0), _block(101, 1), _block(102, 3), _block(103, 4), _block(104, 3)]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def peers():
    servers = [FakePeer(_chain(), (BALANCE - 10, BALANCE + 10)) for _ in range(4)]
    yield servers
    for s in servers:
        s.shutdown()
        s.server_close()


def make_point(tmp_path: Path, peers: list[FakePeer], *, settings: bool = True, after=None) -> Path:
    """A point as the fujitsu_api_client role leaves it: client.py blocks, then peer_states.py (``after`` runs
    between the two: the peers' state changing under the second read)."""
    run = tmp_path / "run"
    role_settings = {"fujitsu_api_client": {"fujitsu_api_client_balance": BALANCE, "fujitsu_api_client_amount": 1,
                                            "fujitsu_api_client_accounts": "a,b"}}
    _write(run / "metadata.json", json.dumps({"build": {"role_settings": role_settings if settings else {}}}))
    point = run / "points" / "p"
    _write(point / "logs" / "ansible-run.vars.json", json.dumps({"fujitsu_api_peer_nodes": len(peers)}))
    for i, _ in enumerate(peers):
        _write(point / "raw" / "peer" / f"affinity_fujitsu_api_peer-vp{i}_vp{i}.csv",
               f'component,pid,cpus_allowed_list\nfujitsu_api_peer-vp{i}_vp{i},42,"0-1"\n')
        _write(point / "logs" / "peer" / f"fujitsu_api_peer-vp{i}.log", "started\n")
    raw, logs = point / "raw" / "client", point / "logs" / "client"
    raw.mkdir(parents=True)
    urls = ",".join(p.url for p in peers)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        client.main(["blocks", "--peers", urls, "--chaincode", "transfer", "--from-height", "2", "--transactions",
                     "10", "--timeout", "5", "--out", str(raw / "blocks.csv")])
    _write(logs / "fujitsu_api_client-blocks.out", out.getvalue())
    if after:
        after()
    with contextlib.redirect_stdout(io.StringIO()):
        peer_states.main(["--peers", urls, "--chaincode", "transfer", "--out", str(raw / "fujitsu_peer_states.csv")])
    return point


def _run(point: Path):
    return independent_check("fujitsu-api", "fujitsu-peer-states").run(point, raw_tables(point))


def test_the_plugin_offers_the_check_and_the_states_table():
    p = plugin("fujitsu-api")
    assert [c.name for c in p.independent_checks()] == ["fujitsu-peer-states"]
    assert "fujitsu_peer_states" in {t.name for t in p.tables()}


def test_consistent_point_passes(tmp_path, peers):
    section, problems = _run(make_point(tmp_path, peers))
    assert problems == []
    assert section["valid"] == section["transactions"] == 10 and section["height"] == 5
    assert section["expected_balances"] == [BALANCE - 10, BALANCE + 10] and section["client_valid"] is True
    assert len(section["peers"]) == 4 and all(s == {"height": 5, "balances": [BALANCE - 10, BALANCE + 10]}
                                              for s in section["peers"].values())


def test_a_peer_off_by_one_transfer_fails_naming_it(tmp_path, peers):
    # the client saw every peer right; peer 2's state moved by one transfer less when read again
    def drift():
        peers[2].balances = (BALANCE - 9, BALANCE + 9)
    _, problems = _run(make_point(tmp_path, peers, after=drift))
    assert any(p.startswith(f"peer {peers[2].url} holds balances ({BALANCE - 9}, {BALANCE + 9}), not "
                            f"({BALANCE - 10}, {BALANCE + 10})") and "off by -1 transfer(s)" in p for p in problems)
    assert any(p.startswith(f"peer {peers[2].url}: the client saw height 5") for p in problems)
    assert not any(peers[0].url in p for p in problems)


def test_a_peer_the_client_already_saw_off_fails(tmp_path, peers):
    # the client marks every block invalid (valid_count 0) and fails; the check fails too: 10 transfers
    # moved on three peers while the table counts none valid, and peer 3 moved only 9
    peers[3].balances = (BALANCE - 9, BALANCE + 9)
    section, problems = _run(make_point(tmp_path, peers))
    assert section["valid"] == 0 and section["client_valid"] is False
    assert sum("holds balances" in p for p in problems) == 4


def test_heights_that_differ_fail(tmp_path, peers):
    def grow():
        peers[1].blocks.append(_block(105, 2))
    _, problems = _run(make_point(tmp_path, peers, after=grow))
    assert any(p.startswith("the peers' heights differ") for p in problems)
    assert any(p.startswith(f"peer {peers[1].url} is at height 6, the blocks table ends at block 4") for p in problems)


def test_a_client_summary_that_is_not_the_table_fails(tmp_path, peers):
    point = make_point(tmp_path, peers)
    line = json.loads((point / "logs" / "client" / "fujitsu_api_client-blocks.out").read_text())
    line["transactions"] = 11
    _write(point / "logs" / "client" / "fujitsu_api_client-blocks.out", json.dumps(line) + "\n")
    _, problems = _run(point)
    assert len(problems) == 1 and problems[0].startswith("the client's summary")


def test_a_block_missing_from_the_table_fails(tmp_path, peers):
    point = make_point(tmp_path, peers)
    path = point / "raw" / "client" / "blocks.csv"
    rows = list(csv.reader(path.open()))
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([rows[0], rows[1], rows[3]])  # blocks 2 and 4: block 3 lost
    _, problems = _run(point)
    assert any(p.startswith("the blocks table is not one run of consecutive blocks") for p in problems)
    assert any("holds balances" in p and "off by +4 transfer(s)" in p for p in problems)


def test_a_peer_left_unread_fails(tmp_path, peers):
    point = make_point(tmp_path, peers)
    path = point / "raw" / "client" / "fujitsu_peer_states.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    _, problems = _run(point)
    assert len(problems) == 1 and problems[0].startswith("4 peers were started but the state of only 3 was read")


def test_the_reader_names_a_peer_it_cannot_read(tmp_path, peers):
    out = tmp_path / "states.csv"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = peer_states.main(["--peers", f"{peers[0].url},http://127.0.0.1:1", "--chaincode", "transfer",
                               "--out", str(out)])
    assert rc == 1 and "peer state not read: http://127.0.0.1:1" in err.getvalue()
    assert len(out.read_text().splitlines()) == 2  # header and the one peer it read


@pytest.mark.parametrize("breakage, expected", [
    ("no_states", "no peer's state was read after the run"),
    ("empty_states", "no peer's state was read after the run"),
    ("no_blocks", "the point has no blocks table"),
    ("no_summary", "the client's summary line is missing"),
    ("summary_without_json", "the client's summary line is missing"),
    ("no_peer_started", "no record that a peer was started"),
    ("no_settings", "the point records no usable fujitsu_api_client_balance"),
])
def test_every_missing_input_fails(tmp_path, peers, breakage, expected):
    point = make_point(tmp_path, peers, settings=breakage != "no_settings")
    raw, logs = point / "raw" / "client", point / "logs" / "client"
    if breakage == "no_states":
        (raw / "fujitsu_peer_states.csv").unlink()
    elif breakage == "empty_states":
        _write(raw / "fujitsu_peer_states.csv", "peer,height,balance_a,balance_b\n")
    elif breakage == "no_blocks":
        (raw / "blocks.csv").unlink()
    elif breakage == "no_summary":
        (logs / "fujitsu_api_client-blocks.out").unlink()
    elif breakage == "summary_without_json":
        _write(logs / "fujitsu_api_client-blocks.out", "Traceback (most recent call last):\n")
    elif breakage == "no_peer_started":
        for f in point.glob("raw/*/affinity_fujitsu_api_peer-*.csv"):
            f.unlink()
    _, problems = _run(point)
    assert any(p.startswith(expected) for p in problems), problems
