"""Eq. 1 of the BFT-SMaRt ordering-service paper (harness/bftsmart_model.py)."""

import pytest

from harness.bftsmart_model import throughput_bound
from harness.errors import HarnessError


def test_paper_footnote_5_signing_capacity():
    # seed 004 footnote 5: TP_sign x bs = 8.4k x 100 = 840k envelopes/s
    b = throughput_bound(8400, 100)
    assert b.sign_term == 840000 and b.bound == 840000 and b.limited_by == "signing"


def test_bftsmart_term_sets_the_bound_when_lower():
    # Fig. 6a-c: ~50k tx/s measured below the 84k signing capacity (line 154)
    b = throughput_bound(8400, 10, bftsmart_envelopes_per_s=50000)
    assert (b.sign_term, b.bound, b.limited_by) == (84000, 50000, "bftsmart")


def test_double_signature_halves_the_signing_term():
    # line 128: with Fabric 1.0's two signatures, TP_sign / 2
    b = throughput_bound(8400, 10, bftsmart_envelopes_per_s=50000, both_signatures=True)
    assert (b.sign_term, b.bound, b.limited_by) == (42000, 42000, "signing")


@pytest.mark.parametrize("args", [(0, 10), (100, 0), (100, 10, -1.0)])
def test_bad_input_is_refused(args):
    with pytest.raises(HarnessError):
        throughput_bound(*args)
