"""The Fujitsu workload's client (workloads/chaincode_example02/client.py): the blocks table it writes from
v0.6.1's REST blocks, and its validity check through every peer's balances.

The peers here are a test double: an HTTP server on loopback answering GET /chain,
GET /chain/blocks/N and the query JSON-RPC from fixed data, with blocks shaped like
fixtures/block-v061.json (a v0.6.1 block as its REST API
returned it here, transactions abbreviated).
"""

from __future__ import annotations

import copy
import csv
import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.collect import read_csv
from harness.metrics import commit_throughput_tps

ROOT = Path(__file__).resolve().parents[3]
BLOCK = json.loads((Path(__file__).parent / "fixtures" / "block-v061.json").read_text())
BALANCE = 1_000_000_000

spec = importlib.util.spec_from_file_location("transfer_client", ROOT / "workloads" / "chaincode_example02" / "client.py")
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)


def _block(seconds: int, txs: int) -> dict:
    block = copy.deepcopy(BLOCK)
    block["transactions"] = [BLOCK["transactions"][0]] * txs
    block["nonHashData"]["localLedgerCommitTimestamp"] = {"seconds": seconds, "nanos": 500_000_000}
    return block


class FakePeer(ThreadingHTTPServer):
    """Test double of a v0.6.1 peer's REST API: a chain of blocks and two balances."""

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


@pytest.fixture
def chain():
    # Block 0 genesis, 1 the deploy, then three blocks of 3, 4 and 3 transfers one second apart.
    return [_block(100, 0), _block(101, 1), _block(102, 3), _block(103, 4), _block(104, 3)]


def _run_blocks(tmp_path, peers, transactions=10):
    out = tmp_path / "blocks.csv"
    args = ["blocks", "--peers", ",".join(p.url for p in peers), "--chaincode", "transfer", "--from-height", "2",
            "--transactions", str(transactions), "--timeout", "5", "--out", str(out)]
    return out, lambda: client.main(args)


def test_blocks_table_from_the_rest_blocks(tmp_path, chain):
    peers = [FakePeer(chain, (BALANCE - 10, BALANCE + 10)) for _ in range(2)]
    out, run = _run_blocks(tmp_path, peers)
    run()
    table = read_csv(out, "blocks")  # the harness's own reader: the header is the contract's
    assert table["block_number"].tolist() == [2, 3, 4]
    assert table["tx_count"].tolist() == table["valid_count"].tolist() == [3, 4, 3]
    assert table["committed_ns"].tolist() == [102_500_000_000, 103_500_000_000, 104_500_000_000]
    assert (table["vscc_ns"] == 0).all()  # v0.6 measures no phase durations
    # The harness's throughput: the transfers after the first block over the time between first and last.
    assert commit_throughput_tps(table) == pytest.approx(7 / 2.0)


def test_a_peer_with_other_balances_makes_every_block_invalid(tmp_path, chain):
    peers = [FakePeer(chain, (BALANCE - 10, BALANCE + 10)), FakePeer(chain, (BALANCE - 9, BALANCE + 9))]
    out, run = _run_blocks(tmp_path, peers)
    with pytest.raises(SystemExit, match="expected balances"):
        run()
    rows = list(csv.DictReader(out.open()))
    assert [r["valid_count"] for r in rows] == ["0", "0", "0"]


def test_too_few_transfers_in_the_chain_time_out(tmp_path, chain):
    peers = [FakePeer(chain, (BALANCE - 10, BALANCE + 10))]
    _, run = _run_blocks(tmp_path, peers, transactions=11)
    with pytest.raises(SystemExit, match="only 10 of 11 transfers committed"):
        run()


def test_bad_counts_are_refused():
    with pytest.raises(SystemExit):
        client.main(["send", "--peers", "http://127.0.0.1:1", "--chaincode", "t", "--processes", "0",
                     "--transactions", "5", "--out", "/dev/null"])
