"""The provider interface: turn a topology (role -> count) into an Ansible inventory."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import yaml


class Provider(ABC):
    """Makes hosts available and describes them as an Ansible inventory.

    An inventory has one group per role (``orderer``, ``peer``, ...) and sets,
    for every host, ``fabricrepro_work_root`` (where points keep their working
    files on that host) and ``fabricrepro_bin_dir`` (where the built commands
    are on that host).
    """

    #: The name given to ``--provider``.
    name: str = ""

    @abstractmethod
    def hosts(self, roles: list[str]) -> dict[str, list[str]]:
        """The hosts that play each role, as ``{role: [host, ...]}``."""

    @abstractmethod
    def host_vars(self, host: str) -> dict:
        """Ansible variables of one host (connection, work root, binary directory)."""

    def inventory(self, path: Path, roles: list[str]) -> Path:
        """Write the YAML inventory for ``roles`` to ``path`` and return it."""
        groups = self.hosts(roles)
        all_hosts = sorted({h for hs in groups.values() for h in hs})
        doc = {"all": {"hosts": {h: self.host_vars(h) for h in all_hosts},
                       "children": {role: {"hosts": {h: None for h in hs}} for role, hs in groups.items()}}}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=True), encoding="utf-8")
        return path
