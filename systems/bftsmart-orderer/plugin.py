"""The BFT-SMaRt ordering service's hooks (harness/systems.py): the tables parsed from its programs' logs
and their metrics, and the report's Eq. 1 and Fig. 7 parts (its roles' variables: its table, system.yaml)."""

from harness.plugin_api import IndependentCheck, Metric, SystemPlugin, Table, percentile

from . import ant_build, evidence, logs, microbench, model


class Plugin(SystemPlugin):
    def tables(self) -> list[Table]:
        return [Table(name, parse=parse) for name, parse in logs.TABLES.items()]

    def metrics(self) -> list:
        return [
            Metric("orderer_throughput_tps", "tx/s", ("bft_throughput",),
                   lambda bft_throughput: logs.rate(bft_throughput, "envelopes"),
                   "envelopes ordered per second at node 0, the leader (its throughput log; seed 004 line 147)"),
            Metric("delivered_envelopes_tps", "tx/s", ("bft_latency",), logs.delivered_rate,
                   "envelopes per second in the blocks the slowest receiver got from a reply quorum (its latency log's "
                   "block numbers x the block size, over its first to last block's arrival): what the service "
                   "delivered, where node 0's log counts what it ordered"),
            Metric("blocks_per_s", "blocks/s", ("bft_throughput",),
                   lambda bft_throughput: logs.rate(bft_throughput, "blocks"),
                   "blocks made and signed per second at node 0, the leader (its throughput log)"),
            Metric("signatures_per_s", "signatures/s", ("bft_signatures",),
                   lambda bft_signatures: float(bft_signatures["per_s"].median()),
                   "median of TestSignatures' per-interval ECDSA signature rates"),
            Metric("signed_envelopes_per_s", "envelopes/s", ("bft_signatures",),
                   lambda bft_signatures: float(bft_signatures["per_s"].median() * bft_signatures["block_size"].iloc[0]),
                   "signing capacity TP_sign x block size (Eq. 1): the median signature rate times TestSignatures' "
                   "block size"),
            *(Metric(f"envelope_latency_p{q}_ms", "ms", ("bft_latency",),
                     (lambda bft_latency, q=q: percentile(bft_latency["latency_ms"], q)),
                     f"{q}th percentile of WorkloadClient's envelope latency (submission to the block's arrival)")
              for q in (50, 90, 99)),
            *(Metric(f"frontend_latency_p{q}_ms", "ms", ("bft_frontend_latency",),
                     (lambda bft_frontend_latency, q=q: logs.frontend_latency(bft_frontend_latency, f"p{q}_ms")),
                     f"TestNodes' {q}th percentile latency (submission to the block at that frontend), "
                     "mean over its reports, then over frontends (Fig. 7; per region: table bft_frontend_latency)")
              for q in (50, 90, 95)),
            Metric("tx_latency_percentiles_ms", "ms", ("bft_frontend_latency",),
                   lambda bft_frontend_latency: logs.frontend_percentiles(bft_frontend_latency),
                   "Fig. 7's latency set in one number per point: each frontend's mean median, 90th and 95th "
                   "percentile latency (TestNodes' reports), averaged over the percentiles and then over the "
                   "frontends (each counts once); a WHEAT / BFT-SMaRt ratio of it per block size is what the "
                   "claim 'up to 45% less' reduces over the sweep (the report part shows every cell)"),
        ]

    def report_parts(self) -> dict:
        return {"bftsmart-bound": model.report_blocks, "bftsmart-geo": model.geo_blocks}

    def independent_checks(self) -> list[IndependentCheck]:
        # bft-ordering (Fig. 6) and bft-geo (Fig. 7); signature-bench counts no transactions (evidence.py)
        return list(evidence.CHECKS)

    def commands(self) -> list:
        return [microbench.COMMAND]

    def build_kinds(self) -> dict:
        return {**super().build_kinds(), ant_build.NAME: ant_build.KIND}
