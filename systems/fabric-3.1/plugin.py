"""Fabric v3.1 (and v2.5, which extends it): no hooks yet. The network's configuration by release is
network.py; the smoke driver smoke.py; no catalogue driver runs these systems yet (issue 33)."""

from harness.plugin_api import SystemPlugin


class Plugin(SystemPlugin):
    pass
