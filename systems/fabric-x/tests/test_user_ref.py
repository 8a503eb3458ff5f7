"""A user's own Fabric-X committer commit (``--set fabric_x_ref=<ref>``, harness/user_refs.py): the plugin asks for
it by that parameter, one ref per run, and only an upstream build from git may build it. No clone is made here
(tests/harness/test_user_refs.py builds a ref from a local repository end to end)."""

from __future__ import annotations

import pytest

from harness import user_refs
from harness.errors import HarnessError
from harness.plan import Point


def _point(**parameters) -> Point:
    return Point(id="p", variant="committer", system="fabric-x", label="Fabric-X", repetition=0, sweep={},
                 parameters=parameters, switches={})


def test_fabric_x_ref_asks_for_the_committers_commit():
    assert user_refs.requested([_point(fabric_x_ref="v1.0.3")]) == {
        "fabric-x": {"ref": "v1.0.3", "parameter": "fabric_x_ref"}}
    assert user_refs.requested([_point()]) == {}


def test_two_refs_in_one_run_and_a_reference_build_are_refused():
    with pytest.raises(HarnessError, match="fabric_x_ref asks for 2 refs"):
        user_refs.requested([_point(fabric_x_ref="v1.0.3"), _point(fabric_x_ref="main")])
    with pytest.raises(HarnessError, match="a user's ref is an upstream build"):
        user_refs.pins([_point(fabric_x_ref="v1.0.3")], "reference", "auto")
    with pytest.raises(HarnessError, match="built from git, not from a snapshot"):
        user_refs.pins([_point(fabric_x_ref="v1.0.3")], "upstream", "snapshot")
