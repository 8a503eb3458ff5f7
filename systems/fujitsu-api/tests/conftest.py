"""The Fujitsu paper's tests import its modules as the harness does, from its plugin package
``fabricrepro_systems.fujitsu_api`` (harness/systems.py), which loading the plugin registers."""

from harness.systems import plugin_class

plugin_class("fujitsu-api")
