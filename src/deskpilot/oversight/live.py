"""The live view's frame source: frames of the desktop (or one window) while someone watches.

One :class:`LiveSource` per watched target (the whole screen, or one window id) is shared by
every viewer of that target. It runs only while at least one viewer is connected: the first
viewer starts its capture loop, the last one to leave stops it, so nothing is captured while
nobody watches (``LiveHub.stats`` counts every capture, which the tests read).

A frame is taken through deskpilot's own host process (``HostBackend.live_frame``: the
dashboard process spawns its own host, as any deskpilot process does; only the host speaks
X11): a JPEG of the screen or the window with the pointer's position and the windows it
shows. Before it leaves this process the frame has the password fields of every window it
shows painted out (:mod:`deskpilot.oversight.live_regions`, with the vault's painter) unless
``redactSensitiveContent`` is off — read on every frame, so switching it applies to the next
one — and it carries the outlines of where the agents are acting
(:mod:`deskpilot.oversight.live_overlay`), drawn by the browser over the picture.

The loop, per target: capture → paint → hand the frame to every viewer (each keeps only the
newest: a slow browser skips frames instead of queueing them) → in the time left before the
next frame, read the sensitive regions that are due. Frames come at the highest rate any
viewer asked for (1–10 fps, 5 by default), on a fixed schedule: a late frame is made up by
the next ones coming sooner, but never more than one frame's worth (no burst after a stall).
A capture that fails is told to the viewers (its error code) and tried again a second later.

A loop is never cancelled while a request is at the host (the host client ends the whole host
process when its caller is cancelled mid-request): it is told to stop and ends after the
request it is waiting for.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from deskpilot.oversight.host_access import SharedHost
from deskpilot.oversight.i18n import translate
from deskpilot.oversight.live_overlay import AgentTargets
from deskpilot.oversight.live_regions import SensitiveRegions, paint
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.privacy import is_capture_allowed
from deskpilot.protocol.wire import CaptureResult, ObservationBody, Rect, TargetSpec, WindowInfo
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_FPS = 5
MAX_FPS = 10
#: the JPEG quality frames are taken and re-encoded at
QUALITY = 80
#: after a failed capture, the next try (seconds)
RETRY_S = 1.0
#: the first frame of a source waits this long at most for its windows' regions (seconds)
PRIME_S = 2.0
#: how long the page waits for the window list (seconds)
LIST_WAIT_S = 3.0
#: a stopped loop is awaited this long at shutdown (seconds)
STOP_WAIT_S = 5.0
SCREEN = "screen"
_WINDOW_ID = re.compile(r"0x[0-9a-f]{1,8}")


# ------------------------------------------------------------------ arguments


def parse_target(value: str | None) -> str:
    """``screen`` (the default) or a window id as the host lists it (``0x1a00004``)."""
    text = (value or SCREEN).strip().lower()
    if text == SCREEN or _WINDOW_ID.fullmatch(text):
        return text
    raise DeskpilotError(
        ErrorCode.INVALID_REQUEST,
        "target must be 'screen' or a window id such as 0x1a00004",
        details={"field": "target"},
    )


def parse_fps(value: str | None) -> int:
    """Frames per second, 1–10 (default 5)."""
    if value is None or value == "":
        return DEFAULT_FPS
    try:
        fps = int(value)
    except ValueError:
        fps = 0
    if not 1 <= fps <= MAX_FPS:
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            f"fps must be a whole number from 1 to {MAX_FPS}",
            details={"field": "fps", "max": MAX_FPS},
        )
    return fps


# ------------------------------------------------------------------ what viewers get


@dataclass(frozen=True, slots=True)
class LiveFrame:
    number: int
    #: wall clock (epoch seconds) when the frame was asked of the host: the start of the
    #: latency the browser measures (capture → visible)
    captured_at: float
    width: int
    height: int
    jpeg: bytes
    origin: Rect  # where the picture is on screen
    pointer: tuple[int, int] | None  # in the picture's pixels
    outlines: list[dict[str, Any]]
    painted: int  # password fields and not-yet-known windows painted out
    withheld: int  # windows of never-captured apps painted out by the host
    redact: bool  # redactSensitiveContent when the frame was painted

    def wire(self) -> dict[str, Any]:
        """The server-sent event's data."""
        return {
            "n": self.number,
            "t": round(self.captured_at * 1000, 3),
            "w": self.width,
            "h": self.height,
            "img": base64.b64encode(self.jpeg).decode("ascii"),
            "pointer": None if self.pointer is None else list(self.pointer),
            "outlines": self.outlines,
            "painted": self.painted,
            "withheld": self.withheld,
            "redact": self.redact,
        }


#: the problems the page words in particular; any other code gets ``live.problem.other``
WORDED_PROBLEMS = frozenset(
    {
        "target_not_found",
        "capture_failed",
        "native_host_unavailable",
        "environment_unavailable",
        "sensitive_input_blocked",
        "no_windows_available",
    }
)


@dataclass(frozen=True, slots=True)
class LiveProblem:
    """A frame that could not be taken: its error code; the loop tries again."""

    code: str

    def wire(self, locale: str) -> dict[str, Any]:
        key = f"live.problem.{self.code}" if self.code in WORDED_PROBLEMS else "live.problem.other"
        return {"code": self.code, "text": translate(key, locale, code=self.code)}


Item = LiveFrame | LiveProblem


class Viewer:
    """One connected browser: it keeps only the newest item."""

    def __init__(self, fps: int) -> None:
        self.fps = fps
        self._item: Item | None = None
        self._ready = asyncio.Event()
        self.delivered = 0

    def offer(self, item: Item) -> None:
        self._item = item
        self._ready.set()

    async def next(self) -> Item:
        await self._ready.wait()
        self._ready.clear()
        item, self._item = self._item, None
        assert item is not None
        self.delivered += 1
        return item


# ------------------------------------------------------------------ the host side


class LiveBackend(Protocol):
    """What the source needs of the host (``hostclient.backend.HostBackend``)."""

    async def list_windows(self) -> list[WindowInfo]: ...

    async def live_frame(
        self, target: TargetSpec | None, *, quality: int | None = None, timeout: float | None = None
    ) -> tuple[CaptureResult, bytes]: ...

    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
        bind: bool = True,
    ) -> ObservedState: ...

    async def close(self) -> None: ...


class _RedactSetting:
    """``redactSensitiveContent`` as of now: the settings' revision is compared on every
    frame (one small query) and the model re-read only when another process changed it."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._rev: tuple[float, int] | None = None
        self._value = True

    def get(self) -> bool:
        rev = Settings.revision(self.db)
        if rev != self._rev:
            self._rev = rev
            self._value = Settings.load(self.db).redact_sensitive_content
        return self._value


# ------------------------------------------------------------------ one target


@dataclass(frozen=True, slots=True)
class _Shot:
    """One answer of the host, checked: when it was asked for, and what it shows."""

    started: float  # wall clock, when the request went out
    result: CaptureResult
    jpeg: bytes
    rect: Rect
    windows: list[WindowInfo]


@dataclass
class SourceStats:
    captures: int = 0
    frames: int = 0
    problems: int = 0
    capture_ms: list[float] = field(default_factory=list)  # the last 100 host round trips


class LiveSource:
    """The capture loop of one target and its viewers."""

    def __init__(self, hub: LiveHub, key: str) -> None:
        self.hub = hub
        self.key = key
        self.target = None if key == SCREEN else TargetSpec(window_id=key)
        self.viewers: list[Viewer] = []
        self.stats = SourceStats()
        self.regions = SensitiveRegions(self._observe)
        self.agents = AgentTargets(hub.db)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def fps(self) -> int:
        return max((v.fps for v in self.viewers), default=DEFAULT_FPS)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"live:{self.key}")

    def stop(self) -> asyncio.Task[None] | None:
        """Ask the loop to end after the request it waits for; returns its task."""
        self._stop.set()
        return self._task

    async def _observe(self, window_id: str) -> ObservationBody:
        backend = await self.hub.backend()
        state = await backend.observe(
            "", TargetSpec(window_id=window_id), include_screenshot=False, bind=False
        )
        return state.observation

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while not self._stop.is_set():
            delay = next_at - loop.time()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
                if self._stop.is_set():
                    break
            interval = 1.0 / self.fps
            # on schedule: a late frame is made up by the next ones, at most one frame's worth
            next_at = max(next_at + interval, loop.time() - interval)
            try:
                item: Item = await self._frame()
            except DeskpilotError as exc:
                self.stats.problems += 1
                item = LiveProblem(exc.code.value)
                next_at = loop.time() + RETRY_S
            except Exception:  # never let one bad frame end the view
                log.exception("live frame failed")
                self.stats.problems += 1
                item = LiveProblem(ErrorCode.INTERNAL_ERROR.value)
                next_at = loop.time() + RETRY_S
            for viewer in list(self.viewers):
                viewer.offer(item)
            if self._stop.is_set():
                break
            if self.hub.redact.get():
                # the time left before the next frame (the host answers one request at a time)
                deadline = time.monotonic() + max(next_at - loop.time() - 0.02, 0.0)
                try:
                    await self.regions.refresh(deadline)
                except Exception:  # a window stays painted whole until a read works
                    log.exception("reading sensitive regions failed")

    async def _capture(self) -> _Shot:
        backend = await self.hub.backend()
        started = time.time()
        t0 = time.perf_counter()
        self.stats.captures += 1
        self.hub.captures += 1
        result, jpeg = await backend.live_frame(self.target, quality=QUALITY)
        self.stats.capture_ms = [*self.stats.capture_ms[-99:], (time.perf_counter() - t0) * 1000]
        shown = result.window
        if shown is not None and (shown.minimized or not shown.visible):
            # its rectangle would show whatever lies there, which the frame does not list
            raise DeskpilotError(ErrorCode.CAPTURE_FAILED, "the window is not shown")
        if result.windows is None or result.rect is None:
            raise DeskpilotError(
                ErrorCode.PROTOCOL_ERROR, "the host's live frame does not say what it shows"
            )
        return _Shot(started, result, jpeg, result.rect, list(result.windows))

    async def _frame(self) -> LiveFrame:
        shot = await self._capture()
        redact = self.hub.redact.get()
        if redact:
            self.regions.note(shot.windows)
            if self.stats.frames == 0 and self.regions.due():
                # the first frame waits for its windows' regions rather than showing grey
                await self.regions.refresh(time.monotonic() + PRIME_S)
                shot = await self._capture()
                self.regions.note(shot.windows)
        origin, result, jpeg = shot.rect, shot.result, shot.jpeg
        painted = 0
        if redact:
            boxes = self.regions.boxes(shot.windows, origin)
            jpeg, painted = await asyncio.to_thread(paint, jpeg, boxes, QUALITY)
        bounds = {w.window_id: w.bounds for w in shot.windows}
        outlines = [
            o for o in (t.wire(origin, bounds) for t in self.agents.current()) if o is not None
        ]
        pointer = None
        if result.pointer is not None:
            pointer = (result.pointer.x - origin.x, result.pointer.y - origin.y)
        self.stats.frames += 1
        return LiveFrame(
            number=self.stats.frames,
            captured_at=shot.started,
            width=result.image.width,
            height=result.image.height,
            jpeg=jpeg,
            origin=origin,
            pointer=pointer,
            outlines=outlines,
            painted=painted,
            withheld=len(result.withheld or []),
            redact=redact,
        )

    def describe(self) -> dict[str, Any]:
        ms = sorted(self.stats.capture_ms)
        return {
            "target": self.key,
            "viewers": len(self.viewers),
            "fps": self.fps,
            "running": self.running,
            "captures": self.stats.captures,
            "frames": self.stats.frames,
            "problems": self.stats.problems,
            "regionReads": self.regions.reads,
            "captureMsMedian": round(ms[len(ms) // 2], 2) if ms else None,
        }


# ------------------------------------------------------------------ every target


class LiveHub:
    """Every live source of one dashboard process. Frames come through the dashboard's shared
    reading host (:class:`~deskpilot.oversight.host_access.SharedHost`: started on first use,
    kept until the dashboard stops; a crash costs one try a second, RETRY_S)."""

    def __init__(
        self, db: Database, host: SharedHost | None = None, *, backend: LiveBackend | None = None
    ) -> None:
        self.db = db
        self.redact = _RedactSetting(db)
        self._host = host or SharedHost()
        self._own_host = host is None
        self._backend = backend
        self._sources: dict[str, LiveSource] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        #: every capture this process asked for, since it started
        self.captures = 0

    async def backend(self) -> LiveBackend:
        if self._backend is not None:
            return self._backend
        return await self._host.backend()

    async def windows(self, timeout_s: float = LIST_WAIT_S) -> list[WindowInfo]:
        """What the target chooser offers: visible, not minimised windows that may be
        captured, topmost first. A host that does not answer within ``timeout_s`` is
        ``native_host_unavailable`` for the page (the listing is left to finish: cancelling a
        request at the host would end the host)."""
        backend = await self.backend()
        listing = asyncio.ensure_future(backend.list_windows())
        listing.add_done_callback(_retrieved)
        try:
            listed = await asyncio.wait_for(asyncio.shield(listing), timeout_s)
        except TimeoutError:
            raise DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE, "the host did not list the windows in time"
            ) from None
        return [w for w in listed if w.visible and not w.minimized and is_capture_allowed(w.app)]

    @contextlib.asynccontextmanager
    async def watch(self, target: str, fps: int = DEFAULT_FPS) -> AsyncIterator[Viewer]:
        """Be a viewer of ``target`` (see :func:`parse_target`) for the block's length. The
        leaving is synchronous, so it also happens when the block is being cancelled (a
        browser that went away)."""
        source = self._sources.get(target)
        if source is None:
            source = LiveSource(self, target)
            self._sources[target] = source
            source.start()
        viewer = Viewer(fps)
        source.viewers.append(viewer)
        try:
            yield viewer
        finally:
            source.viewers.remove(viewer)
            if not source.viewers and self._sources.get(target) is source:
                del self._sources[target]
                task = source.stop()
                if task is not None and not task.done():
                    self._stopping.add(task)
                    task.add_done_callback(self._stopping.discard)

    def stats(self) -> dict[str, Any]:
        return {
            "captures": self.captures,
            "viewers": sum(len(s.viewers) for s in self._sources.values()),
            "running": sum(1 for s in self._sources.values() if s.running) + len(self._stopping),
            "sources": [s.describe() for s in self._sources.values()],
        }

    async def close(self) -> None:
        tasks = [t for t in (s.stop() for s in self._sources.values()) if t is not None]
        tasks += list(self._stopping)
        self._sources.clear()
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        if self._own_host:
            await self._host.close()


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A listing nobody waits for any more: its outcome is dropped, not logged as lost."""
    if not future.cancelled():
        future.exception()
