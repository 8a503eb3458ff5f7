"""Fabric v3.1 (and v2.5, which extends it): the network's configuration by release is network.py; its
smoke, a command of this system (``invoke system-command --system fabric-3.1 --name smoke``), smoke.py;
no catalogue driver runs these systems yet (issue 33)."""

from harness.plugin_api import SystemPlugin

from . import logs, smoke


class Plugin(SystemPlugin):
    def commands(self) -> list:
        return [smoke.COMMAND]

    def tables(self) -> list:
        # the peer's own per-block phase times (its log at INFO, no patch; logs.py)
        return [*super().tables(), logs.PHASES_TABLE]

    def metrics(self) -> list:
        # the v1.x phase metrics (vscc_ms, mvcc_ms, block_commit_ms, state_commit_ms) from that table
        return [*super().metrics(), *logs.METRICS]

    def upstream_ref(self, parameters: dict) -> dict | None:
        # a user's own Fabric tag or commit (--set fabric_ref=v2.5.12): built from git in place of the recipe's
        # pin, its release checked against this system's line (harness/user_refs.py; README "Your own Fabric")
        ref = parameters.get("fabric_ref")
        return {"ref": str(ref), "parameter": "fabric_ref"} if ref not in (None, "") else None
