"""Resolve the runtime policy from profile, file and environment; fail closed on any bad value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from deskpilot.provider.config.profiles import (
    DEFAULT_PROFILE,
    ENV_PREFIX,
    KNOB_BY_FIELD,
    KNOBS,
    PROFILES,
)
from deskpilot.provider.contract import ProviderError

_INT = re.compile(r"^\s*\d+\s*$")


@dataclass(frozen=True, slots=True)
class RuntimePolicy:
    """Every bounded number the provider uses; build it with :func:`resolve_policy`."""

    max_tools: int
    max_tool_result_chars: int
    max_tool_history_chars: int
    max_output_tokens: int
    max_response_bytes: int
    request_attempts: int
    per_attempt_timeout_ms: int
    total_deadline_ms: int
    retry_delay_ms: int
    retry_max_delay_ms: int
    retry_jitter_ms: int
    retry_after_max_ms: int
    max_empty_recoveries: int
    max_format_recoveries: int
    max_final_recoveries: int
    max_repeated_call_recoveries: int
    max_repair_recoveries_total: int
    max_total_recoveries: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def bounds(self) -> dict[str, Any]:
        """The numbers a run's behaviour depends on, for its runtime fingerprint (the smoke
        summary compares them across runs): timeouts, output and result limits, recovery
        limits. Retry pacing is left out: it changes timing, not what the model sees."""
        return {
            "perAttemptTimeoutMs": self.per_attempt_timeout_ms,
            "totalDeadlineMs": self.total_deadline_ms,
            "maxOutputTokens": self.max_output_tokens,
            "maxToolResultChars": self.max_tool_result_chars,
            "maxToolHistoryChars": self.max_tool_history_chars,
            "maxTools": self.max_tools,
            "requestAttempts": self.request_attempts,
            "recoveryLimits": {
                k: v for k, v in self.as_dict().items() if k.startswith("max_") and "recover" in k
            },
        }

    @classmethod
    def for_profile(cls, profile: str = DEFAULT_PROFILE, **overrides: int) -> RuntimePolicy:
        policy, _ = resolve_policy(profile, overrides=overrides)
        return policy


def _invalid(message: str, **detail: Any) -> ProviderError:
    return ProviderError("configuration_invalid", message, detail=detail)


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise _invalid(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile


def _parse_env_int(name: str, raw: str) -> int:
    if not _INT.match(raw):
        raise _invalid(f"{name} must be a non-negative integer", variable=name)
    return int(raw)


def _env_value(env: Mapping[str, str], knob_env: str, legacy: tuple[str, ...]) -> tuple[int, str]:
    """Canonical and legacy names may both be set only if they agree."""
    found: list[tuple[str, int]] = []
    for suffix in (knob_env, *legacy):
        name = ENV_PREFIX + suffix
        if name in env and env[name].strip() != "":
            found.append((name, _parse_env_int(name, env[name])))
    if len({v for _, v in found}) > 1:
        raise _invalid(
            "conflicting values for " + " and ".join(n for n, _ in found),
            variables=[n for n, _ in found],
        )
    return found[0][1], "env:" + found[0][0]


def resolve_policy(
    profile: str = DEFAULT_PROFILE,
    *,
    env: Mapping[str, str] | None = None,
    file_limits: Mapping[str, Any] | None = None,
    overrides: Mapping[str, int] | None = None,
) -> tuple[RuntimePolicy, dict[str, str]]:
    """Profile defaults < config file ``limits`` < environment < explicit overrides.

    Returns the policy and, per field, where its value came from (for telemetry and
    ``configure --json``).
    """
    check_profile(profile)
    env = env or {}
    values: dict[str, int] = {}
    sources: dict[str, str] = {}
    for knob in KNOBS:
        values[knob.field] = knob.default_for(profile)
        sources[knob.field] = f"profile:{profile}"
    for key, value in (file_limits or {}).items():
        if key not in KNOB_BY_FIELD:
            raise _invalid(f"unknown limit {key!r} in the config file", field=key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid(f"limit {key!r} in the config file must be an integer", field=key)
        values[key] = value
        sources[key] = "file"
    for knob in KNOBS:
        names = [ENV_PREFIX + s for s in (knob.env, *knob.legacy)]
        if any(n in env and env[n].strip() for n in names):
            values[knob.field], sources[knob.field] = _env_value(env, knob.env, knob.legacy)
    for key, value in (overrides or {}).items():
        if key not in KNOB_BY_FIELD:
            raise _invalid(f"unknown limit {key!r}", field=key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid(f"limit {key!r} must be an integer", field=key)
        values[key] = value
        sources[key] = "explicit"
    _check_bounds(values, sources)
    policy = RuntimePolicy(**values)
    _check_combinations(policy)
    return policy, sources


def _check_bounds(values: Mapping[str, int], sources: Mapping[str, str]) -> None:
    for knob in KNOBS:
        value = values[knob.field]
        if not knob.low <= value <= knob.high:
            raise _invalid(
                f"{knob.field}={value} is outside {knob.low}..{knob.high} "
                f"(from {sources[knob.field]})",
                field=knob.field,
            )


def _check_combinations(p: RuntimePolicy) -> None:
    rules = (
        (p.total_deadline_ms >= p.per_attempt_timeout_ms, "total_deadline_ms < per_attempt"),
        (p.retry_max_delay_ms >= p.retry_delay_ms, "retry_max_delay_ms < retry_delay_ms"),
        (
            p.max_tool_history_chars >= p.max_tool_result_chars,
            "max_tool_history_chars < max_tool_result_chars",
        ),
        (
            p.max_total_recoveries >= p.max_repair_recoveries_total,
            "max_total_recoveries < max_repair_recoveries_total",
        ),
    )
    for ok, message in rules:
        if not ok:
            raise _invalid(f"contradictory limits: {message}")


POLICY_FIELDS = tuple(f.name for f in fields(RuntimePolicy))
