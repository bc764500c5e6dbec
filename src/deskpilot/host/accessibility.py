"""The glue between an X window and its AT-SPI frame, over ``deskpilot.host.atspi``.

The X side knows windows (id, pid, title, bounds); the AT-SPI side knows frames (pid, name,
extents). A window's tree is the frame of the same pid whose name equals the window title and
whose extents match the window bounds best; with one frame for the pid it is that one.

A GTK app asked for its tree just after it mapped may expose only its root. The AT-SPI snapshot
already retries while the frame has no children at all; this layer retries only while the
rendered tree is still empty, and only within one shared budget (``COLD_START_BUDGET_S``,
counted from the start of the lookup), so a window that really is empty costs ≈ 0.6 s once,
not the two retry loops one after the other.

Every tree read has a deadline (``TREE_DEADLINE_S`` unless the request or the host's
environment says otherwise: host/observer.py ``tree_deadline_s``): the frame lookup, the
snapshot and the retries all end by then.
What was read by then is the tree, marked partial (host/atspi/snapshot.py). A window whose app
answers nothing by then — stopped, deadlocked — gets the last complete tree read of it
(host/last_trees.py), marked with its age; the frame lookup of such an app keeps the frame
the window had last time. Before, the lookup alone waited 3 s (``FRAME_LOOKUP_TIMEOUT_S``)
and the observation had no tree at all. Such an app is left a question (a ``Peer.Ping``), as
a window listing leaves one (atspi/apps.py): an app has one deadline to answer, counted from
the first question it left open, so a later read waits for that answer only until then (at
least ``SILENT_PROBE_S``) before it answers from the last tree — a stopped app costs its
whole deadline once, not on every look.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from deskpilot.host import settings
from deskpilot.host.atspi.apps import AppStatus
from deskpilot.host.atspi.client import AtspiClient
from deskpilot.host.atspi.collect import until
from deskpilot.host.atspi.combo import ComboParts
from deskpilot.host.atspi.element_ids import ElementIds
from deskpilot.host.atspi.events import PageLoad
from deskpilot.host.atspi.model import (
    ElementRef,
    FieldText,
    FrameInfo,
    SemanticOp,
    SemanticResult,
    TreeSnapshot,
)
from deskpilot.host.atspi.popup_sections import with_popups
from deskpilot.host.atspi.sheet_reads import CellNow
from deskpilot.host.last_trees import LastTrees
from deskpilot.host.popups import popup_frames, unplaced
from deskpilot.host.settings import TREE_DEADLINE_S
from deskpilot.host.x11.windows import XWindow, executable_of
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

log = logging.getLogger("deskpilot.host.accessibility")

COLD_START_BUDGET_S = 0.6
COLD_START_DELAY_S = 0.1
FRAME_LOOKUP_TIMEOUT_S = 3.0
SNAPSHOT_TIMEOUT_S = 15.0
#: how long a read of an app silent for a deadline already (a question of a listing or an
#: earlier read left open that long) waits for it to answer before it is answered from the
#: window's last tree (atspi/apps.py ``still_silent``)
SILENT_PROBE_S = 0.2
#: windows remembered as having missed their deadline (the oldest forgotten first)
MAX_MISSED = 64


@dataclass(slots=True)
class TreeResult:
    """A tree snapshot, the AT-SPI frame it was taken of, and how long finding both took.

    ``stale_age_ms``: the app did not answer by the deadline, and this is the last complete
    tree read of the window, that old; None: read now. ``deadline_ms``: the read's deadline.
    """

    snapshot: TreeSnapshot
    frame: FrameInfo
    elapsed_ms: float
    stale_age_ms: float | None = None
    deadline_ms: float | None = None

    @property
    def app_name(self) -> str | None:
        return self.frame.app_name or None

    @property
    def reusable(self) -> bool:
        """May its element ids be acted on? Only a complete tree read now (TreeRead's rule)."""
        return self.snapshot.partial is None and self.stale_age_ms is None


@dataclass(slots=True, frozen=True)
class TreeUnavailable:
    """The window has an accessible frame, but reading its tree failed (why, as a code)."""

    reason: str


def host_tree_deadline_s() -> float:
    """This host's tree deadline in seconds: ``DESKPILOT_TREE_DEADLINE_MS``, else
    ``TREE_DEADLINE_S`` (host/settings.py reads and bounds it; the host refused to start
    with a value it cannot use)."""
    return settings.tree_deadline_s()


def frame_score(frame: FrameInfo, window: XWindow) -> float:
    """Lower is better: title equality first, then how far the extents are from the bounds."""
    score = 0.0
    if frame.title != window.title:
        score += 10_000
    if frame.iconified and window.visible:
        score += 1_000
    if frame.extents is None:
        return score + 5_000
    e, b = frame.extents, window.bounds
    score += abs(e.x - b.x) + abs(e.y - b.y) + abs(e.width - b.width) + abs(e.height - b.height)
    return score


class Accessibility:
    """Wraps an ``AtspiClient``; every call is bounded so a hung app cannot stall the host."""

    def __init__(self, client: AtspiClient) -> None:
        self.client = client
        #: each window's last complete tree: the answer when its app does not answer
        self.last_trees = LastTrees()
        #: the windows (X id) whose last read missed its deadline, with that deadline (ms):
        #: the window listing names them (diagnose_native_host tells what to do)
        self.missed_deadlines: dict[int, float] = {}
        #: the ids each window's elements were given (they stay put: atspi/element_ids.py)
        self.ids = ElementIds()

    @classmethod
    async def connect(cls, session_address: str | None = None) -> Accessibility | None:
        try:
            client = await asyncio.wait_for(AtspiClient.connect(session_address), 5.0)
        except Exception as exc:
            log.warning("cannot connect to the AT-SPI bus: %s", exc)
            return None
        return cls(client)

    async def app_statuses(self, wait_s: float) -> dict[int, AppStatus]:
        """Each app's status by pid (atspi/apps.py ``statuses``): every app answers or is
        marked silent within ``wait_s``, apart from the registry's and the bus daemon's own
        round trips; {} when the bus itself does not answer by then."""
        try:
            statuses = await asyncio.wait_for(self.client.app_statuses(wait_s), wait_s + 0.5)
        except Exception as exc:
            log.info("listing AT-SPI applications failed: %s", type(exc).__name__)
            return {}
        by_pid: dict[int, AppStatus] = {}
        for status in statuses:
            # a process with several bus names (rare): an answering one speaks for it
            seen = by_pid.get(status.pid)
            if seen is None or (seen.silent_ms is not None and status.silent_ms is None):
                by_pid[status.pid] = status
        return by_pid

    async def fill_missing_pids(
        self, windows: list[XWindow], timeout: float = FRAME_LOOKUP_TIMEOUT_S
    ) -> None:
        """Give windows whose X client did not say its pid the pid of their AT-SPI frame.

        Neither XRes nor ``_NET_WM_PID`` answers for some clients (remote ones, old
        toolkits); the frame with the same title and the closest extents names the process.
        Only the frames of apps that answer within ``timeout`` are read: a stopped app holds
        up nothing.
        """
        missing = [w for w in windows if w.pid is None]
        if not missing:
            return
        try:
            frames = await asyncio.wait_for(self.client.answering_frames(timeout), timeout + 0.5)
        except Exception:
            return
        for window in missing:
            titled = [f for f in frames if f.title == window.title and window.title]
            if titled:
                best = min(titled, key=lambda f: frame_score(f, window))
                window.pid = best.pid
                window.executable = executable_of(best.pid)
                window.app_name = best.app_name or None

    async def frames_for(self, window: XWindow) -> tuple[FrameInfo | None, list[FrameInfo]]:
        """The window's frame (None when its app has none), and all its app's frames."""
        if window.pid is None:
            return None, []
        frames: list[FrameInfo] = list(
            await asyncio.wait_for(self.client.frames(pid=window.pid), FRAME_LOOKUP_TIMEOUT_S)
        )
        if not frames:
            return None, []
        return min(frames, key=lambda f: frame_score(f, window)), frames

    async def tree_for(
        self,
        window: XWindow,
        *,
        max_elements: int,
        text_budget: int,
        hint: FrameInfo | None = None,
        deadline_s: float = TREE_DEADLINE_S,
        popups: Sequence[Rect] = (),
        after_action: bool = False,
    ) -> TreeResult | TreeUnavailable | None:
        """The window's tree by ``deadline_s`` from now; None when it has no accessible
        frame (no tree to speak of), ``TreeUnavailable`` when it has one but reading it
        failed and no earlier tree of it is known.

        ``hint``: the frame this window had last time. Its snapshot starts at once, next to
        the frame lookup (which costs two round trips to an app that may be busy drawing),
        and is kept only if the lookup picks that same frame; otherwise it is dropped once
        done and the looked-up frame is read, as without a hint. When the lookup does not
        answer by the deadline, the hint is taken as the frame (the app is the same one: a
        stopped app's windows do not change).

        An app that answers nothing by the deadline gets the window's last complete tree,
        stale (``TreeResult.stale_age_ms``).

        ``popups``: where the mapped popups are (x11/popups.py). The app's popups among them
        over this window (a context menu, a drop-down list: host/popups.py) are read next to
        the window and appended to its tree (atspi/popup_sections.py)."""
        start = time.perf_counter()
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + max(0.0, deadline_s)
        deadline_ms = round(deadline_s * 1000, 1)
        if hint is not None and hint.pid != window.pid:
            hint = None
        # an app with a question open (a listing's, an earlier read's) has the rest of one
        # deadline from that question to answer it, and an old one SILENT_PROBE_S: a
        # stopped app costs its deadline once, then SILENT_PROBE_S per look
        silent_ms = await self.client.still_silent(
            window.pid,
            hint.ref.bus_name if hint else None,
            deadline_s,
            min(SILENT_PROBE_S, deadline_s),
        )
        if silent_ms is not None:
            log.info("AT-SPI: the app has been silent for %.0f ms", silent_ms)
            return self._known(window, "TimeoutError", deadline_ms)
        early: asyncio.Future[TreeSnapshot | None] | None = None
        if hint is not None:
            early = asyncio.ensure_future(
                self._snapshot(hint, max_elements, text_budget, deadline, after_action)
            )
            early.add_done_callback(_retrieved)  # even when this read is itself cancelled
        frames: list[FrameInfo] = []
        try:
            frame, frames = await until(self.frames_for(window), deadline)
        except TimeoutError:
            frame = hint
            if frame is None:
                log.info("AT-SPI frame lookup: no answer by the deadline")
                self.client.ask(window.pid, None, began)
                return self._known(window, "TimeoutError", deadline_ms)
        except Exception as exc:
            log.info("AT-SPI frame lookup failed: %s", type(exc).__name__)
            _drop(early)
            return TreeUnavailable(type(exc).__name__)
        if frame is None:
            _drop(early)
            return None
        if early is not None and (hint is None or hint.ref != frame.ref):
            _drop(early)
            early = None
        over = await self._popups(frame, frames, window.bounds, popups, deadline)
        popup_reads = [
            asyncio.ensure_future(self._snapshot(f, max_elements, text_budget, deadline))
            for f in over
        ]
        popup_places = [f.extents or window.bounds for f in over]
        snapshot: TreeSnapshot | None = None
        while True:
            try:
                if early is not None:
                    future, early = early, None
                    snapshot = await future
                else:
                    snapshot = await self._snapshot(
                        frame, max_elements, text_budget, deadline, after_action
                    )
            except Exception as exc:
                log.info("AT-SPI snapshot failed: %s", type(exc).__name__)
                _drop_all(popup_reads)
                if _no_answer(exc):
                    self.client.ask(window.pid, frame.ref.bus_name, began)
                    return self._known(window, type(exc).__name__, deadline_ms)
                return TreeUnavailable(type(exc).__name__)
            spent = time.perf_counter() - start
            if snapshot is None or snapshot.element_count > 1:
                break
            if spent + COLD_START_DELAY_S >= COLD_START_BUDGET_S:
                break
            if loop.time() + COLD_START_DELAY_S >= deadline:
                break
            await asyncio.sleep(COLD_START_DELAY_S)
        if snapshot is None:
            _drop_all(popup_reads)
            return None
        if snapshot.partial is None:
            self.last_trees.remember(window.xid, window.pid, snapshot, frame)
            self.missed_deadlines.pop(window.xid, None)
        elif snapshot.partial == "deadline":
            self._missed(window, deadline_ms)
        if popup_reads:
            snapshot = with_popups(snapshot, await _popup_snapshots(popup_reads, popup_places))
        snapshot = self.ids.assign(frame.ref, snapshot)
        elapsed = (time.perf_counter() - start) * 1000
        return TreeResult(snapshot, frame, elapsed, deadline_ms=deadline_ms)

    async def _popups(
        self,
        frame: FrameInfo,
        frames: list[FrameInfo],
        bounds: Rect,
        popups: Sequence[Rect],
        deadline: float,
    ) -> list[FrameInfo]:
        """The app's popups over the window (host/popups.py): its top-level accessibles
        placed on a mapped popup, else, for a popup none is placed on, the objects the app
        said became showing (Qt's menus are no children of their application)."""
        if not popups:
            return []
        over = popup_frames(frames, frame, bounds, popups)
        missing = unplaced(popups, over, bounds)
        if missing:
            try:
                announced = await until(self.client.announced_frames(frame), deadline)
            except Exception as exc:  # the window's own tree does not fail for it
                log.info("AT-SPI popup lookup failed: %s", type(exc).__name__)
                announced = []
            known = {f.ref for f in over}
            over += [
                f for f in popup_frames(announced, frame, bounds, missing) if f.ref not in known
            ]
        return over

    def _known(
        self, window: XWindow, reason: str, deadline_ms: float
    ) -> TreeResult | TreeUnavailable:
        """The window's last complete tree, marked stale; else ``TreeUnavailable(reason)``.
        Every caller comes here because the app did not answer by the deadline: the window
        is remembered as having missed it."""
        self._missed(window, deadline_ms)
        known = self.last_trees.last(window.xid, window.pid)
        if known is None:
            return TreeUnavailable(reason)
        age = round(known.age_ms(), 1)
        snapshot = self.ids.assign(known.frame.ref, known.snapshot)
        return TreeResult(snapshot, known.frame, 0.0, stale_age_ms=age, deadline_ms=deadline_ms)

    def _missed(self, window: XWindow, deadline_ms: float) -> None:
        self.missed_deadlines.pop(window.xid, None)
        self.missed_deadlines[window.xid] = deadline_ms
        while len(self.missed_deadlines) > MAX_MISSED:
            self.missed_deadlines.pop(next(iter(self.missed_deadlines)))

    async def _snapshot(
        self,
        frame: FrameInfo,
        max_elements: int,
        text_budget: int,
        deadline: float | None = None,
        after_action: bool = False,
    ) -> TreeSnapshot | None:
        return await asyncio.wait_for(
            self.client.snapshot(
                frame.ref,
                max_elements=max_elements,
                text_budget=text_budget,
                deadline=deadline,
                after_action=after_action,
            ),
            SNAPSHOT_TIMEOUT_S,
        )

    async def perform(self, element: ElementRef, op: SemanticOp) -> SemanticResult | None:
        """Run a semantic op; None = cannot. Settling is the caller's (host/settle.py)."""
        try:
            return await self.client.perform(element, op, settle=False)
        except DeskpilotError as exc:
            if exc.code is ErrorCode.UNSUPPORTED_ACTION:
                return None
            raise

    async def events_ready(self) -> None:
        """Wait until the event watcher is registered (so no event of the next op is missed)."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.events_ready(), 5.0)

    async def quiet_after(
        self, bus_name: str, since: float, *, first_ms: float, max_ms: float
    ) -> None:
        """Wait until the app's events since ``since`` (monotonic) went quiet for 50 ms; at
        once when none came within ``first_ms``; never longer than ``max_ms``."""
        with contextlib.suppress(Exception):
            await self.client.settle(bus_name, since, first_ms=first_ms, max_ms=max_ms)

    def last_event(self, bus_name: str) -> float:
        """When (monotonic) the app's last accessibility event arrived; 0.0 if never."""
        return self.client.last_event(bus_name)

    def went_quiet(self, bus_name: str, since: float, now: float, *, quiet_s: float) -> bool:
        return self.client.went_quiet(bus_name, since, now, quiet_s=quiet_s)

    def first_event_after(self, bus_name: str, since: float) -> float | None:
        """When (monotonic) the app's first accessibility event after ``since`` arrived."""
        return self.client.first_event_after(bus_name, since)

    async def next_event(self, bus_name: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the app's next event; True if one came."""
        return await self.client.next_event(bus_name, timeout)

    async def live(self, element: ElementRef) -> ElementRef | None:
        """The element as it stands now: a sheet cell found again by its table and address
        (a new object each time, atspi/sheet_reads.py); None when it is gone or does not answer."""
        try:
            return await asyncio.wait_for(self.client.live(element), 3.0)
        except Exception:
            return None

    async def cell(self, element: ElementRef) -> CellNow | None:
        """A sheet cell as it is now (text, formula, focus); None for other elements, when
        it is gone, or when the app does not answer."""
        try:
            return await asyncio.wait_for(self.client.cell(element), 3.0)
        except Exception:
            return None

    def page_load(self, bus_name: str, since: float) -> PageLoad:
        """What the app's events said of page loads since ``since`` (host/page_loads.py)."""
        return self.client.page_load(bus_name, since)

    async def toolkit_of(self, bus_name: str) -> str:
        """The app's toolkit name in lower case ("chromium", "gecko"); "" when it gives none
        or does not answer."""
        try:
            info = await asyncio.wait_for(self.client.application(bus_name), 3.0)
        except Exception:
            return ""
        return info.kit if info is not None else ""

    async def link_target(self, element: ElementRef) -> str | None:
        """Where a link leads (its Hyperlink URI); None when it says nothing."""
        try:
            return await asyncio.wait_for(self.client.link_target(element), 3.0)
        except Exception:
            return None

    async def still_valid(self, element: ElementRef) -> bool:
        try:
            return bool(await asyncio.wait_for(self.client.still_valid(element), 3.0))
        except Exception:
            return False

    async def character_count(self, element: ElementRef) -> int | None:
        if "Text" not in element.interfaces:
            return None
        try:
            return await asyncio.wait_for(self.client.character_count(element), 3.0)
        except Exception:
            return None

    async def field_text(self, element: ElementRef, probe: int = 0) -> FieldText | None:
        """The text field's text as it is now (``FieldText``); None when it has no Text
        interface, is gone or does not answer."""
        if "Text" not in element.interfaces:
            return None
        try:
            return await asyncio.wait_for(self.client.field_text(element, probe), 3.0)
        except Exception:
            return None

    async def value_now(self, element: ElementRef) -> str | float | None:
        """The element's text, else its number, read now; None when it has neither or does
        not answer (bounded: it only checks an effect)."""
        try:
            return await asyncio.wait_for(self.client.value_now(element), 3.0)
        except Exception:
            return None

    async def selection(self, element: ElementRef) -> tuple[int, int, str] | None:
        """The element's selected range and (bounded) text now; None when nothing is
        selected, it has no Text, or it does not answer."""
        if "Text" not in element.interfaces:
            return None
        try:
            return await asyncio.wait_for(self.client.selection(element), 3.0)
        except Exception:
            return None

    async def action_names(self, element: ElementRef) -> tuple[str, ...]:
        """The element's action names, read now (a snapshot does not read them for every
        item, and Chromium leaves them blank there); () when it has none or does not answer."""
        try:
            return await asyncio.wait_for(self.client.action_names(element), 3.0)
        except Exception:
            return ()

    async def combo_parts(self, element: ElementRef) -> ComboParts | None:
        """The combo box's options and popup state, read now; None when it has no options
        list or does not answer."""
        try:
            return await asyncio.wait_for(self.client.combo_parts(element), 3.0)
        except Exception:
            return None

    async def combo_of_option(self, element: ElementRef) -> ComboParts | None:
        """The combo box ``element`` is an option of (read now); None for anything else."""
        try:
            return await asyncio.wait_for(self.client.combo_of_option(element), 3.0)
        except Exception:
            return None

    async def toolkit(self, element: ElementRef) -> str:
        """The element's app's toolkit name in lower case ("qt", "gtk", "chromium"); "" when
        it gives none or does not answer."""
        try:
            info = await asyncio.wait_for(self.client.application(element.bus_name), 3.0)
        except Exception:
            return ""
        return info.kit if info is not None else ""

    async def extents(self, element: ElementRef) -> Rect | None:
        if element.extents is not None:
            return element.extents
        try:
            return await asyncio.wait_for(self.client.extents(element), 3.0)
        except Exception:
            return None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.close()


def _drop(future: asyncio.Future[TreeSnapshot | None] | None) -> None:
    """Leave a snapshot that is no longer wanted to finish on its own (its D-Bus calls are
    not abandoned half way; ``_retrieved`` forgets its outcome) without waiting for it: the
    hint's frame was the wrong one (a dialog opened, say), and the read of the right frame
    must not spend its deadline waiting for the wrong one's."""
    del future  # it runs on; the done-callback retrieves its result or exception


def _drop_all(reads: Sequence[asyncio.Future[TreeSnapshot | None]]) -> None:
    for read in reads:
        read.add_done_callback(_retrieved)


async def _popup_snapshots(
    reads: Sequence[asyncio.Future[TreeSnapshot | None]], places: Sequence[Rect]
) -> list[tuple[TreeSnapshot, Rect]]:
    """The popups' trees that were read, each with where it lies; a popup that closed
    meanwhile (its accessible is gone) or did not answer is left out: the window's tree
    does not fail for it."""
    done = await asyncio.gather(*reads, return_exceptions=True)
    out: list[tuple[TreeSnapshot, Rect]] = []
    for snap, at in zip(done, places, strict=True):
        if isinstance(snap, TreeSnapshot):
            out.append((snap, at))
        elif isinstance(snap, BaseException):
            log.info("AT-SPI popup snapshot failed: %s", type(snap).__name__)
    return out


def _no_answer(exc: Exception) -> bool:
    """The read failed because the app did not answer in time (not because it is gone)."""
    if isinstance(exc, TimeoutError):
        return True
    return isinstance(exc, DeskpilotError) and exc.code is ErrorCode.ENVIRONMENT_UNAVAILABLE


def _retrieved(future: asyncio.Future[TreeSnapshot | None]) -> None:
    if not future.cancelled():
        future.exception()
