"""Fabric 1.2's hooks (harness/systems.py). The variables of the shared Fabric 1.x roles are its table
(``variables`` in system.yaml), which FastFabric and validation-opt inherit (``extends``)."""

from harness.plugin_api import SystemPlugin


class Plugin(SystemPlugin):
    def ordering_service(self, parameters: dict) -> str | None:
        # the roles' ordering service (fabric_crypto_orderer_type, system.yaml): Fabric 1.x's Solo or Kafka
        return {"solo": "Solo", "kafka": "Kafka"}.get(str(parameters.get("orderer_type", "solo")))

    def upstream_ref(self, parameters: dict) -> dict | None:
        # a user's own Fabric 1.x tag or commit (--set fabric_ref=v1.4.12): built from git in place of the recipe's
        # pin, its release (the Makefile's BASE_VERSION) checked against this system's lines 1.1-1.4
        # (harness/user_refs.py). FastFabric and validation-opt inherit it: there it names a commit of their own
        # repository, where a Fabric tag is refused by name.
        ref = parameters.get("fabric_ref")
        return {"ref": str(ref), "parameter": "fabric_ref"} if ref not in (None, "") else None
