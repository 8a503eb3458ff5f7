"""Providers produce an Ansible inventory of hosts; deployment is the same for all of them.

Add a provider by subclassing ``Provider`` and registering it in ``PROVIDERS``
(``netns``, ``ssh`` and ``aws`` are planned, see ARCHITECTURE).
"""

from ..errors import choose
from .base import Provider
from .local import LocalProvider

PROVIDERS: dict[str, type[Provider]] = {LocalProvider.name: LocalProvider}


def get_provider(name: str, **kwargs) -> Provider:
    """An instance of the provider ``name``; an unknown name lists the valid ones."""
    return PROVIDERS[choose("provider", name, PROVIDERS)](**kwargs)
