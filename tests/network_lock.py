"""The machine's network lock (harness/machine_lock.py) for a fixture wider than one test that starts a network.

The root conftest's autouse fixture takes the lock around each test marked ``network``, but pytest sets up
a module- or session-scoped fixture before that function-scoped one: such a fixture takes the lock itself,
with ``network_lock(request.config)``, around its runs only (the lock is re-entrant within a process, so
the test's own hold inside it is free).
"""

from __future__ import annotations

from contextlib import contextmanager

from harness import machine_lock


@contextmanager
def network_lock(config):
    """Hold the machine's network lock (FABRICREPRO_NETWORK_LOCK; none when empty, or when an ancestor of
    pytest holds it: pytest wrapped in ``flock``) for the block."""
    with machine_lock.machine(f"pytest fixture ({config.rootpath.name})"):
        yield
