"""Telling the person, while a tool waits, that it waits for them.

An L3 action (a recursive delete, a command writing outside the working directory, a launch
with arguments …) waits for the person's one-time confirmation inside the kernel; the tool
call simply does not return yet. So while a call runs, the loop reads its kernel session's
timeline (the store is the record: what it says is what was written) and turns
``approval_requested`` / ``approval_resolved`` into ``confirmation`` events: the view shows the
id and the command that answers it at once, not after the wait expired.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from deskpilot.kernel.port import KernelPort
from deskpilot.protocol.session import EventType

POLL_S = 0.2


class ConfirmationWatch:
    def __init__(
        self,
        kernel: KernelPort,
        session_of: Callable[[], str | None],
        emit: Callable[..., None],
    ) -> None:
        self.kernel = kernel
        self.session_of = session_of
        self.emit = emit
        #: per kernel session, the last timeline row already looked at (each call reads only
        #: what was written since)
        self._seen: dict[str, int] = {}

    def _last_seq(self, session_id: str | None) -> int:
        if session_id is None:
            return 0
        if session_id not in self._seen:
            rows = self.kernel.timeline(session_id)
            self._seen[session_id] = rows[-1].seq if rows else 0
        return self._seen[session_id]

    def _drain(self, session_id: str, after: int) -> int:
        rows = self.kernel.timeline(session_id, after)
        if rows:
            self._seen[session_id] = rows[-1].seq
        for row in rows:
            after = row.seq
            p: dict[str, Any] = row.payload
            if row.type is EventType.APPROVAL_REQUESTED:
                self.emit(
                    "confirmation",
                    state="waiting",
                    confirmationId=p.get("confirmationId"),
                    risk=p.get("risk"),
                    summary=p.get("summary"),
                    expiresAt=p.get("expiresAt"),
                    approve=f"deskpilot confirm approve {p.get('confirmationId')}",
                    deny=f"deskpilot confirm deny {p.get('confirmationId')}",
                )
            elif row.type is EventType.APPROVAL_RESOLVED:
                self.emit(
                    "confirmation",
                    state=p.get("outcome"),
                    confirmationId=p.get("confirmationId"),
                    by=p.get("by"),
                )
        return after

    @contextlib.asynccontextmanager
    async def during(self) -> AsyncIterator[None]:
        """Watch the session's timeline while the body (one tool call) runs."""
        start_session = self.session_of()
        start = self._last_seq(start_session)
        stop = asyncio.Event()

        async def watch() -> None:
            session, after = start_session, start
            while True:
                current = self.session_of()
                if current is not None:
                    if current != session:  # opened (or replaced) by this very call
                        session, after = current, 0
                    after = self._drain(current, after)
                if stop.is_set():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), POLL_S)

        task = asyncio.ensure_future(watch())
        try:
            yield
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await task
