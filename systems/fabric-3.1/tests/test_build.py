"""The v3.1.5 build (reused; see conftest.py): every command says the release it is, and build.json records it."""

import subprocess

import pytest

pytestmark = pytest.mark.integration


def test_commands_print_the_release_and_build_json_records_it(fabric31_build):
    assert fabric31_build.info["release"] == "3.1.5"
    assert fabric31_build.info["toolchain"]["env"]["GOFLAGS"] == "-mod=vendor"
    for name in ("peer", "orderer"):
        out = subprocess.run([str(fabric31_build.bin_dir / name), "version"], capture_output=True, text=True,
                             check=True).stdout
        assert "Version: 3.1.5" in out and "Commit SHA: 86c1172" in out, out
    for name, flag in (("configtxgen", "--version"), ("cryptogen", "version")):
        out = subprocess.run([str(fabric31_build.bin_dir / name), flag], capture_output=True, text=True,
                             check=True).stdout
        assert "Version: 3.1.5" in out, out
    out = subprocess.run([str(fabric31_build.bin_dir / "osnadmin"), "--help"], capture_output=True, text=True)
    assert "channel" in out.stdout + out.stderr
