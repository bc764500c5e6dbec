"""Provider configuration: profiles, bounded runtime policy, config file and key storage."""

from deskpilot.provider.config.runtime_policy import RuntimePolicy, resolve_policy
from deskpilot.provider.config.settings import ProviderConfig, load_config

__all__ = ["ProviderConfig", "RuntimePolicy", "load_config", "resolve_policy"]
