"""Fixtures shared by the test folders under tests/ (the network lock's fixture is the root conftest.py's)."""

from contextlib import nullcontext

import pytest

from tests.network_lock import network_lock


@pytest.fixture(scope="session")
def lab_run(tmp_path_factory):
    """``lab_run("02")``: the directory where lab 02's commands (labs/02-*.md, "## Run it") put their run
    store and reports, and each command's completed process; the commands run the first time a test asks,
    as tests/labs/test_labs.py runs them, and once per session: test_labs.py asserts what each lab shows,
    tests/harness/test_verify_stored_run.py tampers with copies of the runs of labs 01 and 02, and
    tests/upstream/test_validity_mutations.py reads the control points of labs 01 and 05.

    The commands start networks: a test marked ``network`` calls it holding the network lock; a fixture
    wider than a test passes its ``request.config`` as ``config``, and the commands (if they have not run
    yet) run under the lock (tests/network_lock.py)."""
    from tests.labs.test_labs import _lab, _run, commands
    done: dict[str, tuple] = {}

    def run(prefix: str, config=None):
        if prefix not in done:
            where = tmp_path_factory.mktemp(f"lab{prefix}")
            try:
                with network_lock(config) if config is not None else nullcontext():
                    done[prefix] = (where, [_run(cmd, where) for cmd in commands(_lab(prefix))])
            except AssertionError as e:  # a failed command fails every test that reads it, without a re-run
                done[prefix] = e
                raise
        if isinstance(done[prefix], AssertionError):
            pytest.fail(f"lab {prefix}'s commands failed earlier in this session:\n{done[prefix]}")
        return done[prefix]
    return run
