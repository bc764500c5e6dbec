"""The kernel's port: everything the runtime (and any other caller above the kernel) may ask
of the desktop, declared once, here.

The runtime holds a ``KernelPort`` and never a backend: capabilities, windows, observe,
capture and execute all pass the kernel, so freshness, policy, the ledger, the desktop lane
and the halt apply to every path (docs/architecture.md, "One door"). ``Kernel``
(kernel/kernel.py) implements it; the runtime's unit tests use a recording fake.

Results travel back by value: ``execute`` returns the action's outcome *and* the settled
window after it (tree, screenshot, the windows then on screen) when the host could see it;
nobody reads a side cache for it. The value types the runtime needs of the kernel are
re-exported here, so this module is the runtime's one import from the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from deskpilot.kernel.flags import Flags
from deskpilot.kernel.governed_launch import LaunchReport, LaunchResult, Spawn, Watch
from deskpilot.kernel.governed_shell import Run, ShellReport, ShellResult
from deskpilot.kernel.handback import FrameSummary, HandBack, HandBackStart
from deskpilot.kernel.handback import build as hand_back_note
from deskpilot.kernel.policy.launch_rules import LaunchRequest
from deskpilot.kernel.policy.shell_rules import ShellRequest
from deskpilot.kernel.results import ExecutedAction, HaltInfo
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import CancelReason, SessionState, TaskContract
from deskpilot.protocol.wire import Action, Capabilities, TargetSpec, WindowInfo
from deskpilot.store.session_rows import SessionMode, SessionRow
from deskpilot.store.settings import SettingsModel
from deskpilot.store.timeline import TimelineEventRow
from deskpilot.store.verifications import VerificationRow

__all__ = [
    "ExecutedAction",
    "FrameSummary",
    "HaltInfo",
    "HandBack",
    "HandBackStart",
    "KernelPort",
    "LaunchReport",
    "LaunchRequest",
    "LaunchResult",
    "Run",
    "SessionRow",
    "ShellReport",
    "ShellRequest",
    "ShellResult",
    "Spawn",
    "TimelineEventRow",
    "VerificationRow",
    "Watch",
    "hand_back_note",
]


class KernelPort(Protocol):
    name: str
    #: this process's feature flags (read-only for callers; the rollout turns them off)
    flags: Flags

    # ------------------------------------------------------------------ the desktop
    async def capabilities(self) -> Capabilities:
        """What the desktop supports and permits now (the runtime's preflight)."""
        ...

    async def windows(self) -> list[WindowInfo]: ...

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState:
        """Observe for a session; the result becomes its current observation."""
        ...

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        """A screenshot whose secure regions are known (it carries the tree they come from),
        that does *not* become the session's current observation: a screenshot never makes
        the agent's state stale."""
        ...

    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        action_id: str | None = None,
        expected_app: str | None = None,
        observe_after: bool = False,
    ) -> ExecutedAction:
        """Run one action through freshness, policy, ledger, confirmation and the lane."""
        ...

    async def refuse_if_denied(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        expected_app: str | None = None,
    ) -> None:
        """Refuse (``action_blocked``, recorded) a later action of one tool call that the
        policy denies, before the call's first action is dispatched; else nothing."""
        ...

    async def cancel(self, session_id: str) -> None:
        """Stop what the session has in flight at the host now (a bounded budget ran out):
        the host forgets the session, so the caller replaces it before its next use."""
        ...

    async def launch(
        self, session_id: str, request: LaunchRequest, spawn: Spawn, watch: Watch
    ) -> LaunchResult:
        """Start a program as a governed action (kernel/governed_launch.py)."""
        ...

    async def run_shell(self, session_id: str, request: ShellRequest, run: Run) -> ShellResult:
        """Run a shell command as a governed action (kernel/governed_shell.py): ``run`` is
        called only once policy, ledger and confirmation allow it, under the desktop lane."""
        ...

    # ------------------------------------------------------------------ sessions
    async def open_session(
        self,
        agent_session: str,
        contract: TaskContract | None = None,
        *,
        mode: SessionMode = "atomic",
        target: TargetSpec | None = None,
    ) -> str: ...

    async def claim(self, session_id: str) -> None:
        """Take the desktop lane for the session (a delegated task claims it at start)."""
        ...

    def set_phase(self, session_id: str, phase: SessionState) -> SessionState:
        """observing / planning / acting / verifying; returns the state it is now in (a
        paused or ended session is left alone)."""
        ...

    async def finish(
        self,
        session_id: str,
        state: SessionState,
        *,
        reason: str,
        payload: dict[str, object] | None = None,
    ) -> SessionState:
        """End a delegated task (completed / failed) or hand it over (handoff_required)."""
        ...

    def record_verification(
        self,
        session_id: str,
        verdict: dict[str, object],
        *,
        action_id: str | None = None,
        source: str = "task",
    ) -> str:
        """Persist one decided check and its timeline events; its id."""
        ...

    def verifications(self, session_id: str) -> list[VerificationRow]: ...

    def verification(self, verification_id: str) -> VerificationRow | None: ...

    def timeline(self, session_id: str, after_seq: int = 0) -> list[TimelineEventRow]: ...

    def session(self, session_id: str) -> SessionRow | None: ...

    async def wait_for_state(
        self, session_id: str, states: frozenset[SessionState], timeout_s: float
    ) -> tuple[SessionRow, bool]:
        """Until the session is in one of ``states`` (row, timed_out); sees other processes."""
        ...

    def record_batch(self, *, broke: bool) -> None: ...

    def add_control_hooks(
        self,
        *,
        on_pause: Callable[[SessionRow, CancelReason | None], None] | None = None,
        on_stop: Callable[[SessionRow, CancelReason | None], None] | None = None,
        on_resume: Callable[[SessionRow, CancelReason | None], None] | None = None,
    ) -> None:
        """Be told when a session is paused, stopped or resumed, from any path (a tool, the
        dashboard through a control request, the kill switch)."""
        ...

    async def pause(
        self, session_id: str, *, takeover: bool = False, by: str | None = None
    ) -> SessionState:
        """A hard pause; ``takeover`` also engages the desktop-wide hold: every action of
        every session is refused with handoff_required until the person hands back."""
        ...

    async def resume(self, session_id: str, *, by: str | None = None) -> SessionState:
        """Only from paused; the resume of a taken-over session is the hand back (its
        ``take_handback`` is then pending)."""
        ...

    async def stop(
        self, session_id: str, reason: CancelReason, *, note: str | None = None
    ) -> SessionState:
        """End the session (terminal); what it has in flight is cancelled."""
        ...

    async def bind_target(self, session_id: str, target: TargetSpec) -> None: ...

    def session_state(self, session_id: str) -> SessionState | None: ...

    def session_ended(self, session_id: str) -> str | None:
        """None while the session lives; else why it ended (its cancel reason)."""
        ...

    # ------------------------------------------------------------------ halt and settings
    def client_session_began(self, agent_session_id: str) -> None: ...

    def halt_state(self, agent_session_id: str | None = None) -> HaltInfo: ...

    def check_halt(self, agent_session_id: str | None = None) -> None: ...

    def takeover_state(self, session_id: str | None = None) -> dict[str, Any]:
        """The takeover hold as JSON (held, by, since in epoch ms, sessionId); with
        ``session_id``, only that session's own hold."""
        ...

    def check_takeover(self, agent_session_id: str | None = None) -> None:
        """Raise handoff_required (reason ``taken_over``) while the person holds the desktop;
        with the agent session, the refusal is recorded on its latest session's timeline."""
        ...

    def take_handback(self, session_id: str) -> HandBackStart | None:
        """The session's hand back waiting for its note (build it with ``hand_back_note``
        on a fresh observation), once."""
        ...

    def settings(self) -> SettingsModel:
        """The current settings (another process's writes show within a second)."""
        ...

    def status(self, agent_session_id: str | None = None) -> dict[str, Any]:
        """Kill switch, desktop lease, halt, takeover and rollout, as JSON."""
        ...

    async def start_kill_switch(self, display: str | None = None) -> object: ...

    async def start_control_inbox(self) -> None:
        """Carry out the controls other processes (the dashboard, the CLI) ask for the
        sessions this kernel opened."""
        ...

    async def close(self) -> None: ...
