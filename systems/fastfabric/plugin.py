"""FastFabric's hooks (harness/systems.py), on top of Fabric 1.2's (its roles' variables: its table, system.yaml)."""

from harness.plugin_api import SystemPlugin, Table

from . import logs


class Plugin(SystemPlugin):  # over fabric-1.2's (system.yaml extends)
    def tables(self) -> list[Table]:
        # Fig. 3's deliveries from FastFabric's second deliver client (its reader's log)
        return [*super().tables(), Table("deliveries", parse=lambda d: logs.point_tables(d).get("deliveries"))]
