"""The runtime's books on delegated tasks: which tasks this process runs, for whom, and what
their operator is doing now.

A task's id is its delegated session's id. The durable facts (state, steps, timeline,
verifications) live in the kernel's store; what is kept here is what only this process knows:
the operator's asyncio task, whether it is running, its last decision, the model calls it
made, and the event that says its cleanup is done (``wait_for_completion`` waits for it, so
the fields it returns are final).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from deskpilot.protocol.verification import VerificationSpec

#: the prefix of an operator's own key in the runtime's session books
OPERATOR_KEY_PREFIX = "task:"


@dataclass
class DelegatedTask:
    task_id: str
    agent_session: str
    goal: str
    criteria: list[VerificationSpec]
    criteria_source: str
    acceptance: list[str]
    target: dict[str, Any]
    started_at: float = field(default_factory=time.time)
    #: the operator loop (one run; resume starts a new one on the same session)
    runner: asyncio.Task[None] | None = None
    #: while paused: waits for a resume from anywhere and restarts the operator
    watcher: asyncio.Task[None] | None = None
    #: set when the current run has finished its cleanup
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    runs: int = 0
    decisions: int = 0
    model_calls: int = 0
    actions: int = 0
    last_action: dict[str, Any] | None = None
    last_verification: dict[str, Any] | None = None
    verification_failures: int = 0
    #: why the last run ended (a reason code), and the end's message for the caller
    end_reason: str | None = None
    end_message: str | None = None
    verification_ids: list[str] = field(default_factory=list)
    #: the step the operator is in now (observing, deciding, acting, verifying, …)
    phase: str = "starting"
    #: consecutive no-ops when the task ended (its session books are gone by then)
    final_noops: int = 0
    #: the operator's own time per step, the model call excluded (benchmarks read it)
    own_ms: list[float] = field(default_factory=list)

    def criteria_json(self) -> list[dict[str, Any]]:
        return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in self.criteria]

    @property
    def key(self) -> str:
        return OPERATOR_KEY_PREFIX + self.task_id

    @property
    def running(self) -> bool:
        return self.runner is not None and not self.runner.done()


class TaskRegistry:
    def __init__(self) -> None:
        self._tasks: dict[str, DelegatedTask] = {}
        self._latest: dict[str, str] = {}

    def add(self, task: DelegatedTask) -> None:
        self._tasks[task.task_id] = task
        self._latest[task.agent_session] = task.task_id

    def get(self, task_id: str) -> DelegatedTask | None:
        return self._tasks.get(task_id)

    def latest(self, agent_session: str) -> DelegatedTask | None:
        task_id = self._latest.get(agent_session)
        return None if task_id is None else self._tasks.get(task_id)

    def all(self) -> list[DelegatedTask]:
        return list(self._tasks.values())

    def running(self) -> list[DelegatedTask]:
        return [t for t in self._tasks.values() if t.running]
