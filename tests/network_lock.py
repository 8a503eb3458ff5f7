"""The machine's network lock (the root conftest.py) for a fixture wider than one test that starts a network.

The root conftest's autouse fixture takes the lock around each test marked ``network``, but pytest sets up
a module- or session-scoped fixture before that function-scoped one: such a fixture takes the lock itself,
with ``network_lock(request.config)``, around its runs only. (A flock is not re-entrant across open files:
held across the fixture's yield, the test's own fixture would wait for it forever.)
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@contextmanager
def network_lock(config):
    """Hold the lock the root conftest.py names (FABRICREPRO_NETWORK_LOCK; none when empty, or when an
    ancestor of pytest holds it: pytest wrapped in ``flock``)."""
    root = config.pluginmanager.get_plugin(str(ROOT_CONFTEST))
    assert root is not None, f"{ROOT_CONFTEST} is not loaded: run pytest from the repository"
    if not root.NETWORK_LOCK or root._held_by_an_ancestor(Path(root.NETWORK_LOCK)):
        yield
        return
    with root.file_lock(Path(root.NETWORK_LOCK)):  # the lock function the root conftest takes it with
        yield
