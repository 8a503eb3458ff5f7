"""Mitogen's linear strategy without Mitogen's CPU pinning (harness/deploy.py ansible_strategy).

Mitogen pins its own processes to CPUs, and on a machine of 2 or 3 CPUs it
keeps CPU 0 for its connection multiplexer: every other process it starts,
the local connection's interpreter included, may run only on the CPUs left.
Each component the process role started inherited that mask, so on 2 cores
every point ran on one CPU (the points' affinity_*.csv said "1"): Table I's
Fabric 1.2 point measured 996 tx/s against 1,968 with Ansible's own strategy.
Here Mitogen's policy is its no-op base class, so the components run on the
CPUs the harness itself may use, as with Ansible's own strategy.
"""

from __future__ import annotations

import ansible_mitogen.affinity

# Before the strategy starts its processes: they look the policy up when they assign themselves.
ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

import ansible_mitogen.loaders  # noqa: E402
import ansible_mitogen.strategy  # noqa: E402

_Linear = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, _Linear):
    """Ansible's linear strategy on Mitogen's connections, no CPU pinning."""
