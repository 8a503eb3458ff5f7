"""FastFabric's hooks (harness/systems.py), on top of Fabric 1.2's."""

from harness.plugin_api import SystemPlugin, Table

from . import logs


class Plugin(SystemPlugin):  # over fabric-1.2's (system.yaml extends)
    def role_variables(self, parameters: dict) -> dict:
        out = super().role_variables(parameters)
        # FastFabric's go-routine counts (Figs. 7, 8), where the experiment sets them.
        if "block_pipeline_goroutines" in parameters:
            out["fastfabric_peerbench_pipeline"] = int(parameters["block_pipeline_goroutines"])
        if "tx_validation_goroutines" in parameters:
            out["fastfabric_peerbench_tx_threads"] = int(parameters["tx_validation_goroutines"])
        # The orderer experiment (Fig. 4): the payload every envelope is padded to.
        if "payload_kb" in parameters:
            out["fastfabric_broadcast_payload_bytes"] = int(float(parameters["payload_kb"]) * 1024)
        # The published peer benchmark takes the settings of Fabric 1.2's (fabric_peerbench_*, its plugin),
        # but its own go-routine counts (above); its blocks, block size and time limit, the orderer's block size,
        # the clients' transfers and time limit and the deliver client's CPUs come from the system's table
        # (system.yaml variables).
        out.update({"fast" + name: value for name, value in out.items() if name.startswith("fabric_peerbench_")
                    and name != "fabric_peerbench_tx_threads"})
        # Table I's streams: those Fabric 1.2's column gives our load generator (fastfabric-end-to-end.yml).
        if "loadgen_streams" in parameters:
            out["fastfabric_broadcast_point_streams"] = int(parameters["loadgen_streams"])
        return out

    def tables(self) -> list[Table]:
        # Fig. 3's deliveries from FastFabric's second deliver client (its reader's log)
        return [*super().tables(), Table("deliveries", parse=lambda d: logs.point_tables(d).get("deliveries"))]
