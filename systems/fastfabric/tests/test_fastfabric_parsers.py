"""The FastFabric peer benchmark's per-block CSV (our patch 0002 of systems/fastfabric) through
collect and metrics, against values computed by hand.

fixtures/peerbench-blocks.csv is real output of the patched benchmark
(`ffpeerbench -blocks 5 -blocksize 10 -pipeline 4 -txthreads 2 -blocklog ...`).
"""

import math
from pathlib import Path

import pytest

from harness import collect, metrics

SAMPLE = Path(__file__).parent / "fixtures" / "peerbench-blocks.csv"


@pytest.fixture
def blocks():
    return collect.read_csv(SAMPLE, "blocks")


def test_commit_throughput(blocks):
    # valid transactions of blocks 3..6 over the commit of block 2 to that of block 6
    assert metrics.commit_throughput_tps(blocks) == pytest.approx(40 / ((1795476061195251091 - 1795476061193560934) / 1e9))


def test_block_latency_from_pipeline_entry_to_commit(blocks):
    expected = [1.026362, 2.410965, 2.307943, 1.496469, 1.587104]
    assert metrics.block_latency_ms(blocks).tolist() == pytest.approx(expected)
    assert metrics.mean_block_latency_ms(blocks) == pytest.approx(sum(expected) / 5)


def test_phases_it_times_and_those_it_does_not(blocks):
    assert metrics.mean_phase_ms(blocks, "vscc") == pytest.approx(2436283 / 5 / 1e6)
    assert metrics.mean_phase_ms(blocks, "block_commit") == pytest.approx(642662 / 5 / 1e6)
    for phase in ("mvcc", "state_commit", "history_commit"):  # -1: not timed apart by this benchmark
        assert math.isnan(metrics.mean_phase_ms(blocks, phase))
    assert metrics.valid_fraction(blocks) == 1.0
