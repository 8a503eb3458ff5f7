"""Fabric v3.1 (and v2.5, which extends it): the network's configuration by release is network.py; its
smoke, a command of this system (``invoke system-command --system fabric-3.1 --name smoke``), smoke.py;
the end-to-end driver (upstream.yaml ``drivers``) is playbooks/fabric3-end-to-end.yml over the roles
fabric3_network (whose files prepare.py writes before the playbook), fabric3_orderer, fabric3_peer, fabric3_chaincode."""

from harness.plugin_api import SystemPlugin

from . import catchup, logs, prepare, smoke
from . import endorsements
from . import ordering_bench
from . import validation_phases


class Plugin(SystemPlugin):
    def ordering_service(self, parameters: dict) -> str | None:
        # fabric3_network's consensus (role default etcdraft): Raft, or SmartBFT (v3.0 on)
        return {"etcdraft": "Raft", "BFT": "SmartBFT"}.get(str(parameters.get("ordering", "etcdraft")))

    def role_variables(self, parameters: dict) -> dict:
        # Caliper's round after the measured transfers (roles/fabric3_caliper; README "Caliper beside our
        # numbers"), not on a control point: its corrupted transfers are what its ledger must show invalid.
        # Its accounts and payload, and the network's, peer's and chaincode's settings: the table (system.yaml).
        rounds = int(parameters.get("caliper_transactions") or 0)
        control = any(float(parameters.get(m) or 0) > 0 for m in ("corrupt_creator_fraction",
                                                                  "corrupt_endorsement_fraction",
                                                                  "stale_read_fraction"))
        return {**super().role_variables(parameters),
                **({"fabric3_caliper_transactions": rounds} if rounds > 0 and not control else {})}

    def before_playbook(self, spec: dict, variables: dict, inventory: dict) -> dict:
        # the network's files on the controller, placed on the inventory's hosts (prepare.py)
        return prepare.before_playbook(spec, variables, inventory)

    def commands(self) -> list:
        return [smoke.COMMAND]

    def tables(self) -> list:
        # the peer's own per-block phase times (its log at INFO, no patch; logs.py)
        # and the committer-catchup driver's second peer's (catchup.py)
        # the peer's chaincode executions and the load generator's pre-endorsement (endorsements.py)
        return [*super().tables(), logs.PHASES_TABLE, catchup.CATCHUP_TABLE, *endorsements.TABLES,
                ordering_bench.CHAIN_TABLE]  # ordering-bench's delivered chain (ordering_bench.py)

    def metrics(self) -> list:
        # the v1.x phase metrics (vscc_ms, mvcc_ms, block_commit_ms, state_commit_ms) from that table
        # and Fig. 6's run_throughput_tps of the committer-catchup driver's second peer (catchup.py)
        # endorsement_throughput_tps and its companions (endorsements.py)
        return [*super().metrics(), *logs.METRICS, *catchup.METRICS, *endorsements.METRICS,
                *ordering_bench.METRICS,  # ordering-bench: delivered_envelopes_tps (ordering_bench.py)
                *validation_phases.METRICS]  # Javaid et al.'s phase metrics under validation-opt's names

    def independent_checks(self) -> list:
        # ordering-bench: an orderer's blocks carry no codes; its chain, envelopes and kept ledger (ordering_bench.py)
        return [*super().independent_checks(), *ordering_bench.CHECKS]

    def upstream_ref(self, parameters: dict) -> dict | None:
        # a user's own Fabric tag or commit (--set fabric_ref=v2.5.12): built from git in place of the recipe's
        # pin, its release checked against this system's line (harness/user_refs.py; README "Your own Fabric")
        ref = parameters.get("fabric_ref")
        return {"ref": str(ref), "parameter": "fabric_ref"} if ref not in (None, "") else None
