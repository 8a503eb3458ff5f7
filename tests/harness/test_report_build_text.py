"""The report's build line names every build a run used, companions included (their patches too)."""

from harness.report.text import build_text


def _patches(*names):
    return [{"name": n} for n in names]


def test_build_text_lists_a_companion_build_and_its_patches_once():
    companion = {"system": "fastfabric", "key": "k1", "patches": _patches("0003-a.patch", "0004-b.patch")}
    meta = {"build": {"kind": "upstream",
                      "systems": {"fabric-1.2": {"repository": "hyperledger/fabric", "built_commit": "cae2ad445691aa",
                                                 "source": {"kind": "snapshot"}, "key": "k0",
                                                 "patches": _patches("0001-x.patch")}},
                      "variants": {"fabric-1.2": {"system": "fabric-1.2", "companions": {"fastfabric": companion}},
                                   "other": {"system": "fabric-1.2", "companions": {"fastfabric": companion}}}}}
    text = build_text(meta)
    assert text.count("companion fastfabric build k1, patches: 0003-a.patch, 0004-b.patch") == 1
    # a companion that is also one of the run's systems (same build) is named once, as the system
    meta["build"]["systems"]["fastfabric"] = {"repository": "cgorenflo/fabric", "built_commit": "ec1da6cf4f14",
                                              "source": {"kind": "snapshot"}, "key": "k1",
                                              "patches": companion["patches"]}
    assert "companion" not in build_text(meta)
