"""Everything a turn needs before the first request: selection, prompt, lookup tables."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from deskpilot.provider.contract import ProviderError
from deskpilot.provider.protocol import ChatMessage, system_prompt
from deskpilot.provider.tools import Selection, ToolSpec, select_tools


@dataclass(frozen=True)
class PreparedTurn:
    selection: Selection
    tools: dict[str, ToolSpec]
    system: str
    latest_user: str
    plan_mode: bool

    @property
    def selected(self) -> tuple[ToolSpec, ...]:
        return self.selection.selected


def prepare_turn(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec],
    *,
    max_tools: int,
    plan_mode: bool = False,
    only: Sequence[str] | None = None,
    pinned: Collection[str] = (),
) -> PreparedTurn:
    if not messages:
        raise ProviderError("invalid_input", "a turn needs at least one message")
    by_name: dict[str, ToolSpec] = {}
    for tool in tools:
        if tool.name in by_name:
            raise ProviderError("invalid_input", f"duplicate tool name {tool.name!r}")
        by_name[tool.name] = tool
    user_texts = [m.content for m in messages if m.role == "user"]
    selection = select_tools(tools, user_texts, max_tools=max_tools, only=only, pinned=pinned)
    return PreparedTurn(
        selection=selection,
        tools=by_name,
        system=system_prompt(selection.selected, plan_mode=plan_mode),
        latest_user=user_texts[-1] if user_texts else "",
        plan_mode=plan_mode,
    )
