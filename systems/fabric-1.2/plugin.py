"""Fabric 1.2's hooks (harness/systems.py): the variables of the shared Fabric 1.x roles.

FastFabric and validation-opt extend this system (``extends`` in their ``system.yaml``)
and so inherit these variables.
"""

from harness.plugin_api import SystemPlugin


class Plugin(SystemPlugin):
    def ordering_service(self, parameters: dict) -> str | None:
        # the roles' ordering service (fabric_crypto_orderer_type below): Fabric 1.x's Solo or Kafka
        return {"solo": "Solo", "kafka": "Kafka"}.get(str(parameters.get("orderer_type", "solo")))

    def role_variables(self, parameters: dict) -> dict:
        # Fabric 1.2's peer benchmark (role fabric_peerbench, patches 0003-0005; FastFabric's fastfabric_peerbench
        # takes the same, its plugin): its VSCC goroutines, the shares of the transfers to corrupt (mutation
        # tests), the work check's negative control (docs/validity.md: fabric-1.2 patch 0005 and fastfabric 0008
        # skip every signature verification). Its blocks, block size and time limit, the orderer's block cutting
        # and the load generator's mutation counts come from the system's table (system.yaml variables).
        peerbench = {"tx_threads": parameters.get("vscc_threads", ""),
                     "control_skip_signature_checks": bool(parameters.get("control_skip_signature_checks", False)),
                     **{flag: float(parameters[f"{flag}_fraction"]) for flag in
                        ("corrupt_creator", "corrupt_endorsement", "stale_read") if f"{flag}_fraction" in parameters}}
        return {**super().role_variables(parameters),
                "fabric_crypto_orderer_type": parameters.get("orderer_type", "solo"),
                # VSCC goroutines per block (validation-opt's sweep); "" is Fabric's default, the CPU count.
                "fabric_peer_validator_pool_size": parameters.get("vscc_threads", ""),
                **{f"fabric_peerbench_{name}": value for name, value in peerbench.items()}}

    def upstream_ref(self, parameters: dict) -> dict | None:
        # a user's own Fabric 1.x tag or commit (--set fabric_ref=v1.4.12): built from git in place of the recipe's
        # pin, its release (the Makefile's BASE_VERSION) checked against this system's lines 1.1-1.4
        # (harness/user_refs.py). FastFabric and validation-opt inherit it: there it names a commit of their own
        # repository, where a Fabric tag is refused by name.
        ref = parameters.get("fabric_ref")
        return {"ref": str(ref), "parameter": "fabric_ref"} if ref not in (None, "") else None
