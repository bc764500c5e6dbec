"""Turn the conversation into chat messages the endpoint sees.

Assistant history goes back as ``{"kind":"final",...}`` so bare text does not teach the model
to drop the protocol; assistant tool calls are not replayed at all (the model sees only their
results), and tool results become untrusted user text within a per-turn history budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from deskpilot.provider.protocol.messages import ChatMessage
from deskpilot.provider.protocol.receipts import omitted_result_block, tool_result_block


def _result_budgets(
    messages: Sequence[ChatMessage], per_result: int, history: int
) -> dict[int, int]:
    """Newest results get room first; older ones are dropped once the history budget is spent."""
    budgets: dict[int, int] = {}
    remaining = history
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "tool":
            continue
        allowance = min(per_result, remaining, len(message.content))
        budgets[index] = allowance if remaining > 0 else -1
        remaining -= max(allowance, 0)
    return budgets


def serialise(
    messages: Sequence[ChatMessage],
    protocol_prompt: str,
    *,
    max_result_chars: int,
    max_history_chars: int,
    repair: str | None = None,
) -> list[dict[str, str]]:
    system_parts = [m.content for m in messages if m.role == "system" and m.content.strip()]
    out: list[dict[str, str]] = [
        {"role": "system", "content": "\n\n".join([*system_parts, protocol_prompt])}
    ]
    budgets = _result_budgets(messages, max_result_chars, max_history_chars)

    def push(role: str, content: str) -> None:
        if out[-1]["role"] == role and role != "system":
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})

    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        if message.role == "user":
            push("user", message.content)
        elif message.role == "assistant":
            if message.tool_call is not None and not message.content.strip():
                continue
            if message.content.strip():
                push(
                    "assistant",
                    json.dumps({"kind": "final", "text": message.content}, ensure_ascii=False),
                )
        else:
            call_id = message.tool_call_id or "unknown"
            name = message.tool_name or "unknown"
            budget = budgets.get(index, -1)
            if budget < 0:
                block = omitted_result_block(
                    call_id=call_id, tool_name=name, chars=len(message.content)
                )
            else:
                block = tool_result_block(
                    call_id=call_id,
                    tool_name=name,
                    content=message.content,
                    is_error=message.is_error,
                    limit=max(budget, 0),
                )
            push("user", block)
    if repair:
        push("user", repair)
    return out
