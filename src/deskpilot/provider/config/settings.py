"""ProviderConfig: endpoint, model, key and runtime policy, validated before any request."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from deskpilot.provider.config.files import config_path, parse_config_file
from deskpilot.provider.config.keystore import key_from_env, load_stored_key
from deskpilot.provider.config.profiles import DEFAULT_PROFILE, ENV_PREFIX
from deskpilot.provider.config.runtime_policy import RuntimePolicy, check_profile, resolve_policy
from deskpilot.provider.contract import ProviderError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def check_base_url(url: str) -> str:
    """The base URL ends before ``/chat/completions``; the transport appends it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ProviderError("configuration_invalid", "base URL must be an http(s) URL")
    path = parts.path.rstrip("/")
    for suffix in ("/chat/completions", "/responses", "/completions", "/messages"):
        if path.endswith(suffix):
            raise ProviderError(
                "configuration_invalid",
                f"base URL must not end with {suffix}; give the API root (e.g. …/v1)",
            )
    if parts.query or parts.fragment:
        raise ProviderError("configuration_invalid", "base URL must not carry a query or fragment")
    return url.rstrip("/")


@dataclass(frozen=True)
class ProviderConfig:
    """What the provider needs to talk to one OpenAI-compatible ``/chat/completions`` endpoint."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    profile: str = DEFAULT_PROFILE
    policy: RuntimePolicy | None = None
    debug_path: Path | str | None = None  # a str is converted to Path on construction
    temperature: float | None = None
    json_object_hint: bool = True
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", check_base_url(self.base_url))
        if not self.model.strip():
            raise ProviderError("configuration_invalid", "model must not be empty")
        check_profile(self.profile)
        if self.policy is None:
            object.__setattr__(self, "policy", RuntimePolicy.for_profile(self.profile))
        if self.debug_path is not None:
            if not isinstance(self.debug_path, str | os.PathLike) or not str(self.debug_path):
                raise ProviderError("configuration_invalid", "debug_path must be a str or Path")
            object.__setattr__(self, "debug_path", Path(self.debug_path).expanduser())
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise ProviderError("configuration_invalid", "temperature must be within 0..2")

    @property
    def limits(self) -> RuntimePolicy:
        assert self.policy is not None  # set in __post_init__
        return self.policy

    @property
    def endpoint(self) -> str:
        return self.base_url + "/chat/completions"

    def require_key(self) -> str:
        if not self.api_key:
            raise ProviderError(
                "api_key_missing",
                "no API key: run `deskpilot provider configure` or set DESKPILOT_PROVIDER_API_KEY",
            )
        return self.api_key

    def describe(self) -> dict[str, Any]:
        """A JSON-safe summary without the key."""
        return {
            "baseUrl": self.base_url,
            "endpoint": self.endpoint,
            "model": self.model,
            "profile": self.profile,
            "apiKey": "set" if self.api_key else "missing",
            "limits": self.limits.as_dict(),
            "debugPath": str(self.debug_path) if self.debug_path else None,
            "sources": dict(self.sources),
        }


def _debug_path(env: Mapping[str, str], file_debug: Any) -> Path | None:
    raw = env.get(ENV_PREFIX + "DEBUG")
    path_env = env.get(ENV_PREFIX + "DEBUG_PATH")
    default = Path(env.get("HOME", str(Path.home()))) / "tmp" / "deskpilot-provider-debug.jsonl"
    if raw is not None:
        value = raw.strip().lower()
        if value not in _TRUE | _FALSE:
            raise ProviderError("configuration_invalid", f"{ENV_PREFIX}DEBUG must be 0 or 1")
        if value in _FALSE:
            return None
        return Path(path_env) if path_env else default
    if isinstance(file_debug, str) and file_debug:
        return Path(file_debug)
    if file_debug is True:
        return Path(path_env) if path_env else default
    return None


def load_config(
    env: Mapping[str, str] | None = None,
    *,
    path: Path | None = None,
    require_key: bool = False,
    **overrides: Any,
) -> ProviderConfig:
    """Config file < environment < keyword overrides; any invalid value fails closed here."""
    env = dict(os.environ) if env is None else dict(env)
    path = path or config_path(env)
    data, _ = parse_config_file(path)
    sources: dict[str, str] = {}

    def pick(key: str, file_key: str, env_name: str) -> str | None:
        if key in overrides and overrides[key] is not None:
            sources[key] = "explicit"
            return str(overrides.pop(key))
        overrides.pop(key, None)
        if env.get(env_name, "").strip():
            sources[key] = f"env:{env_name}"
            return env[env_name].strip()
        if file_key in data:
            sources[key] = "file"
            return str(data[file_key])
        return None

    base_url = pick("base_url", "baseUrl", ENV_PREFIX + "BASE_URL")
    model = pick("model", "model", ENV_PREFIX + "MODEL")
    profile = pick("profile", "profile", ENV_PREFIX + "PROFILE") or DEFAULT_PROFILE
    if base_url is None:
        raise ProviderError(
            "configuration_invalid",
            "no base URL: run `deskpilot provider configure` or set DESKPILOT_PROVIDER_BASE_URL",
        )
    if model is None:
        raise ProviderError(
            "configuration_invalid",
            "no model: run `deskpilot provider configure` or set DESKPILOT_PROVIDER_MODEL",
        )
    policy, policy_sources = resolve_policy(
        profile, env=env, file_limits=data.get("limits"), overrides=overrides.pop("limits", None)
    )
    key, key_source = key_from_env(env)
    if key is None:
        key, key_source = load_stored_key(data.get("keyStorage"), env)
    if key_source:
        sources["api_key"] = key_source
    sources.update({f"limits.{k}": v for k, v in policy_sources.items()})
    config = ProviderConfig(
        base_url=base_url,
        model=model,
        api_key=key,
        profile=profile,
        policy=policy,
        debug_path=_debug_path(env, data.get("debug")),
        sources=sources,
        **overrides,
    )
    if require_key:
        config.require_key()
    return config
