"""Unit tests of the seed-text helpers (number normalizer, sentence splitter)."""

import pytest

from seedtext import numbers_in, sentence_of, sentence_spans, states_number


@pytest.mark.parametrize("text, value", [
    ("from about 3200 to more than 7500", 3200),
    ("roughly 2,000 transactions per second", 2000),
    ("from 6,215 transactions/s to 21,719 transactions/s", 21719),
    ("$3185 \\pm 62$", 62),
    ("up to 8.4k signatures/sec", 8400),
    ("approximately 50k transactions/second", 50000),
    ("(2.8 $\\times$ ) for a payload", 2.8),
    ("98% improvement", 98),
    ("up to ten thousand transactions", 10000),
    ("to a third of its original value", 1 / 3),
])
def test_numbers_are_normalized(text, value):
    assert states_number(text, value, rel=1e-6)


@pytest.mark.parametrize("text, value", [
    ("from about 3200 to more than 7500", 320),
    ("roughly 2,000 transactions", 2),
    ("Fabric v0.6.1", 6.1),       # a version is not the number 6.1
    ("E5-2620 v2", 2620.5),
])
def test_numbers_not_stated_are_not_found(text, value):
    assert not states_number(text, value, rel=1e-6)


def test_version_numbers_do_not_split_or_leak():
    assert 0.6 not in numbers_in("Fabric v0.6.1")


def test_sentences_respect_abbreviations_and_captions():
    line = ("Fig. 7. Parameter study for blocks. We compare Opt. O-II with Fig. 5, e.g. at 2.9 KB. "
            "Dinh et al. [14] proposed it.")
    spans = [line[s:e] for s, e in sentence_spans(line)]
    assert spans == [
        "Fig. 7. Parameter study for blocks.",
        "We compare Opt. O-II with Fig. 5, e.g. at 2.9 KB.",
        "Dinh et al. [14] proposed it.",
    ]


def test_sentence_of_finds_the_ordinal():
    line = "First one. Second has 40,000 tx/s. Third."
    assert sentence_of(line, "40,000 tx/s") == [2]
    assert sentence_of(line, "one. Second") == []   # spans two sentences
