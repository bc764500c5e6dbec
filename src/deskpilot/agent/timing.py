"""Where a step's time goes: the model's, the tool's, and the agent's own.

The agent's own time is the figure the issue bounds (selection, serialisation, parsing,
validation, bookkeeping and the execution overhead around a tool): a step's wall time minus
the model's HTTP time minus the tool's own time. ``TimedChatClient`` measures the model's
share at the one place requests leave (the provider's transport), so nothing is estimated.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from deskpilot.provider.transport import ChatClient, ChatResponse


class TimedChatClient(ChatClient):
    """The provider's transport, adding up the wall time of its requests."""

    model_s: float = 0.0

    async def complete(
        self,
        payload: dict[str, Any],
        *,
        abort: asyncio.Event | None = None,
        allow_native: bool = False,
        attempts: int | None = None,
    ) -> ChatResponse:
        t0 = time.perf_counter()
        try:
            return await super().complete(
                payload, abort=abort, allow_native=allow_native, attempts=attempts
            )
        finally:
            self.model_s += time.perf_counter() - t0


@dataclass(frozen=True)
class StepTiming:
    total_ms: float
    model_ms: float
    tool_ms: float

    @property
    def own_ms(self) -> float:
        return max(0.0, self.total_ms - self.model_ms - self.tool_ms)

    def to_json(self) -> dict[str, float]:
        return {
            "totalMs": round(self.total_ms, 2),
            "modelMs": round(self.model_ms, 2),
            "toolMs": round(self.tool_ms, 2),
            "ownMs": round(self.own_ms, 2),
        }
