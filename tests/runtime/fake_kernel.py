"""A recording fake of the kernel's port (``deskpilot.kernel.port.KernelPort``) for the
runtime's unit tests: no host, no desktop, no database.

The desktop is one *screen* at a time (``FakeKernel.screen``: a window, its element tree in
the host's rendering, its pixels, the other top-level windows listed with it). ``observe`` and
``capture`` serve it (or the next of ``queue``-d screens, which then becomes the desktop);
``execute`` answers from a script of ``Outcome`` values (a result with or without a post
state, or a ``DeskpilotError``), and an outcome may change the desktop (``then``).

Frames are issued and checked as the kernel does it: every observation gets a new frame id
(``f1``, ``f2`` …) and a tree version that is a content hash of its tree; the session's
current observation is kept in the kernel's own ``CurrentFrames`` (kernel/frames.py), so an
execute must quote it (``stale_frame`` / ``stale_tree`` otherwise, refused by the fake
itself: ``Record.refused_by == "freshness"``). An action that reaches the "host" consumes the
frame whatever happens to it; the kernel's own refusals (policy, confirmation) come before
that and leave it current; a carried post state becomes the new current frame. A capture does
not replace the current frame.

Every call is recorded in order (``FakeKernel.records``): method, session, frame id, tree
version, action, target, outcome.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from PIL import Image

from deskpilot.kernel.flags import Flags
from deskpilot.kernel.frames import CurrentFrames
from deskpilot.kernel.port import (
    ExecutedAction,
    HaltInfo,
    LaunchRequest,
    LaunchResult,
    Run,
    ShellRequest,
    ShellResult,
    Spawn,
    Watch,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import (
    CancelReason,
    Decision,
    RiskLevel,
    SessionState,
    TaskContract,
)
from deskpilot.protocol.wire import (
    Action,
    ActionResult,
    AppIdentity,
    Backends,
    Capabilities,
    ImageDescriptor,
    Observation,
    Permissions,
    PermissionState,
    Rect,
    TargetSpec,
    TreeRead,
    Truncation,
    WaitBound,
    WindowInfo,
)
from deskpilot.store.settings import SettingsModel

_ID_AT_END = re.compile(r"\[(\d+)\]\s*$")
Method = Literal["semantic", "synthetic", "mixed", "none"]

#: refusals the kernel raises itself (admission, policy, confirmation) before the action goes
#: to the host: the frame stays the session's current one. Anything else is taken to come
#: from the host, which dropped the frame's binding first (host/action_dispatch.py).
KERNEL_REFUSALS = frozenset(
    {
        ErrorCode.ACTION_BLOCKED,
        ErrorCode.APPROVAL_REQUIRED,
        ErrorCode.APPROVAL_DENIED,
        ErrorCode.APPROVAL_MISMATCH,
        ErrorCode.FOCUS_MISMATCH,
        ErrorCode.SENSITIVE_INPUT_BLOCKED,
        ErrorCode.COMPUTER_DISABLED,
        ErrorCode.KILL_SWITCH_ENGAGED,
        ErrorCode.SESSION_NOT_EXECUTABLE,
        ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
        ErrorCode.TASK_RUNTIME_EXCEEDED,
        ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
    }
)


def tree_version(tree: str) -> str:
    """A content hash of the tree, as the host's tree version is."""
    return "tv-" + hashlib.blake2b(tree.encode(), digest_size=8).hexdigest()


def element_count(tree: str) -> int:
    return sum(1 for line in tree.splitlines() if _ID_AT_END.search(line))


@functools.lru_cache(maxsize=64)
def solid_png(width: int, height: int, color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@dataclass(frozen=True, eq=False)
class Screen:
    """One window as the host would show it, and the windows listed with it."""

    tree: str
    pid: int = 4242
    app: str = "mousepad"
    window_id: str = "0x1a00003"
    title: str = "Untitled 1 - Mousepad"
    width: int = 800
    height: int = 600
    #: the pixels: given, else a solid image of the window's size times ``scale``
    png: bytes | None = None
    color: tuple[int, int, int] = (236, 236, 236)
    scale: int = 1
    #: secure regions, window coordinates
    sensitive: tuple[Rect, ...] = ()
    #: more top-level windows, listed (topmost first) before this one
    others: tuple[WindowInfo, ...] = ()
    foreground: WindowInfo | None = None
    #: more top-level windows, listed after (under) this one
    under: tuple[WindowInfo, ...] = ()
    #: this window is a dialog of that one (WM_TRANSIENT_FOR), modal or not
    transient_for: str | None = None
    modal: bool | None = None
    #: how the tree was read (partial at the deadline, stale, …) and whether it was at all
    tree_read: TreeRead = field(default_factory=TreeRead)
    tree_unavailable: bool = False

    def identity(self) -> AppIdentity:
        return AppIdentity(
            pid=self.pid,
            name=self.app,
            executable=self.app,
            wm_class=f"{self.app}\0{self.app.title()}",
        )

    def window(self) -> WindowInfo:
        return WindowInfo(
            window_id=self.window_id,
            title=self.title,
            bounds=Rect(x=100, y=50, width=self.width, height=self.height),
            focused=True,
            app=self.identity(),
            transient_for=self.transient_for,
            modal=self.modal,
        )

    def windows(self) -> list[WindowInfo]:
        return [*self.others, self.window(), *self.under]

    def pixels(self) -> bytes:
        if self.png is not None:
            return self.png
        return solid_png(self.width * self.scale, self.height * self.scale, self.color)

    def with_(self, **changes: Any) -> Screen:
        fields = {k: getattr(self, k) for k in self.__dataclass_fields__}
        fields.update(changes)
        return Screen(**fields)

    def dialog(
        self, window_id: str, title: str, *, pid: int | None = None, modal: bool | None = None
    ) -> WindowInfo:
        """A window that is a dialog of this one (WM_TRANSIENT_FOR)."""
        ident = self.identity().model_copy(update={"pid": pid or self.pid})
        return WindowInfo(
            window_id=window_id,
            title=title,
            bounds=Rect(x=200, y=150, width=400, height=200),
            app=ident,
            transient_for=self.window_id,
            modal=modal,
        )

    def dialog_screen(self, info: WindowInfo, tree: str) -> Screen:
        """The desktop showing the dialog ``info`` (made by :meth:`dialog`) as the observed
        window, with this window listed under it."""
        return self.with_(
            tree=tree,
            window_id=info.window_id,
            title=info.title,
            width=info.bounds.width,
            height=info.bounds.height,
            transient_for=info.transient_for,
            modal=info.modal,
            others=(),
            foreground=None,
            png=None,
            color=(200, 210, 220),
        ).with_(under=(self.window(),))

    def sibling(self, window_id: str, title: str) -> WindowInfo:
        """Another top-level window of the same process (not a dialog)."""
        return WindowInfo(
            window_id=window_id,
            title=title,
            bounds=Rect(x=120, y=70, width=800, height=600),
            app=self.identity(),
        )


@dataclass(frozen=True)
class Outcome:
    """What one execute does. ``code`` set: it raises that error; else it returns a result."""

    code: ErrorCode | None = None
    details: dict[str, Any] | None = None
    #: the desktop after this execute (either way)
    then: Screen | None = None
    #: carry the settled window as the result's post state (when observe_after was asked)
    post: bool = True
    #: the post state carries the window listing
    post_windows: bool = True
    #: None: by code (KERNEL_REFUSALS keep the frame current, anything else consumes it)
    consumes: bool | None = None
    method: Method = "semantic"
    #: what the host saw of the effect, and what ended its wait (``ActionResult``)
    effect: Literal["confirmed", "unconfirmed"] | None = None
    effect_note: str | None = None
    wait_bound: WaitBound | None = None

    @classmethod
    def ok(
        cls,
        then: Screen | None = None,
        *,
        post: bool = True,
        post_windows: bool = True,
        method: Method = "semantic",
        effect: Literal["confirmed", "unconfirmed"] | None = None,
        effect_note: str | None = None,
        wait_bound: WaitBound | None = None,
    ) -> Outcome:
        return cls(
            then=then,
            post=post,
            post_windows=post_windows,
            method=method,
            effect=effect,
            effect_note=effect_note,
            wait_bound=wait_bound,
        )

    @classmethod
    def fail(
        cls,
        code: ErrorCode,
        then: Screen | None = None,
        *,
        details: dict[str, Any] | None = None,
        consumes: bool | None = None,
    ) -> Outcome:
        return cls(code=code, then=then, details=details, consumes=consumes)

    def consumes_frame(self) -> bool:
        if self.consumes is not None:
            return self.consumes
        return self.code is None or self.code not in KERNEL_REFUSALS


@dataclass(frozen=True)
class Record:
    """One call to the port, in order."""

    method: str
    session: str | None = None
    frame_id: str | None = None
    tree_version: str | None = None
    action: Action | None = None
    target: TargetSpec | None = None
    screenshot: bool | None = None
    observe_after: bool | None = None
    expected_app: str | None = None
    #: "ok", or the error code it raised
    outcome: str = "ok"
    #: "freshness" when the fake's own frame check refused the execute (nothing dispatched)
    refused_by: str | None = None
    #: what it issued (an observation's frame id, an execute's post frame id)
    issued: str | None = None

    @property
    def dispatched(self) -> bool:
        return self.method == "execute" and self.refused_by is None


def _capabilities() -> Capabilities:
    granted = PermissionState.GRANTED
    return Capabilities(
        id=0,
        host_version="fake",
        available=True,
        session_type="x11",
        backends=Backends(screen="x11", accessibility="at_spi", input="xtest"),
        permissions=Permissions(screen=granted, accessibility=granted, input=granted),
    )


@dataclass
class FakeKernel:
    """Implements ``KernelPort``; see the module docstring."""

    screen: Screen
    settings_model: SettingsModel = field(default_factory=SettingsModel)
    name: str = "fake"
    script: deque[Outcome] = field(default_factory=deque)
    queued: deque[Screen] = field(default_factory=deque)
    observe_failures: deque[ErrorCode] = field(default_factory=deque)
    records: list[Record] = field(default_factory=list)
    frames: CurrentFrames = field(default_factory=CurrentFrames)
    states: dict[str, SessionState] = field(default_factory=dict)
    ended: dict[str, str] = field(default_factory=dict)
    began: list[str] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    flags: Flags = field(default_factory=lambda: Flags({}))
    _frame_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _session_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _action_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ scripting

    def then(self, *outcomes: Outcome) -> FakeKernel:
        """The next executes' outcomes, in order (afterwards: ``Outcome.ok()``)."""
        self.script.extend(outcomes)
        return self

    def queue(self, *screens: Screen) -> FakeKernel:
        """The next observations serve these screens in order (each becomes the desktop)."""
        self.queued.extend(screens)
        return self

    # ------------------------------------------------------------------ reading the record

    def trace(self, *methods: str) -> list[Record]:
        return [r for r in self.records if not methods or r.method in methods]

    def methods(self, *methods: str) -> list[str]:
        return [r.method for r in self.trace(*methods)]

    def executes(self, *, dispatched_only: bool = False) -> list[Record]:
        return [r for r in self.trace("execute") if r.dispatched or not dispatched_only]

    def mark(self) -> int:
        """A position in the record, for ``since``."""
        return len(self.records)

    def since(self, mark: int, *methods: str) -> list[Record]:
        return [r for r in self.records[mark:] if not methods or r.method in methods]

    # ------------------------------------------------------------------ helpers

    def _log(self, record: Record) -> None:
        self.records.append(record)

    def _observed(self, screen: Screen, include_screenshot: bool) -> ObservedState:
        png = screen.pixels() if include_screenshot else None
        image = None
        if png is not None:
            width, height = png_size(png)
            image = ImageDescriptor(width=width, height=height, byte_length=len(png))
        fg = screen.foreground
        obs = Observation(
            id=0,
            frame_id=f"f{next(self._frame_ids)}",
            tree_version=tree_version(screen.tree),
            app=screen.identity(),
            window=screen.window(),
            foreground_app=fg.app if fg is not None else None,
            foreground_window=fg,
            tree=screen.tree,
            element_count=element_count(screen.tree),
            sensitive_regions=list(screen.sensitive),
            image=image,
            tree_read=screen.tree_read,
            truncation=Truncation(tree_unavailable=screen.tree_unavailable),
        )
        return ObservedState(obs, png)

    def _require_live(self, session_id: str) -> SessionState:
        state = self.states.get(session_id)
        if state is None:
            raise DeskpilotError(ErrorCode.SESSION_NOT_FOUND, "no such session")
        if session_id in self.ended:
            raise DeskpilotError(ErrorCode.SESSION_CANCELED, "the session was canceled")
        return state

    def _next_screen(self) -> Screen:
        if self.queued:
            self.screen = self.queued.popleft()
        return self.screen

    # ------------------------------------------------------------------ the desktop

    async def capabilities(self) -> Capabilities:
        self._log(Record("capabilities"))
        return _capabilities()

    async def windows(self) -> list[WindowInfo]:
        self._log(Record("windows"))
        return self.screen.windows()

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState:
        self._require_live(session_id)
        if self.observe_failures:
            code = self.observe_failures.popleft()
            self._log(
                Record(
                    "observe",
                    session_id,
                    target=target,
                    screenshot=include_screenshot,
                    outcome=code.value,
                )
            )
            raise DeskpilotError(code, "scripted observe failure")
        state = self._observed(self._next_screen(), include_screenshot)
        self.frames.put(session_id, state)
        obs = state.observation
        self._log(
            Record(
                "observe",
                session_id,
                obs.frame_id,
                obs.tree_version,
                target=target,
                screenshot=include_screenshot,
                issued=obs.frame_id,
            )
        )
        return state

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        self._require_live(session_id)
        state = self._observed(self._next_screen(), True)
        obs = state.observation
        self._log(
            Record(
                "capture",
                session_id,
                obs.frame_id,
                obs.tree_version,
                target=target,
                screenshot=True,
                issued=obs.frame_id,
            )
        )
        return state  # not the session's current observation

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
        def record(**kw: Any) -> Record:
            return Record(
                "execute",
                session_id,
                frame_id,
                tree_version,
                action=action,
                observe_after=observe_after,
                expected_app=expected_app,
                **kw,
            )

        state = self._require_live(session_id)
        if state is SessionState.PAUSED:
            self._log(record(outcome=ErrorCode.SESSION_NOT_EXECUTABLE.value))
            raise DeskpilotError(ErrorCode.SESSION_NOT_EXECUTABLE, "the session is paused")
        try:
            self.frames.check(session_id, frame_id, tree_version)  # the kernel's own rule
        except DeskpilotError as exc:
            self._log(record(outcome=exc.code.value, refused_by="freshness"))
            raise
        outcome = self.script.popleft() if self.script else Outcome.ok()
        if outcome.consumes_frame():
            self.frames.consume(session_id)
        if outcome.then is not None:
            self.screen = outcome.then
        if outcome.code is not None:
            self._log(record(outcome=outcome.code.value))
            raise DeskpilotError(outcome.code, "scripted failure", details=outcome.details)
        result = ActionResult(
            id=0,
            dispatched=True,
            method=outcome.method,
            kind=action.kind,
            effect=outcome.effect,
            effect_note=outcome.effect_note,
            wait_bound=outcome.wait_bound,
        )
        post: ObservedState | None = None
        if observe_after and outcome.post:
            settled = self._observed(self.screen, True)
            windows = tuple(self.screen.windows()) if outcome.post_windows else None
            post = ObservedState(settled.observation, settled.png, windows)
            self.frames.put(session_id, post)  # the host bound it
            result = result.model_copy(
                update={
                    "observation": post.observation,
                    "windows": list(windows) if windows is not None else None,
                }
            )
        self._log(record(issued=post.observation.frame_id if post is not None else None))
        return ExecutedAction(
            result,
            action_id or f"act_{next(self._action_ids)}",
            RiskLevel.L1,
            Decision.ALLOW,
            "allowed",
            post=post,
        )

    async def launch(
        self, session_id: str, request: LaunchRequest, spawn: Spawn, watch: Watch
    ) -> LaunchResult:
        self._log(Record("launch", session_id))
        raise DeskpilotError(ErrorCode.NOT_AVAILABLE_YET, "the fake kernel launches nothing")

    async def run_shell(self, session_id: str, request: ShellRequest, run: Run) -> ShellResult:
        """Rated by the real shell policy (default contract, the fake's settings); an allowed
        command runs through ``run`` for real, anything else is refused (the fake has no
        person to confirm)."""
        from deskpilot.kernel.broker.records import blocked_error
        from deskpilot.kernel.policy.shell_rules import evaluate_shell

        self._require_live(session_id)
        decision = evaluate_shell(request, TaskContract(), self.settings_model)
        if decision.decision == Decision.DENY:
            self._log(Record("run_shell", session_id, outcome="action_blocked"))
            raise blocked_error(decision)
        if decision.decision == Decision.REQUIRE_APPROVAL:
            self._log(Record("run_shell", session_id, outcome="approval_denied"))
            raise DeskpilotError(
                ErrorCode.APPROVAL_DENIED,
                "the fake kernel has no person to confirm this command",
                details={"reason": "confirmation_denied"},
            )
        report = await run(request)
        self._log(Record("run_shell", session_id))
        return ShellResult(f"act_{next(self._action_ids)}", report, decision)

    # ------------------------------------------------------------------ sessions

    async def open_session(
        self,
        agent_session: str,
        contract: TaskContract | None = None,
        *,
        mode: str = "atomic",
        target: TargetSpec | None = None,
    ) -> str:
        session_id = f"s{next(self._session_ids)}"
        self.states[session_id] = SessionState.OBSERVING
        self._log(Record("open_session", session_id))
        return session_id

    async def pause(
        self, session_id: str, *, takeover: bool = False, by: str | None = None
    ) -> SessionState:
        self._require_live(session_id)
        self.states[session_id] = SessionState.PAUSED
        self.frames.drop(session_id)
        self._log(Record("pause", session_id))
        return SessionState.PAUSED

    async def resume(self, session_id: str, *, by: str | None = None) -> SessionState:
        self._require_live(session_id)
        self.states[session_id] = SessionState.OBSERVING
        self._log(Record("resume", session_id))
        return SessionState.OBSERVING

    async def stop(
        self, session_id: str, reason: CancelReason, *, note: str | None = None
    ) -> SessionState:
        self.states[session_id] = SessionState.CANCELED
        self.ended.setdefault(session_id, reason.value)
        self.frames.drop(session_id)
        self._log(Record("stop", session_id, outcome=reason.value))
        return SessionState.CANCELED

    async def refuse_if_denied(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        expected_app: str | None = None,
    ) -> None:
        # this kernel has no policy: nothing is denied; freshness is the kernel's own rule
        self._require_live(session_id)
        self.frames.check(session_id, frame_id, tree_version)

    async def cancel(self, session_id: str) -> None:
        self.frames.drop(session_id)
        self._log(Record("cancel", session_id))

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        self.frames.drop(session_id)
        self._log(Record("bind_target", session_id, target=target))

    def session_state(self, session_id: str) -> SessionState | None:
        return self.states.get(session_id)

    def session_ended(self, session_id: str) -> str | None:
        return self.ended.get(session_id)

    # ------------------------------------------------------------------ halt and settings

    def client_session_began(self, agent_session_id: str) -> None:
        self.began.append(agent_session_id)

    def halt_state(self, agent_session_id: str | None = None) -> HaltInfo:
        return HaltInfo(halted=False)

    def check_halt(self, agent_session_id: str | None = None) -> None:
        return None

    def takeover_state(self, session_id: str | None = None) -> dict[str, Any]:
        return {"held": False, "by": None, "since": None, "sessionId": None}

    def check_takeover(self, agent_session_id: str | None = None) -> None:
        return None

    def take_handback(self, session_id: str) -> Any:
        return None  # the takeover hold and hand backs are tested on the real kernel

    def settings(self) -> SettingsModel:
        return self.settings_model

    def status(self, agent_session_id: str | None = None) -> dict[str, Any]:
        return {
            "killSwitch": {"state": "unavailable", "cause": "fake kernel"},
            "desktopLease": None,
            "halt": {"halted": False},
        }

    async def start_kill_switch(self, display: str | None = None) -> object:
        self._log(Record("start_kill_switch"))
        return None

    async def start_control_inbox(self) -> None:
        return None

    async def close(self) -> None:
        self._log(Record("close"))

    # ------------------------------------------------------------------ delegated tasks
    # (their paths are tested on the real kernel: tests/operator/)

    def add_control_hooks(self, **hooks: Any) -> None:
        self.hooks.append(hooks)

    def record_batch(self, *, broke: bool) -> None:
        self._log(Record("record_batch", outcome=str(broke)))

    def session(self, session_id: str) -> Any:
        return None

    def _delegated_only(self, *_: Any, **__: Any) -> Any:
        raise DeskpilotError(ErrorCode.NOT_AVAILABLE_YET, "the fake kernel runs no tasks")

    claim = set_phase = finish = record_verification = _delegated_only
    verifications = verification = timeline = wait_for_state = _delegated_only
