"""fabric-x's hooks (harness/systems.py): the store's samples, the load's record, the committed rate,
and the independent check of the store's codes (systems/fabric-x/README.md)."""

from harness.plugin_api import IndependentCheck, Metric, SystemPlugin, Table

from . import arma_blocks, block_commits, go_vendor_build, store


class Plugin(SystemPlugin):
    def build_kinds(self) -> dict:
        # Arma's tree ships vendor/: built offline beside the committer (go_vendor_build.py)
        return {**super().build_kinds(), go_vendor_build.NAME: go_vendor_build.KIND}

    def role_variables(self, parameters: dict) -> dict:
        return {"fabric_x_loadgen_invalid_signatures": float(parameters.get(store.INVALID_SIGNATURES, 0) or 0),
                "fabric_x_loadgen_conflicts": float(parameters.get(store.CONFLICTS, 0) or 0)}

    def upstream_ref(self, parameters: dict) -> dict | None:
        # a user's own committer tag, branch or commit (--set fabric_x_ref=<ref>): built from git in place of the
        # recipe's pin, with its patches (harness/user_refs.py; README "Your own Fabric-X commit")
        ref = parameters.get("fabric_x_ref")
        return {"ref": str(ref), "parameter": "fabric_x_ref"} if ref not in (None, "") else None

    def tables(self) -> list[Table]:
        return [Table("store_samples", ("t_ns", "committed", "total")),
                Table("loadgen_run", ("start_ns", "end_ns", "transactions", "exit_status")),
                # each block's commit, as the load generator's log records its statuses (block_commits.py)
                Table(block_commits.TABLE, parse=block_commits.block_commits_table),
                # each block Arma's assembler appended (arma_blocks.py; end to end only)
                Table(arma_blocks.TABLE, parse=arma_blocks.arma_blocks_table)]

    def metrics(self) -> list[Metric]:
        return [Metric("committed_tps", "tx/s", ("store_samples", "loadgen_run"), store.committed_tps,
                       "transactions Fabric-X's committer records as COMMITTED in its store (tx_status) per second "
                       "over the measured window (the load's first to its last commit, sampled every 0.25 s)"),
                # Fig. 6's metric under the core's name, so that fig6-revisit-fabric-x's columns compare on one
                Metric("run_throughput_tps", "tx/s", (block_commits.TABLE, "block_txs", "loadgen_run"),
                       block_commits.run_throughput_tps,
                       "the load's transactions COMMITTED in Fabric-X's store per second from its first block's "
                       "commit to its last one's (the load generator's log lines of each block's statuses, whole ms; "
                       "the first block opens the interval, uncounted)"),
                Metric("arma_ordered_tps", "tx/s", (arma_blocks.TABLE, "block_txs", "loadgen_run"),
                       arma_blocks.arma_ordered_tps,
                       "the load's transactions per second as Arma's assembler appends their blocks, from the first "
                       "load block's append to the last one's (its log, whole ms; the first block opens the interval, "
                       "uncounted); end to end only"),
                # Table I's metric under the core's name, so that e2e-revisit-fabric-x's columns compare on one:
                # commit_throughput_tps's arithmetic (first block opens the interval) on the committer's blocks
                Metric("throughput_tps", "tx/s", (block_commits.TABLE, "block_txs", "loadgen_run"),
                       block_commits.run_throughput_tps,
                       "the load's transactions COMMITTED in Fabric-X's store per second between its blocks' commits "
                       "(the load generator's per-block status lines; the first block opens the interval), as "
                       "run_throughput_tps")]

    def independent_checks(self) -> list[IndependentCheck]:
        return [IndependentCheck("fabric-x-store",
                                 "the store's per-transaction codes against the sidecar's blocks with statuses "
                                 "(as the load generator received them) and the load it was asked to send",
                                 store.check)]
