"""Providers make a run's hosts and describe them as an Ansible inventory; deployment is the same for all.

``local`` runs every role on this machine, ``netns`` on network-namespace hosts
of this machine reached over SSH (see base.py for the interface).
"""

from ..errors import choose
from .base import Provider
from .local import LocalProvider
from .netns import NetnsProvider

PROVIDERS: dict[str, type[Provider]] = {p.name: p for p in (LocalProvider, NetnsProvider)}


def get_provider(name: str, **kwargs) -> Provider:
    """An instance of the provider ``name``; an unknown name lists the valid ones."""
    return PROVIDERS[choose("provider", name, PROVIDERS)](**kwargs)
