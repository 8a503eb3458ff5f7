"""validation-opt's tests import its modules as the harness does, from its plugin package
``fabricrepro_systems.validation_opt`` (harness/systems.py), which loading the plugin registers."""

from harness.systems import plugin_class

plugin_class("validation-opt")
