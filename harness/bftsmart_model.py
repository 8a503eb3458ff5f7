"""The BFT-SMaRt ordering service's throughput bound (Sousa et al., DSN 2018, Eq. 1).

Seed 004 line 126:  TP_os(bs, es, r) <= min(TP_sign x bs, TP_bftsmart(bs, es, r)),
where TP_sign is the blocks a node signs per second, bs the envelopes per
block, es the envelope size and r the receivers. Line 128: with Fabric 1.0's
double block signature, TP_sign is replaced by TP_sign / 2.

The report puts this bound, computed from the measured signature rate and the
measured BFT-SMaRt ordering rate, beside the measured ordering throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import HarnessError


@dataclass(frozen=True)
class Bound:
    """Eq. 1 for one configuration: both terms, the bound and which term sets it."""
    sign_term: float          # envelopes/s the signing capacity allows (TP_sign x bs, halved with two signatures)
    bftsmart_term: float | None  # envelopes/s BFT-SMaRt orders (None when not measured)
    bound: float
    limited_by: str           # "signing" or "bftsmart"


def throughput_bound(signatures_per_s: float, block_size: int, bftsmart_envelopes_per_s: float | None = None,
                     both_signatures: bool = False) -> Bound:
    """Eq. 1: the ordering service's envelope rate cannot exceed ``min(TP_sign x bs, TP_bftsmart)``.

    ``signatures_per_s`` is TP_sign (one signature per block, as the signature
    benchmark counts them); ``both_signatures`` applies line 128's TP_sign / 2.
    """
    if signatures_per_s <= 0:
        raise HarnessError(f"signature rate must be positive, got {signatures_per_s}")
    if block_size < 1:
        raise HarnessError(f"block size must be at least 1 envelope, got {block_size}")
    if bftsmart_envelopes_per_s is not None and bftsmart_envelopes_per_s <= 0:
        raise HarnessError(f"BFT-SMaRt ordering rate must be positive, got {bftsmart_envelopes_per_s}")
    sign = signatures_per_s / (2 if both_signatures else 1) * block_size
    if bftsmart_envelopes_per_s is None or sign <= bftsmart_envelopes_per_s:
        return Bound(sign, bftsmart_envelopes_per_s, sign, "signing")
    return Bound(sign, bftsmart_envelopes_per_s, bftsmart_envelopes_per_s, "bftsmart")
