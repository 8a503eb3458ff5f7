"""The paper's kit over its size limit (issue 48 item 2, harness/kit.py build_kits): the experiment whose files
alone take the most is left out, named with the command that builds its kit apart, and the rest is packed; a kit
of experiments the user named is refused whole."""

import pytest

from harness import kit, kit_parts


def _file(path, size: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def test_what_an_experiment_alone_carries_counts_files_no_other_carries_and_a_runtime_only_it_needs(tmp_path):
    shared, jar = _file(tmp_path / "peer", 100), _file(tmp_path / "libs" / "kafka.jar", 1000)
    java = _file(tmp_path / "java" / "lib" / "modules", 5000).parent.parent
    parts = [{"id": "table1", "carried": {"bin/peer": shared, "libs": jar.parent}},
             {"id": "fig6", "carried": {"bin/peer": shared}}]
    assert kit_parts.carried_alone(parts, java, ["table1"]) == {"table1": 6000, "fig6": 0}
    assert kit_parts.carried_alone(parts, None, []) == {"table1": 1000, "fig6": 0}
    # a runtime two experiments need is saved by leaving out neither
    assert kit_parts.carried_alone(parts, java, ["table1", "fig6"]) == {"table1": 1000, "fig6": 0}


def test_the_papers_kit_over_the_limit_leaves_out_what_alone_takes_most_and_a_named_one_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(kit, "kit_experiments", lambda paper, named: named or ["fig3", "fig6", "table1"])
    monkeypatch.setattr(kit, "load_paper", lambda paper: None)
    monkeypatch.setattr(kit, "_kit_choice", lambda *args: None)
    tried = []

    def build_kit(paper, ids, out, log, **options):  # test double: over the limit while table1 is in it
        ids = [ids] if isinstance(ids, str) else list(ids)
        tried.append(ids)
        if "table1" in ids:
            raise kit_parts.KitTooLarge("kit: 64.3 MiB, more than the 60 MiB allowed",
                                        {"fig3": 10, "fig6": 20, "table1": 90})
        return {"experiments": ids}

    monkeypatch.setattr(kit, "build_kit", build_kit)
    said = []
    result = kit.build_kits("fastfabric", None, tmp_path / "k.tar.xz", log=said.append)
    assert tried == [["fig3", "fig6", "table1"], ["fig3", "fig6"]] and result["kit"] == {"experiments": ["fig3", "fig6"]}
    assert list(result["left_out"]) == ["table1"]
    assert "invoke kit --paper fastfabric --experiment table1" in result["left_out"]["table1"]
    assert any("left out table1" in line for line in said)
    with pytest.raises(kit_parts.KitTooLarge):
        kit.build_kits("fastfabric", ["fig6", "table1"], tmp_path / "k.tar.xz", log=said.append)
