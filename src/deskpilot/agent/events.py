"""The agent's event stream: what the person's view (rich) and ``--json`` (JSONL) both show.

One event type with a kind and a JSON body keeps the two views from drifting: the rich view
renders exactly these events, and ``--json`` writes them one per line. Bodies hold names,
codes, levels, ids, sizes and the model's own text; never typed text, secrets, command output
or images (argument summaries come from agent/arguments.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

EventKind = Literal[
    "session_start",  # the agent is ready (model, profile, tools, budget mode)
    "turn_start",  # a user message began a user task
    "thinking",  # a model request is in flight (the view shows a spinner)
    "thought",  # the model answered (requests, recoveries, model ms)
    "model_text",  # the model's final answer for the task
    "tool_call",  # a validated call is about to run (name, argument summary)
    "tool_result",  # what it did (ok / error code, risk, the tool's own ms)
    "state",  # the header of a new desktop state the model now sees
    "recovery",  # a repair the provider made (code, category) while deciding
    "notice",  # the loop says something (budget spent, history compacted, plan mode)
    "confirmation",  # an action waits for the person's confirmation (id, how), or got it
    "error",  # the task could not go on (code, message)
    "turn_end",  # the user task ended (status, steps, actions, timings)
]


@dataclass(frozen=True)
class AgentEvent:
    kind: EventKind
    body: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"event": self.kind, "ts": round(self.at, 3), **self.body}


class EventSink(Protocol):
    def __call__(self, event: AgentEvent) -> None: ...


class EventLog:
    """Keeps every event (tests, the benchmark, a caller that renders later)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def of(self, kind: EventKind) -> list[AgentEvent]:
        return [e for e in self.events if e.kind == kind]
