"""The conversation the model sees, kept small on purpose.

A desktop state is the biggest thing in a prompt (a tree of up to 48,000 units). The model acts
on the newest state; an older one is only history. So when a newer state arrives, all but the
newest ``KEEP_STATES`` are replaced by one line that names the state and its window and says
its tree was dropped — never cut silently — and when a new user task begins every earlier
state goes the same way (its stateIds are dead by then anyway). Everything else (the user's words,
the model's answers, non-state tool results) stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deskpilot.provider import ChatMessage, ToolCall

#: newest states kept whole in the prompt (the model acts on the newest; an action's result
#: carries the next one)
KEEP_STATES = 1


@dataclass
class _StateEntry:
    index: int
    state_id: str
    header: str


@dataclass
class Conversation:
    messages: list[ChatMessage] = field(default_factory=list)
    _states: list[_StateEntry] = field(default_factory=list)
    compacted: int = 0

    def add_user(self, text: str) -> None:
        self._compact(keep=0)
        self.messages.append(ChatMessage.user(text))

    def add_final(self, text: str) -> None:
        self.messages.append(ChatMessage.assistant(text))

    def add_call(self, call: ToolCall) -> None:
        self.messages.append(ChatMessage.assistant(tool_call=call))

    def add_result(
        self,
        call: ToolCall,
        text: str,
        *,
        is_error: bool,
        state_id: str | None = None,
        header: str | None = None,
    ) -> None:
        self.messages.append(ChatMessage.tool_result(call, text, is_error=is_error))
        if state_id is not None:
            self._states.append(
                _StateEntry(len(self.messages) - 1, state_id, header or f"state_id={state_id}")
            )
            self._compact(keep=KEEP_STATES)

    def _compact(self, *, keep: int) -> None:
        old = self._states[: max(0, len(self._states) - keep)]
        for entry in old:
            message = self.messages[entry.index]
            where = " ".join(
                line for line in entry.header.splitlines() if line.startswith(("App=", "Window="))
            )
            self.messages[entry.index] = ChatMessage(
                "tool",
                f"[state {entry.state_id} superseded; its tree was dropped from the history] "
                f"{where}".rstrip(),
                tool_call_id=message.tool_call_id,
                tool_name=message.tool_name,
                is_error=message.is_error,
            )
            self.compacted += 1
        self._states = self._states[len(old) :]
