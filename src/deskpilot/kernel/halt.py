"""The agent-side halt the kill switch leaves behind.

When the person presses the kill switch every session is canceled *and* the agent side is
halted: every action answers ``kill_switch_engaged`` with a message that says the person
pressed the kill switch, while observation keeps working. The halt binds every agent session
that began before it; it ends for everyone with ``deskpilot unhalt`` (or the dashboard), and
does not bind an agent (MCP client) session that begins after it. An agent session the kernel
never heard begin counts as old (fail closed): entry points call
:meth:`Halt.client_session_began` when a client session starts.
"""

from __future__ import annotations

import time

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.db import Database
from deskpilot.store.halts import HaltRepository, HaltRow
from deskpilot.store.settings import Settings

KILL_SWITCH = "kill_switch"


class Halt:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = HaltRepository(db)

    def engage(self, reason: str = KILL_SWITCH) -> HaltRow:
        return self.repo.engage(reason)

    def lift(self, by: str) -> int:
        """Lift the halt for every agent session; returns how many halts were lifted."""
        return self.repo.lift(by)

    def active(self) -> HaltRow | None:
        return self.repo.active()

    def client_session_began(self, agent_session_id: str) -> None:
        self.repo.agent_session_began(agent_session_id)

    def binding(self, agent_session_id: str) -> HaltRow | None:
        """The halt that binds this agent session, if any."""
        halt = self.repo.active()
        if halt is None:
            return None
        began = self.repo.agent_began_at(agent_session_id)
        if began is not None and began > halt.engaged_at:
            return None
        return halt

    def check(self, agent_session_id: str) -> None:
        halt = self.binding(agent_session_id)
        if halt is not None:
            raise halted_error(halt, Settings.load(self.db).kill_switch)

    def status(self, agent_session_id: str | None = None) -> dict[str, object]:
        halt = self.repo.active() if agent_session_id is None else self.binding(agent_session_id)
        if halt is None:
            return {"halted": False}
        return {
            "halted": True,
            "cause": halt.reason,
            "engagedAt": halt.engaged_at,
            "liftWith": "deskpilot unhalt",
        }


def halted_error(halt: HaltRow, chord: str) -> DeskpilotError:
    when = time.strftime("%H:%M:%S", time.localtime(halt.engaged_at))
    if halt.reason == KILL_SWITCH:
        what = f"The person pressed the kill switch ({chord or 'global hot key'}) at {when}"
    else:
        what = f"The person halted computer use ({halt.reason}) at {when}"
    return DeskpilotError(
        ErrorCode.KILL_SWITCH_ENGAGED,
        f"{what}: every session was stopped and actions are refused until they run "
        "`deskpilot unhalt` or a new client session begins. Observing still works. Do not "
        "retry; tell the person and wait for them.",
        retryable=False,
        details={"cause": halt.reason, "engagedAt": halt.engaged_at},
    )
