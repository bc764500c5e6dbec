"""Shared machinery of one runtime: the parts every tool handler uses.

``RuntimeCore`` holds the backend, the kernel seam, implicit sessions, stateIds and turns.
``Call`` is one tool call in flight: its diagnostic, stopwatch, turn and agent session.
The helpers here do the stages that the diagnostic times: the capability preflight
(``initializeMs``), target discovery (``discoveryMs``), host round trips (``rpcMs``) and
formatting (``formatMs``).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

from deskpilot.hostclient.api import DesktopBackend, ObservedState
from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import (
    AppIdentity,
    Capabilities,
    ObservationBody,
    PermissionState,
    TargetSpec,
    WindowInfo,
)
from deskpilot.runtime.apps import AppEntry, resolve_app
from deskpilot.runtime.diagnostics import Diagnostic, ObservationOutcome, Stopwatch
from deskpilot.runtime.errors import RuntimeRefusal, refusal
from deskpilot.runtime.implicit import ImplicitSessions
from deskpilot.runtime.kernel_seam import KernelPort
from deskpilot.runtime.snapshots import SnapshotPort
from deskpilot.runtime.state_ids import AppKey, StateIdRegistry, StateRecord
from deskpilot.runtime.turns import Turn, TurnTracker
from deskpilot.vault.images import model_frame


@dataclass
class ModelFrame:
    jpeg: bytes
    width: int
    height: int


@dataclass
class Call:
    tool: str
    agent_session: str
    turn: Turn
    diag: Diagnostic
    watch: Stopwatch
    started: float = field(default_factory=time.perf_counter)
    #: set once any wire action reached the kernel (for "unknown" on cancellation)
    dispatched: bool = False
    session_id: str | None = None


@dataclass
class ToolOutcome:
    """What a tool answers: text (always), an optional image, and its diagnostic."""

    text: str
    diagnostic: Diagnostic
    image: ModelFrame | None = None
    data: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return self.diagnostic.is_error


def app_key(obs: ObservationBody) -> AppKey:
    return AppKey(pid=obs.app.pid, window_id=obs.window.window_id)


def app_label(ident: AppIdentity) -> str:
    return ident.name or ident.executable or ident.wm_class or ident.desktop_id or "unknown"


def digest(png: bytes | None) -> str | None:
    return hashlib.blake2b(png, digest_size=16).hexdigest() if png is not None else None


class RuntimeCore:
    def __init__(
        self,
        backend: DesktopBackend,
        kernel: KernelPort,
        sessions: ImplicitSessions,
        states: StateIdRegistry,
        turns: TurnTracker,
        snapshots: SnapshotPort | None,
    ) -> None:
        self.backend = backend
        self.kernel = kernel
        self.sessions = sessions
        self.states = states
        self.turns = turns
        self.snapshots = snapshots
        self.redact_sensitive = True

    # ------------------------------------------------------------------ admission

    def check_may_act(self, call: Call) -> None:
        """What refuses any desktop-changing tool before anything else is looked at (nothing
        is dispatched, the stateId is not spent): the kill-switch halt (until unhalt or a new
        client session), a user's stop (for the rest of the turn), and a displacement by
        another agent session (until this one observes again or starts a new turn)."""
        self.kernel.check_halt(call.agent_session)
        if call.turn.stopped:
            raise refusal(
                ErrorCode.SESSION_CANCELED,
                "The user stopped this task; no more actions in this turn. Report to the user.",
                reason="user_stop",
            )
        self.sessions.check_displaced(call.agent_session, call.turn.key)

    # ------------------------------------------------------------------ stages

    async def preflight(self, call: Call, *, acting: bool) -> Capabilities:
        """Capabilities on every call, so a permission lost mid-task shows at once."""
        with call.watch.stage("initialize"):
            caps = await self.backend.capabilities()
        if not caps.available:
            code = _unavailable_code(caps.unavailable_reason)
            raise RuntimeRefusal(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                "The desktop is not available to deskpilot. "
                + _UNAVAILABLE_ADVICE.get(code or "", "Check `deskpilot doctor`."),
                retryable=code not in ("no_display", "wayland"),  # waiting will not fix these
                details={"reason": code},
            )
        perms = caps.permissions
        if perms.screen is not PermissionState.GRANTED:
            raise refusal(ErrorCode.SCREEN_PERMISSION_DENIED, "Screen capture is not permitted.")
        if perms.accessibility is not PermissionState.GRANTED:
            raise refusal(
                ErrorCode.ACCESSIBILITY_PERMISSION_DENIED, "Accessibility access is not available."
            )
        if acting and perms.input is not PermissionState.GRANTED:
            raise refusal(ErrorCode.INPUT_PERMISSION_DENIED, "Synthetic input is not permitted.")
        return caps

    async def preflight_soft(self, call: Call) -> dict[str, Any]:
        """Capabilities as data, without refusing on missing permissions (for reporting)."""
        with call.watch.stage("initialize"):
            caps = await self.backend.capabilities()
        return caps.wire()

    async def windows(self, call: Call) -> list[WindowInfo]:
        with call.watch.stage("discovery"):
            return await self.backend.list_windows()

    async def resolve(self, call: Call, app: str | int) -> tuple[AppEntry, WindowInfo]:
        return self.resolve_in(await self.windows(call), app)

    @staticmethod
    def resolve_in(windows: list[WindowInfo], app: str | int) -> tuple[AppEntry, WindowInfo]:
        entry = resolve_app(app, windows)
        window = entry.main_window()
        if window is None:
            raise refusal(ErrorCode.NO_WINDOWS_AVAILABLE, "That application has no window.")
        return entry, window

    async def observe(
        self, call: Call, target: TargetSpec | None, *, screenshot: bool = True
    ) -> ObservedState:
        assert call.session_id is not None
        with call.watch.stage("rpc"):
            return await self.kernel.observe(call.session_id, target, include_screenshot=screenshot)

    # ------------------------------------------------------------------ states

    def frame(
        self, call: Call, observed_png: bytes | None, obs: ObservationBody
    ) -> ModelFrame | None:
        if observed_png is None:
            return None
        with call.watch.stage("format"):
            regions = obs.sensitive_regions if self.redact_sensitive else None
            jpeg, width, height, _ = model_frame(
                observed_png,
                redact_regions=regions or None,
                window_size=(obs.window.bounds.width, obs.window.bounds.height),
            )
        return ModelFrame(jpeg=jpeg, width=width, height=height)

    def issue(
        self, call: Call, obs: ObservationBody, png: bytes | None, frame: ModelFrame | None
    ) -> StateRecord:
        record = self.states.issue(
            turn=call.turn.key,
            agent_session=call.agent_session,
            app=app_key(obs),
            app_identity=obs.app,
            window=obs.window,
            frame_id=obs.frame_id,
            tree_version=obs.tree_version,
            tree=obs.tree,
            element_count=obs.element_count,
            image_size=(frame.width, frame.height) if frame else None,
            png_digest=digest(png),
        )
        call.diag.state_id_issued = True
        call.diag.observation_outcome = ObservationOutcome.AVAILABLE
        recovery = call.turn.recovery
        if recovery is not None and recovery.same_app(app_key(obs), app_label(obs.app)):
            call.turn.recovery = None  # a new state of the same app lifts the restriction
        return record

    def render_state(
        self, record: StateRecord, obs: ObservationBody, frame: ModelFrame | None
    ) -> str:
        """The header (App=, Window=, state_id, frameId, treeVersion, image) and the tree."""
        ident = obs.app
        lines = [
            f'App=(name="{app_label(ident)}", pid={ident.pid})',
            f'Window=(title="{obs.window.title}", id={obs.window.window_id})',
            f"state_id={record.state_id}",
            f"frameId={obs.frame_id}",
            f"treeVersion={obs.tree_version}",
        ]
        if frame is not None:
            lines.append(
                f"image={frame.width}x{frame.height} (coordinates are pixels of this image)"
            )
        else:
            lines.append("image=none (use element ids)")
        if obs.url:
            lines.append(f"url={obs.url}")
        t = obs.truncation
        if t.omitted_elements or t.elided_children:
            lines.append(f"truncation=omitted {t.omitted_elements}, elided {t.elided_children}")
        if t.tree_unavailable:
            lines.append(
                "tree=unavailable (the app did not answer accessibility calls in time, e.g. "
                "busy in a dialog; there are no element ids: call get_app_state again shortly, "
                "or act on points of the image)"
            )
        lines.append(f"elements={obs.element_count}")
        lines.append("")
        lines.append(obs.tree.rstrip("\n"))
        return "\n".join(lines)


_UNAVAILABLE_ADVICE = {
    "no_display": "The server has no X display (DISPLAY is not set): start one with "
    "`deskpilot desktop up`, take DISPLAY and DBUS_SESSION_BUS_ADDRESS from `deskpilot desktop "
    "env`, and restart the server with them. Retrying will not help.",
    "display_unreachable": "The X display in DISPLAY does not answer (is the X server "
    "running, and may this user connect?). Check `deskpilot doctor`.",
    "wayland": "This session is Wayland, which is not supported yet (X11 only). Retrying will "
    "not help.",
}


def _unavailable_code(reason: str | None) -> str | None:
    """A reason code for the host's own unavailability text (never echoed itself)."""
    text = (reason or "").lower()
    if _short_code(reason):
        return reason
    if "display is not set" in text:
        return "no_display"
    if "cannot open x display" in text:
        return "display_unreachable"
    if "wayland" in text:
        return "wayland"
    return None


def _short_code(value: str | None) -> bool:
    return bool(value) and len(value or "") <= 64 and (value or "").replace("_", "").isalnum()
