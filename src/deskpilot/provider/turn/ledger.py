"""The execution ledger: which calls were proposed, executed or blocked in this user turn.

The repeated-call guard reads it, so a call the model repeats (in any key order) is answered
with a repair instead of running twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.provider.protocol import ChatMessage, ToolCall
from deskpilot.provider.tools import fingerprint

Status = Literal["proposed", "executed", "blocked_repeat"]


@dataclass(slots=True)
class LedgerEntry:
    call_id: str
    name: str
    fingerprint: str
    status: Status
    epoch: int
    is_error: bool = False
    #: the ledger's generation when the call was made (see ``ExecutionLedger.advance``)
    generation: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.call_id,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "status": self.status,
            "epoch": self.epoch,
            "generation": self.generation,
            "isError": self.is_error,
        }


@dataclass
class ExecutionLedger:
    """Pass it back into the next ``decide`` call, or include assistant tool-call messages in
    the history; either lets the guard see what already ran. ``epoch`` counts user messages:
    a new user message starts a new epoch and earlier calls stop counting as repeats.

    ``advance()`` says the world the tools read has changed without a user message (a live
    desktop after an action): calls made before it stop counting as repeats too."""

    entries: list[LedgerEntry] = field(default_factory=list)
    epoch: int = 0
    generation: int = 0
    recovery_events: list[dict[str, Any]] = field(default_factory=list)

    def _find(self, call_id: str) -> LedgerEntry | None:
        return next((e for e in self.entries if e.call_id == call_id), None)

    def sync(self, messages: Sequence[ChatMessage]) -> None:
        epoch = 0
        for message in messages:
            if message.role == "user":
                epoch += 1
            elif message.role == "assistant" and message.tool_call is not None:
                call = message.tool_call
                if self._find(call.call_id) is None:
                    self.entries.append(
                        LedgerEntry(
                            call.call_id,
                            call.name,
                            call.fingerprint,
                            "proposed",
                            epoch,
                            generation=self.generation,
                        )
                    )
            elif message.role == "tool" and message.tool_call_id:
                entry = self._find(message.tool_call_id)
                if entry is not None and entry.status != "blocked_repeat":
                    entry.status = "executed"
                    entry.is_error = message.is_error
        self.epoch = epoch

    def advance(self) -> None:
        self.generation += 1

    def executed(self) -> set[str]:
        return {
            e.fingerprint
            for e in self.entries
            if e.status == "executed" and e.epoch == self.epoch and e.generation == self.generation
        }

    def is_repeat(self, name: str, arguments: dict[str, Any]) -> bool:
        return fingerprint(name, arguments) in self.executed()

    def propose(self, call: ToolCall) -> None:
        self.entries.append(
            LedgerEntry(
                call.call_id,
                call.name,
                call.fingerprint,
                "proposed",
                self.epoch,
                generation=self.generation,
            )
        )

    def block(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        self.entries.append(
            LedgerEntry(
                call_id,
                name,
                fingerprint(name, arguments),
                "blocked_repeat",
                self.epoch,
                generation=self.generation,
            )
        )

    def note_recovery(self, code: str, category: str, allowed: bool) -> None:
        self.recovery_events.append(
            {"code": code, "category": category, "allowed": allowed, "epoch": self.epoch}
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "entries": [e.to_dict() for e in self.entries],
            "recoveries": list(self.recovery_events),
        }
