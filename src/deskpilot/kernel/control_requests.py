"""Controls of a session from another process: the dashboard, ``deskpilot session …``.

A session is driven by the process that created it (``sessions.owner_pid``): its operator,
its action in flight, its current frame and the runtime's books live there, so only that
process can pause, take over, resume, stop or re-bind it properly (the runtime's control
hooks must run: stateIds dropped, the operator let go or relaunched). Another process asks:

* **Client** (``ControlClient.send``): the verb and its arguments are checked
  (``invalid_request``); then, when a kernel of the calling process owns the session, its
  controls run directly; when the owner is another live process, a request row is written
  (``submit``) and its outcome awaited (``await_result``: the session's new row, or the
  owner's typed error); when the owner is gone, ``stop`` ends the session in the database
  itself (``canceled``, reason ``user_stop``, its takeover hold ended) and anything else
  fails with ``session_not_executable`` — nobody is left to carry it out.
* **Owner** (``ControlInbox``): a task of the owning kernel that polls the pending requests
  of the sessions it owns every ``INBOX_POLL_S`` (one indexed query that reads nothing when
  none waits), claims each (``pending`` → ``running``, so one executor wins), runs it through
  the kernel's own controls and writes the outcome.

A request the owner did not claim within the client's timeout is withdrawn (``failed``), so
it never runs late; one it claimed is waited for a little longer (a stop ends an action in
flight, which takes up to a few hundred ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
import weakref
from collections.abc import Awaitable
from typing import Any, Protocol

from deskpilot.kernel.owners import owner_alive
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, SessionState
from deskpilot.store.confirmations import ConfirmationRepository
from deskpilot.store.control_requests import (
    VERBS,
    ControlRequestRepository,
    ControlRequestRow,
    ControlVerb,
)
from deskpilot.store.db import Database
from deskpilot.store.leases import LeaseRepository
from deskpilot.store.session_rows import SessionRow

__all__ = [
    "INBOX_POLL_S",
    "VERBS",
    "ControlClient",
    "ControlInbox",
    "ControlOwner",
    "ControlVerb",
    "register_owner",
    "validate",
]

log = logging.getLogger(__name__)

#: how often the owner's inbox looks for pending requests
INBOX_POLL_S = 0.1
#: how often a client looks at its request's row while it waits
CLIENT_POLL_S = 0.02
DEFAULT_TIMEOUT_S = 5.0
#: extra wait for a request the owner claimed before the timeout
RUNNING_GRACE_S = 10.0
_WINDOW_ID = re.compile(r"^0x[0-9a-fA-F]{1,16}$")
_NOTE_CHARS = 500
_BY_CHARS = 64


class ControlOwner(Protocol):
    """What a kernel that owns sessions offers this module (kernel/kernel.py)."""

    db: Database

    def owns(self, session_id: str) -> bool: ...

    def run_control(
        self, session_id: str, verb: ControlVerb, args: dict[str, Any], by: str
    ) -> Awaitable[SessionRow]: ...


_owners: weakref.WeakSet[Any] = weakref.WeakSet()


def register_owner(owner: ControlOwner) -> None:
    """A kernel of this process: a control of one of its sessions runs there directly."""
    _owners.add(owner)


def unregister_owner(owner: ControlOwner) -> None:
    _owners.discard(owner)


def _same_db(a: Database, b: Database) -> bool:
    try:
        return a.path.resolve() == b.path.resolve()
    except OSError:
        return a.path == b.path


def local_owner(db: Database, session_id: str) -> ControlOwner | None:
    for owner in list(_owners):
        if _same_db(owner.db, db) and owner.owns(session_id):
            return owner  # type: ignore[no-any-return]
    return None


def _invalid(message: str, **details: Any) -> DeskpilotError:
    return DeskpilotError(ErrorCode.INVALID_REQUEST, message, details=details or None)


def validate(verb: str, args: dict[str, Any] | None) -> tuple[ControlVerb, dict[str, Any]]:
    """The verb and its arguments, checked: pause, takeover and resume take none; stop an
    optional ``note`` (≤ 500 characters); bind_target a ``windowId`` (an X11 id, ``0x…``)."""
    if not isinstance(verb, str) or verb not in VERBS:
        raise _invalid(f"unknown control {verb!r}; one of {', '.join(VERBS)}", verbs=list(VERBS))
    if not isinstance(args, dict | None):
        raise _invalid("a control's arguments are an object")
    given = dict(args or {})
    allowed = {"stop": {"note"}, "bind_target": {"windowId"}}.get(verb, set())
    extra = sorted(set(given) - allowed)
    if extra:
        raise _invalid(
            f"{verb} takes no argument {', '.join(extra)}"
            + (f" (only {', '.join(sorted(allowed))})" if allowed else ""),
            unknown=extra,
        )
    if verb == "bind_target":
        window = given.get("windowId")
        if not isinstance(window, str) or not _WINDOW_ID.match(window):
            raise _invalid("bind_target needs windowId, an X11 window id such as 0x1a00003")
    if verb == "stop" and "note" in given:
        note = given["note"]
        if not isinstance(note, str):
            raise _invalid("stop's note is a string")
        given["note"] = note[:_NOTE_CHARS]
    return verb, given


def _requester(by: str) -> str:
    by = (by or "person").strip()
    if not by or len(by) > _BY_CHARS or not by.isprintable():
        raise _invalid(f"'by' names who asks, in at most {_BY_CHARS} printable characters")
    return by


def _error_of(req: ControlRequestRow) -> DeskpilotError:
    result = req.result or {}
    try:
        code = ErrorCode(req.error_code or ErrorCode.INTERNAL_ERROR.value)
    except ValueError:
        code = ErrorCode.INTERNAL_ERROR
    details = result.get("details")
    return DeskpilotError(
        code,
        str(result.get("message") or f"the control {req.verb} failed ({code.value})"),
        retryable=bool(result.get("retryable", code.retryable)),
        details=details if isinstance(details, dict) else None,
    )


class ControlClient:
    """Pause, take over, resume, stop or re-bind any session of this data dir, whichever
    process drives it (module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.sessions = SessionManager(db)
        self.requests = ControlRequestRepository(db)

    def owner_alive(self, row: SessionRow) -> bool:
        """True while some process can carry out a control of this session: a kernel of this
        process that owns it, or the live process that created it."""
        if row.owner_pid == os.getpid():
            return local_owner(self.db, row.id) is not None
        return owner_alive(row)

    async def send(
        self,
        session_id: str,
        verb: str,
        args: dict[str, Any] | None = None,
        *,
        by: str = "person",
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> SessionRow:
        """Run one control of the session and return its row afterwards; a typed
        DeskpilotError otherwise."""
        checked, given = validate(verb, args)
        who = _requester(by)
        row = self.sessions.require(session_id)
        owner = local_owner(self.db, session_id)
        if owner is not None:
            return await owner.run_control(session_id, checked, given, who)
        if row.terminal:
            if checked == "stop":
                return row
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"session {session_id} has ended ({row.cancel_reason or row.state.value}); "
                "ended sessions take no controls",
                details={"state": row.state.value},
            )
        if not self.owner_alive(row):
            if checked == "stop":
                return self._stop_orphan(row, who, given.get("note"))
            raise DeskpilotError(
                ErrorCode.SESSION_NOT_EXECUTABLE,
                f"the process that drove this session has ended (pid {row.owner_pid}); it "
                "can only be stopped",
                details={"ownerPid": row.owner_pid, "state": row.state.value},
            )
        rid = self.submit(session_id, checked, given, by=who)
        return await self.await_result(rid, timeout_s=timeout_s)

    def submit(
        self,
        session_id: str,
        verb: str,
        args: dict[str, Any] | None = None,
        *,
        by: str = "person",
    ) -> str:
        """Leave a request for the session's owner; its id (``await_result`` waits for it)."""
        checked, given = validate(verb, args)
        self.sessions.require(session_id)
        return self.requests.insert(session_id, checked, given, _requester(by))

    async def await_result(
        self, request_id: str, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> SessionRow:
        """The session's row once the owner ran the request; its error when it failed."""
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                req = self.requests.get(request_id)
                if req is None:
                    raise _invalid(f"no control request {request_id!r}")
                if req.status == "done":
                    return self.sessions.require(req.session_id)
                if req.status == "failed":
                    raise _error_of(req)
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(CLIENT_POLL_S)
        except asyncio.CancelledError:
            # nobody waits for it any more: it must not run later unseen
            self.requests.finish(
                request_id,
                "failed",
                result={"message": "withdrawn: the caller stopped waiting"},
                error_code=ErrorCode.ENVIRONMENT_UNAVAILABLE.value,
                only_if="pending",
            )
            raise
        return await self._timed_out(request_id, timeout_s)

    async def _timed_out(self, request_id: str, timeout_s: float) -> SessionRow:
        withdrawn = self.requests.finish(
            request_id,
            "failed",
            result={"message": "withdrawn: the owner did not take it in time"},
            error_code=ErrorCode.ENVIRONMENT_UNAVAILABLE.value,
            only_if="pending",
        )
        req = self.requests.get(request_id)
        assert req is not None
        if withdrawn:
            row = self.sessions.get(req.session_id)
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                f"the process that drives session {req.session_id} (pid "
                f"{row.owner_pid if row else '?'}) did not take the {req.verb} within "
                f"{timeout_s:g} s; nothing was done (it may be busy or stuck: try again, or "
                "stop the session)",
                retryable=True,
                details={"requestId": request_id},
            )
        # claimed (running) before the deadline: it will finish; wait a little longer
        return await self.await_result(request_id, timeout_s=RUNNING_GRACE_S)

    def _stop_orphan(self, row: SessionRow, by: str, note: str | None) -> SessionRow:
        """Stop a session whose process is gone: in the database, as its own kernel would
        (canceled with reason user_stop, its hold ended, its confirmations expired, the
        desktop lease row it may have left dropped)."""
        payload: dict[str, object] = {"by": by, "ownerGone": True}
        if note:
            payload["note"] = note[:_NOTE_CHARS]
        try:
            ended = self.sessions.transition(
                row.id, SessionState.CANCELED, cancel_reason=CancelReason.USER_STOP, payload=payload
            )
        except DeskpilotError:
            ended = self.sessions.require(row.id)
            if not ended.terminal:
                raise
        Takeover(self.db).end(row.id, "stopped")
        ConfirmationRepository(self.db).expire_session(row.id)
        LeaseRepository(self.db).release_lanes(row.id)
        return ended


class ControlInbox:
    """The owner's side: pending requests of this kernel's sessions, run as they come."""

    def __init__(
        self, db: Database, owner: ControlOwner, *, interval_s: float = INBOX_POLL_S
    ) -> None:
        self.db = db
        self.owner = owner
        self.interval_s = interval_s
        self.requests = ControlRequestRepository(db)
        self._task: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()
        self.handled = 0

    @property
    def started(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.started:
            return
        self._task = asyncio.get_running_loop().create_task(
            self._loop(), name="deskpilot control inbox"
        )

    async def _loop(self) -> None:
        while True:
            try:
                self.poll()
            except Exception:  # a locked or closing database: try again at the next tick
                log.debug("control inbox poll failed", exc_info=True)
            await asyncio.sleep(self.interval_s)

    def poll(self) -> int:
        """Claim and start every pending request of this kernel's sessions; how many."""
        started = 0
        for req in self.requests.pending_for_owner(os.getpid()):
            if not self.owner.owns(req.session_id) or not self.requests.claim(req.id):
                continue
            task = asyncio.get_running_loop().create_task(
                self._run(req), name=f"control {req.verb} {req.session_id}"
            )
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            started += 1
        return started

    async def _run(self, req: ControlRequestRow) -> None:
        try:
            verb, args = validate(req.verb, req.args)
            row = await self.owner.run_control(req.session_id, verb, args, req.requested_by)
        except DeskpilotError as exc:
            self.requests.finish(
                req.id,
                "failed",
                result={
                    "message": exc.message,
                    "retryable": exc.retryable,
                    "details": exc.details,
                },
                error_code=exc.code.value,
            )
        except Exception:
            log.exception("control request %s (%s) failed", req.id, req.verb)
            self.requests.finish(
                req.id,
                "failed",
                result={"message": f"the {req.verb} failed inside the owning process"},
                error_code=ErrorCode.INTERNAL_ERROR.value,
            )
        else:
            self.requests.finish(req.id, "done", result={"state": row.state.value})
        finally:
            self.handled += 1

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)
