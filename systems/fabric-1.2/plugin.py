"""Fabric 1.2's hooks (harness/systems.py): the variables of the shared Fabric 1.x roles.

FastFabric and validation-opt extend this system (``extends`` in their ``system.yaml``)
and so inherit these variables.
"""

from harness.plugin_api import SystemPlugin


class Plugin(SystemPlugin):
    def role_variables(self, parameters: dict) -> dict:
        return {**super().role_variables(parameters),
                # Mutation tests (docs/validity.md): the load generator's bad creators and stale reads, counts of its
                # transfers as the core's loadgen_forge_endorsement is (harness/runner.py workload_variables).
                **({f"loadgen_{var}": round(float(parameters.get(name, 0)) * int(parameters["transactions"]))
                    for var, name in (("corrupt_creator", "corrupt_creator_fraction"), ("stale_read", "stale_read_fraction"))}
                   if "transactions" in parameters else {}),
                "fabric_crypto_orderer_type": parameters.get("orderer_type", "solo"),
                # VSCC goroutines per block (validation-opt's sweep); "" is Fabric's default, the CPU count.
                "fabric_peer_validator_pool_size": parameters.get("vscc_threads", ""),
                # The work check's negative control (docs/validity.md): the upstream peer benchmarks of
                # fabric-1.2 (patch 0005) and fastfabric (patch 0008) skip every signature verification.
                "committerbench_control_skip_signature_checks":
                    bool(parameters.get("control_skip_signature_checks", False))}
