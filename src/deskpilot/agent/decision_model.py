"""The decision model: the configured OpenAI-compatible endpoint, as a ``Provider`` sized for
deciding desktop actions. Written once, used by the delegated-task operator (runtime) and by
deskpilot's own agent loop.

A desktop state is a tree of up to 48,000 UTF-16 units plus its header; the provider's default
per-result budget (20,000 characters on the reliability profile) would cut it. So the limits
here are raised to hold a whole state (and a few of them in history): a tree is never cut
silently, and when the host itself trims a tree it says so with its own marker. Every decision
tool is offered (selection never drops an action the loop relies on).

A missing or broken configuration is ``decision_model_error`` with the command that fixes it;
the key never appears in a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.provider import Provider, ProviderConfig, ProviderError, load_config

#: one full state (48,000-unit tree + header, with room) per tool result
STATE_RESULT_CHARS = 64_000
#: the newest states the model keeps seeing; older results are replaced by an omission marker
STATE_HISTORY_CHARS = 200_000
#: room for every decision tool (the atomic actions and the loop's own decisions)
DECISION_MAX_TOOLS = 32

FIX_HINT = (
    "configure the decision model with `deskpilot provider configure` (or set "
    "DESKPILOT_PROVIDER_BASE_URL, DESKPILOT_PROVIDER_MODEL and DESKPILOT_PROVIDER_API_KEY), "
    "then check it with `deskpilot provider health`"
)


def decision_limits(config: ProviderConfig, max_tools: int = DECISION_MAX_TOOLS) -> dict[str, int]:
    """The configured limits, raised where a desktop state needs more room; ``max_tools`` is
    how many tools one request may show (the operator shows all of its few; the agent clips
    its many, keeping its core pinned)."""
    limits = config.limits.as_dict()
    limits["max_tool_result_chars"] = max(limits["max_tool_result_chars"], STATE_RESULT_CHARS)
    limits["max_tool_history_chars"] = max(
        limits["max_tool_history_chars"], STATE_HISTORY_CHARS, limits["max_tool_result_chars"]
    )
    limits["max_tools"] = max_tools
    return limits


def load_decision_config(
    env: Mapping[str, str] | None = None, *, max_tools: int = DECISION_MAX_TOOLS
) -> ProviderConfig:
    """The configured profile with decision-sized limits, or ``decision_model_error``."""
    try:
        base = load_config(env, require_key=True)
        return load_config(env, require_key=True, limits=decision_limits(base, max_tools))
    except ProviderError as err:
        raise DeskpilotError(
            ErrorCode.DECISION_MODEL_ERROR,
            f"no usable decision model ({err.code}): {FIX_HINT}",
            details={"cause": err.code},
        ) from None


def open_decision_model(env: Mapping[str, str] | None = None, **kwargs: Any) -> Provider:
    """A provider on the configured decision model (the caller closes it)."""
    return Provider(load_decision_config(env), **kwargs)
