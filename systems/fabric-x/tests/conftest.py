"""fabric-x's tests import its modules as the harness does, from its plugin package
``fabricrepro_systems.fabric_x`` (harness/systems.py), which loading the plugin registers."""

from harness.systems import plugin_class

plugin_class("fabric-x")
