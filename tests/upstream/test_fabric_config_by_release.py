"""The Fabric roles write the configuration keys of the build's own release (docs/regress.md).

Each fabric_* role reads the release from its build tree's Makefile
(BASE_VERSION); here the build is a TEST DOUBLE holding only that Makefile, and
the roles' real defaults and templates are rendered by Ansible for 1.1 to 1.4.
A release's rendering is checked for the keys it must have and must not have;
1.2's also against v1.2.0's key set (infra/upstream_keys/fabric-1.2).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROLES = REPO / "playbooks" / "roles"
sys.path.insert(0, str(REPO / "infra"))
from config_keys import check_rendered  # noqa: E402  (infra/ is not a package)

pytestmark = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-playbook is not installed")

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_vars: {file: "%(roles)s/fabric_orderer/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/fabric_peer/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/fabric_crypto/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/fabric_channel/defaults/main.yml"}
    - ansible.builtin.template:
        {src: "%(roles)s/fabric_orderer/templates/orderer.yaml.j2", dest: "%(out)s/orderer.yaml"}
    - ansible.builtin.template: {src: "%(roles)s/fabric_peer/templates/core.yaml.j2", dest: "%(out)s/core.yaml"}
    - ansible.builtin.copy:
        dest: "%(out)s/versions.json"
        content: "{{ {'orderer': fabric_orderer_fabric_version, 'peer': fabric_peer_fabric_version,
                      'crypto': fabric_crypto_fabric_version, 'channel': fabric_channel_fabric_version,
                      'kafka': fabric_orderer_kafka_version} | to_json }}"
"""


def render(tmp_path: Path, base_version: str) -> tuple[dict, dict, dict, dict]:
    """orderer.yaml and core.yaml (parsed), each role's release and Kafka.Version, and both files' text."""
    build = tmp_path / "build"
    tree = build / "gopath" / "src" / "github.com" / "hyperledger" / "fabric"
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text(f"# Fabric's Makefile (TEST DOUBLE)\nBASE_VERSION = {base_version}\n"
                                   "PREV_VERSION = 0.0.0\n")
    out = tmp_path / "out"
    out.mkdir()
    playbook = tmp_path / "render.yml"
    playbook.write_text(PLAYBOOK % {"roles": ROLES, "out": out})
    extra = {"fabricrepro_upstream_dir": str(build), "fabricrepro_point": "p0", "fabricrepro_work_dir": "/w",
             "fabricrepro_controller_dir": "/c", "fabricrepro_work_root": "/r",
             "ansible_python_interpreter": sys.executable}
    result = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(playbook),
                             "-e", json.dumps(extra)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    texts = {name: (out / name).read_text() for name in ("orderer.yaml", "core.yaml")}
    return (yaml.safe_load(texts["orderer.yaml"]), yaml.safe_load(texts["core.yaml"]),
            json.loads((out / "versions.json").read_text()), texts)


@pytest.mark.parametrize("base_version", ["1.1.0", "1.2.0", "1.2.1", "1.3.0", "1.4.0"])
def test_roles_write_the_keys_of_the_builds_release(tmp_path, base_version):
    orderer, core, versions, texts = render(tmp_path, base_version)
    release = base_version.rsplit(".", 1)[0]
    versions.pop("kafka")
    assert versions == dict.fromkeys(("orderer", "peer", "crypto", "channel"), release)
    # from 1.3 the orderer creates each channel's topic itself
    assert ("Topic" in orderer["Kafka"]) == (release in ("1.3", "1.4"))
    assert ("events" in core["peer"]) == (release in ("1.1", "1.2"))  # the event hub is gone in 1.3
    assert ("LogLevel" in orderer["General"]) == ("logging" in core) == (release != "1.4")  # 1.4: FABRIC_LOGGING_SPEC
    assert ("Operations" in orderer and "operations" in core) == (release == "1.4")
    if release == "1.4":
        assert orderer["Operations"]["ListenAddress"].endswith(":0") and core["metrics"] == {"provider": "disabled"}
    if release == "1.2":
        assert all(check_rendered(name, text, ["fabric-1.2"]) == [] for name, text in texts.items())


def test_kafka_protocol_version_by_release(tmp_path):
    # v1.1.0's sarama cannot read fetch responses at 1.0.0; later releases speak the brokers' 1.0.0.
    assert render(tmp_path / "a", "1.1.0")[2]["kafka"] == "0.10.2.0"
    assert render(tmp_path / "b", "1.4.0")[2]["kafka"] == "1.0.0"
