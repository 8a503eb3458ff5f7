"""The plugin loader (harness/systems.py) holds plugins to the API (harness/plugin_api.py): a name that is
not a hook, or a hook with other parameters, is refused when the plugin loads; a system's base is the one
``system.yaml`` declares (``extends``), and ``super()`` in a hook reaches the base's hooks."""

from __future__ import annotations

import pytest

from harness import plugin_api, systems
from harness.errors import HarnessError


def system(root, name: str, plugin: str | None = None, extends: str | None = None) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "system.yaml").write_text(f"id: {name}\n" + (f"extends: {extends}\n" if extends else ""))
    if plugin is not None:
        (folder / "plugin.py").write_text(plugin)


BASE = """
from harness.plugin_api import SystemPlugin, Table

class Plugin(SystemPlugin):
    def role_variables(self, parameters):
        return {"base_var": parameters.get("x", 0)}

    def tables(self):
        return [Table("base_table", ("a",))]
"""

CHILD = """
from harness.plugin_api import SystemPlugin, Table

class Plugin(SystemPlugin):
    def tables(self):
        return [*super().tables(), Table("child_table", ("b",))]
"""


def test_a_system_is_put_over_the_base_its_system_yaml_names(tmp_path):
    system(tmp_path, "loader-base", BASE)
    system(tmp_path, "loader-child", CHILD, extends="loader-base")
    system(tmp_path, "loader-grandchild", extends="loader-child")  # no plugin.py: its base's hooks
    child = systems.plugin("loader-child", tmp_path)
    assert [t.name for t in child.tables()] == ["base_table", "child_table"]
    assert child.role_variables({"x": 3}) == {"base_var": 3}  # not overridden: the base's
    assert [t.name for t in systems.plugin("loader-grandchild", tmp_path).tables()] == ["base_table", "child_table"]
    assert systems.lineage("loader-grandchild", tmp_path) == ["loader-grandchild", "loader-child", "loader-base"]


def test_an_extends_loop_is_an_error(tmp_path):
    system(tmp_path, "loop-a", extends="loop-b")
    system(tmp_path, "loop-b", extends="loop-a")
    with pytest.raises(HarnessError, match="'extends' loops through loop-a -> loop-b -> loop-a"):
        systems.plugin_class("loop-a", tmp_path)


@pytest.mark.parametrize("name, body, match", [
    ("misspelt-a", "    def table(self):\n        return []\n", r"Plugin.table is not a hook \(hooks: role_variables, tables,"),
    ("misspelt-b", "    def role_variables(self, params):\n        return {}\n",
     r"Plugin.role_variables takes \(self, params\), the hook takes \(self, parameters\)"),
    ("misspelt-c", "    tables = []\n", r"Plugin.tables takes \(\), the hook takes \(self\)"),
])
def test_a_name_that_is_not_a_hook_or_a_hook_with_other_parameters_is_refused(tmp_path, name, body, match):
    # each case its own name: a system's package is imported once per process, as the harness does
    system(tmp_path, name, "from harness.plugin_api import SystemPlugin\n\nclass Plugin(SystemPlugin):\n" + body)
    with pytest.raises(HarnessError, match=match):
        systems.plugin_class(name, tmp_path)


def test_helpers_with_a_leading_underscore_and_a_plugin_without_the_base_class(tmp_path):
    system(tmp_path, "helped", "from harness.plugin_api import SystemPlugin\n\nclass Plugin(SystemPlugin):\n"
                               "    def _helper(self):\n        return 1\n\n"
                               "    def tables(self):\n        return []\n")
    assert systems.plugin("helped", tmp_path).tables() == []
    system(tmp_path, "classless", "class Plugin:\n    pass\n")
    with pytest.raises(HarnessError, match="defines no class Plugin deriving from harness.plugin_api.SystemPlugin"):
        systems.plugin_class("classless", tmp_path)


def test_every_hook_is_specified_once_with_a_default_that_adds_nothing(tmp_path):
    assert set(plugin_api.HOOKS) == {"role_variables", "tables", "metrics", "report_parts", "build_kinds",
                                     "independent_checks", "commands", "upstream_ref", "ordering_service",
                                     "before_playbook"}
    system(tmp_path, "bare")
    bare = systems.plugin("bare", tmp_path)
    assert type(bare) is plugin_api.SystemPlugin
    args = {h: [{}] for h in ("role_variables", "upstream_ref", "ordering_service")}
    args["before_playbook"] = [{"playbook": "p.yml", "roles": []}, {}, {"groups": {}, "hosts": {}, "vars": {}}]
    assert all(not getattr(bare, h)(*args.get(h, [])) for h in plugin_api.HOOKS)


def test_the_repositorys_systems_load_and_their_commands_are_found():
    for name in systems.names():
        systems.plugin_class(name)  # every hook checked
    assert ("bftsmart-orderer", "microbench") in systems.commands()
    # a system extending fabric-1.2 inherits its role variables through the one declaration
    assert "fabric_crypto_orderer_type" in systems.role_variables(["fastfabric"], {"orderer_type": "kafka"})
    assert "fabric_crypto_orderer_type" not in systems.role_variables(["bftsmart-orderer"], {"orderer_type": "kafka"})
    # a system whose plugin writes files before its playbook, and one whose plugin writes none
    assert systems.prepares(["fabric-3.1"]) and systems.prepares(["fabric-2.5"])
    assert not systems.prepares(["fabric-1.2", "fastfabric", "bftsmart-orderer"])
