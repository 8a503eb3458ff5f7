"""fabricrepro harness: reproduce the performance experiments of Hyperledger Fabric papers.

The lifecycle of one reproduction is a chain of plain functions, one module per
phase (see docs/architecture.md):

    catalogue -> plan -> providers -> deploy -> runner -> collect -> analyze -> report

with ``rundir`` owning the run directory (the contract between phases) and
``progress`` telling a person what is happening. ``tasks.py`` wraps these
functions as ``invoke`` tasks; tests call them directly.
"""

from pathlib import Path

#: Version of every file the harness persists (metadata.json, resolved.yaml,
#: parquet tables, summary.json). Readers reject versions they do not know.
SCHEMA_VERSION = 1

#: Root of the repository (the directory holding tasks.py).
REPO_ROOT = Path(__file__).resolve().parent.parent
