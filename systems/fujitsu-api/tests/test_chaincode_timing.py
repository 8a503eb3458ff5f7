"""Fig. 2's parser (systems/fujitsu-api/chaincode_timing.py) on real lines of patch 0003.

The fixtures are cut from run fig2-chaincode-time/20261124T023323Z (Fabric
v0.6.1, local provider, 2 shared cores): vp0's and its chaincode's lines for the
chaincode's registration, the deploy's INIT and two transfers, with the
existing API (chaincode_example02: GET_STATE x2, PUT_STATE x2) and with the
revised one (one COMPOUND_STATE). Expected values by hand from the timestamps:
ordered, the events alternate send/receive; the gaps at even places are
transfers, those at odd places the receiver's work (e.g. revised 98d059fd:
transfer 56,674 + 48,222 + 66,528 + 87,830 = 259,254 ns, chaincode 24,987 +
97,034 = 122,021, peer 33,590, total 414,865)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.collect import read_csv

from fabricrepro_systems.fujitsu_api.chaincode_timing import exec_time_ms, message_share_pct, transactions

FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: tx prefix -> (round trips, total, transfer, chaincode, peer) in ns
EXPECTED = {
    "existent-api": {"44d4ea6d": (5, 4583038, 4130758, 311261, 141019),
                     "cd27d4fd": (5, 982137, 666187, 240879, 75071)},
    "revised-api": {"98d059fd": (2, 414865, 259254, 122021, 33590),
                    "b5f02292": (2, 410219, 239956, 111045, 59218)},
}


def _messages(variant: str) -> pd.DataFrame:
    return read_csv(FIXTURES / f"cc_messages-{variant}.csv", "cc_messages")


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_real_exchanges_split_into_their_phases(variant):
    txs = transactions(_messages(variant))  # the REGISTER and the deploy's INIT are left out
    got = {r.tx_id[:8]: (r.round_trips, r.total_ns, r.transfer_ns, r.chaincode_ns, r.peer_ns)
           for r in txs.itertuples()}
    assert got == EXPECTED[variant]


def test_share_and_mean_time_over_the_sample():
    m = _messages("revised-api")
    assert exec_time_ms(m) == pytest.approx((414865 + 410219) / 2 / 1e6)
    assert message_share_pct(m) == pytest.approx(100 * (259254 + 239956) / (414865 + 410219))


def test_a_message_lost_from_the_record_drops_its_transaction():
    m = _messages("revised-api")
    m = m.drop(m[(m["type"] == "COMPOUND_STATE") & (m["event"] == "recv")].index[0])
    assert [t[:8] for t in transactions(m)["tx_id"]] == ["b5f02292"]
