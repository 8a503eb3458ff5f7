"""Build kind go-vendor (go_vendor_build.py), which builds Arma's tree: it refuses a tree without vendor/
(it would otherwise fetch modules), and builds each target offline into bin/ with the fixed environment.
The build itself is a test double of the core's BuildContext that records the commands (no Go run)."""

import pytest

from fabricrepro_systems.fabric_x import go_vendor_build
from harness.plugin_api import HarnessError


class _Context:  # test double: records what the core's run_command would run
    def __init__(self):
        self.commands = []

    def run_command(self, argv, what, cwd=None, env=None, timeout=None):
        self.commands.append((argv, cwd, env))
        return ""

    def log(self, text):
        pass


def test_a_tree_without_vendor_is_refused(tmp_path):
    with pytest.raises(HarnessError, match="vendor/modules.txt"):
        go_vendor_build.build("fabric-x", "arma", tmp_path, {"targets": {"arma": "./cmd/arma"}}, "snapshot", _Context())


def test_each_target_is_built_offline_from_vendor(tmp_path):
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "modules.txt").write_text("# github.com/x/y v1.0.0\n")
    context = _Context()
    go_vendor_build.build("fabric-x", "arma", tmp_path, {"targets": {"arma": "./cmd/arma", "armageddon": "./cmd/armageddon"}},
                          "snapshot", context)
    assert [c[0][-1] for c in context.commands] == ["./cmd/arma", "./cmd/armageddon"]
    for argv, cwd, env in context.commands:
        assert argv[:4] == ["go", "build", "-trimpath", "-buildvcs=false"] and cwd == tmp_path
        assert argv[argv.index("-o") + 1] == str(tmp_path / "bin" / argv[-1].rsplit("/", 1)[1])
        assert env["GOFLAGS"] == "-mod=vendor" and env["GOPROXY"] == "off" and env["GOTOOLCHAIN"] == "local"
