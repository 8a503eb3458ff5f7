"""The validation-phase paper's hooks (harness/systems.py), on top of the Fabric 1.x roles' variables:
the peer's phase log and its metrics, the breakdown figure, and CouchDB's release build."""

from harness.plugin_api import Metric, SystemPlugin, Table

from . import couchdb_release, phase_figures, phase_metrics


class Plugin(SystemPlugin):  # over fabric-1.2's (system.yaml extends)
    def tables(self) -> list[Table]:
        # the peer's phase log (patches/0003)
        return [*super().tables(),
                Table("phases", ("block_number", "tx_count", "valid_count", "received_ns", "committed_ns", "vscc_ns",
                                 "statedb_read_ns", "mvcc_ns", "ledger_write_ns", "statedb_write_ns",
                                 "history_write_ns", "others_ns", "vsc_statedb_read_ns", "ledger_statedb_write_ns"))]

    def metrics(self) -> list:
        return [*super().metrics(), *(Metric(*spec) for spec in phase_metrics.PHASE_METRICS)]

    def report_parts(self) -> dict:
        return {**super().report_parts(), "phase-breakdown": phase_figures.report_blocks}

    def build_kinds(self) -> dict:
        return {**super().build_kinds(), couchdb_release.NAME: couchdb_release.KIND}
