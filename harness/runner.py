"""A point's role variables and its analysis once measured (harness/point_loop.py runs the points).

Drivers (the catalogue's ``driver`` field; each system declares how its builds
run them, see ``harness/builds.py``), e.g. for the reference build:

* ``committer-bench``: FastFabric's peer experiment. The ``crypto`` role makes
  identities and the genesis block; ``committerbench`` pre-generates blocks and
  feeds them to the committer, writing the per-block CSV.
* ``end-to-end``: ``crypto``, then ``orderer`` and ``peer`` started and ready,
  ``blockwatch`` started on the peer (recording every block from 1 on),
  ``loadgen`` phase ``setup`` deploys the chaincode and creates the accounts
  (waiting until they commit), then phase ``transfer`` pre-endorses and sends
  every measured transaction; the playbook waits until the blocks after the
  setup blocks carry every acknowledged transfer and writes the first measured
  block to ``measured.json``, which analysis uses to keep only transfer blocks.

While the driver's playbook runs, the point's watcher (``harness/watch.py``)
watches every component the process role started: one that exits with a
failure or logs a fatal line stops the playbook within seconds, naming
component, host and line. The phase (play, role and hosts, task or what a
waiting task reports) goes to ``progress``.

Whatever happens (failure, a component's death, timeout, Ctrl-C),
``teardown.yml`` stops every process by its PID file and fetches logs and raw
files into the point's directory (what the measured window collected is kept,
as ``partial_metrics``), and the point gets a ``summary.json`` saying how it ended.

The measuring (playbook, watcher, teardown, CPUs read back) is ``harness/measure.py``'s
(``measurement.json``), called by the one measuring loop (``harness/point_loop.py``) for ``invoke
reproduce`` and a kit's ``./kit/run`` alike; ``analyze_point`` collects and analyses what it left, as
each point ends in ``invoke reproduce`` or, for a measurement kit's run, after ``invoke ingest``
(harness/kit.py).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from . import analyze, systems
from .collect import convert_point
from .deploy import role_defaults
from .errors import HarnessError
# The measuring half (also a kit's target's); cpus_mismatch and controller_load_1min are named here too.
from .measure import read_measurement
from .plan import Point
from .timing import point_timing


def host_ports(components: list[str]) -> list[int]:
    """The ports the servers among ``components`` listen on: each role's ``<role>_port`` default,
    and its ``<role>_ports`` (a list, for a role whose servers listen on several, e.g. BFT-SMaRt's
    client and replica ports)."""
    ports = set()
    for c in components:
        doc = role_defaults(c)
        port = doc.get(f"{c}_port")
        if port is not None:
            ports.add(int(port))
        ports.update(int(p) for p in doc.get(f"{c}_ports") or [])
    return sorted(ports)


#: Point parameters that make a driver corrupt a share of its transactions (mutation tests).
MUTATIONS = ("corrupt_creator_fraction", "corrupt_endorsement_fraction", "stale_read_fraction")

#: The shared roles' (playbooks/roles) table, as each system's ``variables`` in its ``system.yaml``: the role
#: variables a parameter, or a count ``derived_counts`` makes of the parameters, sets. ``VARIABLES`` applies to
#: every point; ``WORKLOAD_VARIABLES`` to a point that runs a transaction-count workload (``transactions`` set).
VARIABLES = {"cpus": ["process_cpus"]}  # every component the process role starts runs on that many CPUs
WORKLOAD_VARIABLES = {
    "transactions": ["loadgen_transactions"],
    "payload_bytes": ["committerbench_payload_bytes", "loadgen_payload_bytes"],
    "seed": ["loadgen_seed"],
    "loadgen_streams": ["loadgen_streams"],
    "accounts": ["loadgen_accounts"],
    "last_block": ["blockwatch_stop_after"],
    "block_size": ["crypto_batch_size", "committerbench_block_size"],
    "batch_timeout_ms": ["crypto_batch_timeout_ms"],
    "point_timeout_s": ["committerbench_timeout_s", "loadgen_timeout_s", "blockwatch_timeout_s"],
    "blocks": ["committerbench_blocks"],
    # the load generator forges the endorsement of the first share of its transfers (docs/validity.md)
    "corrupt_endorsement_transactions": ["loadgen_forge_endorsement"],
}

#: The counts ``derived_counts`` makes, which a table may pass down as it does a parameter.
DERIVED = ("blocks", "accounts", "last_block", *(name.removesuffix("_fraction") + "_transactions" for name in MUTATIONS))


def _param(point: Point, name: str):
    try:
        return point.parameters[name]
    except KeyError:
        raise HarnessError(f"point {point.id}: parameter {name!r} is not set by the experiment, "
                           "its scale, the workload or the harness defaults") from None


def derived_counts(parameters: dict) -> dict:
    """The counts made of a point's parameters, computed here once for every table (``DERIVED``): ``blocks``,
    the pre-made blocks of ``transactions`` at ``block_size`` (the last one partial); ``accounts``, the two
    fresh accounts per transfer the setup creates (conflict-free transfers; a Caliper round reuses them);
    ``last_block``, the highest block a point's transfers can reach (``accounts`` and ``transactions`` at
    one per block after the chaincode's deploy block: the block watcher stops at it at the latest, as
    soon as every transfer has arrived, playbooks/roles/blockwatch/tasks/wait.yml); and per mutation kind
    ``<kind>_transactions``, the transfers a driver corrupts, ``<kind>_fraction`` of ``transactions`` (0 where
    the fraction is unset). None without ``transactions``."""
    if "transactions" not in parameters:
        return {}
    transactions = int(parameters["transactions"])
    out = {name.removesuffix("_fraction") + "_transactions": round(float(parameters.get(name, 0)) * transactions)
           for name in MUTATIONS}
    out["accounts"] = 2 * transactions
    out["last_block"] = 1 + out["accounts"] + transactions
    if "block_size" in parameters:
        out["blocks"] = math.ceil(transactions / int(parameters["block_size"]))
    return out


def role_variables(point: Point, companions: list[str] = (), systems_dir: Path | None = None) -> dict:
    """The role variables (docs in each role's defaults/main.yml) that a point's parameters set.

    The shared roles' (crypto, committer benchmark, load generator, block
    watcher), where the point runs a transaction-count workload, and the
    process role's; then those of its system's roles and its companions'
    (each system's table and plugin, harness/systems.py). The counts made of
    the parameters are made once (``derived_counts``) and passed to every table.
    """
    counts = derived_counts(point.parameters)
    out = workload_variables(point, counts) if "transactions" in point.parameters else {}
    out.update(systems.apply_table(VARIABLES, point.parameters))
    out.update(systems.role_variables([point.system, *companions], point.parameters, systems_dir, counts))
    return out


def workload_variables(point: Point, counts: dict) -> dict:
    """The shared roles' variables of a transaction-count workload.

    Every driver gets them all: the crypto role's, the committer benchmark's,
    and the load generator's and block watcher's (which the end-to-end drivers
    use). Only the shared roles (playbooks/roles) read them: a system's roles
    get theirs from its table and plugin, from the same parameters
    (tests/harness/test_config_owners.py). ``counts``: ``derived_counts`` of its parameters.
    """
    for name in ("transactions", "block_size", "batch_timeout_ms", "point_timeout_s", "payload_bytes", "seed",
                 "loadgen_streams"):   # the table's: an error naming the point where one is not set
        _param(point, name)
    return {**systems.apply_table(WORKLOAD_VARIABLES, {**counts, **point.parameters}),
            "loadgen_rate_tps": _param(point, "rate_tps"),
            # Mutation tests (docs/validity.md): the pre-made-block drivers corrupt these shares of the transfers.
            **{f"committerbench_{name}": float(point.parameters[name]) for name in MUTATIONS
               if name in point.parameters}}


def analyze_point(point_dir: Path) -> dict:
    """Collect a measured point (raw CSV -> parquet) and write its ``summary.json`` (metrics, validity,
    ``timing``) from its ``measurement.json``; return the summary. Where the point was measured does not
    matter: a kit's points are analysed here after ``invoke ingest``."""
    measured = read_measurement(point_dir)
    converting = time.monotonic()
    convert_point(point_dir)
    collect_s = time.monotonic() - converting
    wall_s = measured["measure_s"] + collect_s
    extra = {"duration_s": round(wall_s, 3), "log": measured["log"],
             "timing": point_timing(wall_s, measured["playbooks"], collect_s),
             "load_average_1min": measured["load_average_1min"],
             **{k: measured[k] for k in ("watch", "cpus") if k in measured}}
    point = json.loads((Path(point_dir) / "point.json").read_text(encoding="utf-8"))
    return analyze.point_summary(point_dir, point, measured["status"], measured["reason"], extra)
