"""The decision model the ``operator`` agent uses, as the environment of ``deskpilot run``.

Resolved once in the eval's own process (the person's profile, config file and variables,
``--provider PROFILE`` choosing the profile) and handed to each task as variables: a task's
data dir and config home are fresh, so no config file would be found there.
"""

from __future__ import annotations

from collections.abc import Mapping

from deskpilot.provider import ProviderConfig, load_config
from deskpilot.provider.config.profiles import ENV_PREFIX, KNOBS

PROFILE_ENV = ENV_PREFIX + "PROFILE"


def resolve_provider(env: Mapping[str, str], profile: str | None) -> ProviderConfig:
    """The configured endpoint; raises ``ProviderError`` when none is usable."""
    chosen = dict(env)
    if profile is not None:
        chosen[PROFILE_ENV] = profile
    return load_config(chosen, require_key=True)


def provider_env(config: ProviderConfig) -> dict[str, str]:
    env = {ENV_PREFIX + k.env: str(getattr(config.limits, k.field)) for k in KNOBS}
    env.update(
        {
            ENV_PREFIX + "BASE_URL": config.base_url,
            ENV_PREFIX + "MODEL": config.model,
            ENV_PREFIX + "PROFILE": config.profile,
        }
    )
    if config.api_key:
        env[ENV_PREFIX + "API_KEY"] = config.api_key
    return env
