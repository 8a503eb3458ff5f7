"""Providers make a run's hosts and describe them as an Ansible inventory; deployment is the same for all.

``local`` runs every role on this machine, ``netns`` on network-namespace hosts
of this machine reached over SSH, ``ssh`` on the user's servers listed in an
inventory, ``aws`` on EC2 instances that Terraform makes for the run (see
base.py for the interface, docs/providers.md for their use).
"""

from ..errors import choose
from .base import Provider
from .aws import AwsProvider
from .local import LocalProvider
from .netns import NetnsProvider
from .ssh import SshProvider

PROVIDERS: dict[str, type[Provider]] = {p.name: p for p in (LocalProvider, NetnsProvider, SshProvider, AwsProvider)}

#: The providers whose hosts are this machine: its CPUs, memory, kernel and filesystem.
THIS_MACHINE = (LocalProvider.name, NetnsProvider.name)


def get_provider(name: str, **kwargs) -> Provider:
    """An instance of the provider ``name``; an unknown name lists the valid ones."""
    return PROVIDERS[choose("provider", name, PROVIDERS)](**kwargs)
