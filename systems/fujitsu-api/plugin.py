"""The Fujitsu paper's hooks (harness/systems.py): Fabric v0.6.1's roles, its chaincode message
table and metrics, Fig. 2's breakdown and the judgements of Sec. 5."""

from harness.plugin_api import IndependentCheck, Metric, SystemPlugin, Table

from . import chaincode_timing, evidence, figures


class Plugin(SystemPlugin):
    def tables(self) -> list[Table]:
        # Fabric v0.6.1's peer<->chaincode messages (patches/0003)
        return [Table("cc_messages", ("side", "event", "type", "tx_id", "unix_ns"),
                      strings=frozenset({"side", "event", "type", "tx_id"})),
                # every peer's height and balances after the run, read apart from the client (evidence.py)
                Table(evidence.STATES_TABLE, ("peer", "height", "balance_a", "balance_b"), strings=frozenset({"peer"}))]

    def metrics(self) -> list:
        return [Metric(*spec) for spec in chaincode_timing.CHAINCODE_METRICS]

    def report_parts(self) -> dict:
        return {"chaincode-breakdown": figures.breakdown_blocks,
                "nodes-like-one": figures.judge_nodes,
                "latency-advantage": figures.judge_latency}

    def independent_checks(self) -> list[IndependentCheck]:
        return list(evidence.CHECKS)
