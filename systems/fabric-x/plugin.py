"""fabric-x's hooks (harness/systems.py): the store's samples, the load's record, the committed rate,
and the independent check of the store's codes (systems/fabric-x/README.md)."""

from harness.plugin_api import IndependentCheck, Metric, SystemPlugin, Table

from . import store


class Plugin(SystemPlugin):
    def role_variables(self, parameters: dict) -> dict:
        return {"fabric_x_loadgen_invalid_signatures": float(parameters.get(store.INVALID_SIGNATURES, 0) or 0)}

    def tables(self) -> list[Table]:
        return [Table("store_samples", ("t_ns", "committed", "total")),
                Table("loadgen_run", ("start_ns", "end_ns", "transactions", "exit_status"))]

    def metrics(self) -> list[Metric]:
        return [Metric("committed_tps", "tx/s", ("store_samples", "loadgen_run"), store.committed_tps,
                       "transactions Fabric-X's committer records as COMMITTED in its store (tx_status) per second "
                       "over the measured window (the load's first to its last commit, sampled every 0.25 s)")]

    def independent_checks(self) -> list[IndependentCheck]:
        return [IndependentCheck("fabric-x-store",
                                 "the store's per-transaction codes against the sidecar's blocks with statuses "
                                 "(as the load generator received them) and the load it was asked to send",
                                 store.check)]
