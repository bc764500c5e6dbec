"""Observations and the per-session binding that actions are checked against.

An observation is one moment of one window: its identity, its accessibility tree (from the
AT-SPI frame that belongs to that X window), its pixels, and a new ``frameId``. The host keeps
the latest observation per session (the *binding*); ``execute_action`` must quote that
binding's frameId and treeVersion, and the binding is dropped as soon as an action passes the
check, so every action is taken against a fresh look at the screen.

Each observation says how its tree was read (``ObservationBody.tree_read``): a tree cut at the
read's deadline is ``partial``, one answered from the last complete read of a window whose app
did not answer is ``stale``; the binding keeps that, and element actions on it are refused
(host/action_checks.py) while points of its screenshot stay usable.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field

from deskpilot.host.accessibility import (
    Accessibility,
    TreeResult,
    TreeUnavailable,
    host_tree_deadline_s,
)
from deskpilot.host.atspi.model import FrameInfo
from deskpilot.host.x11.capture import JPEG_QUALITY, Frame, encode_jpeg, encode_png, paint_out
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.privacy import assert_capture_allowed, is_capture_allowed
from deskpilot.protocol.wire import (
    MAX_TREE_DEADLINE_MS,
    CaptureWindow,
    ImageDescriptor,
    ImageFormat,
    ObservationBody,
    Observe,
    OpaqueArea,
    Rect,
    TreeRead,
    Truncation,
    WindowInfo,
)

log = logging.getLogger("deskpilot.host.observer")

MAX_BINDINGS = 256
#: after an early screenshot of a window was thrown away (its pixels still changed after the
#: app went quiet), that window's next early screenshots are skipped, and one in this many
#: actions tries again
EARLY_RETRY = 8
MAX_EARLY_WINDOWS = 64
DEFAULT_MAX_ELEMENTS = 2000
DEFAULT_TEXT_BUDGET = 48_000


@dataclass(slots=True)
class Binding:
    """What the host remembers about a session's latest observation."""

    session: str
    frame_id: str
    tree_version: str
    window: XWindow
    capture_rect: Rect
    process_start: int | None
    tree: TreeResult | None
    observed_at: float = field(default_factory=time.monotonic)
    #: how the tree was read; element actions need ``tree_read.reusable``
    tree_read: TreeRead = field(default_factory=TreeRead)
    #: a checksum of the screenshot handed out with it (None: none was): an action's
    #: post-action look that has the same tree version and checksum shows nothing changed
    #: (host/post_action.py, "Late effects")
    png_crc: int | None = None


@dataclass(frozen=True, slots=True)
class Captured:
    """One ``capture_window`` picture and what the answer tells about it."""

    window: XWindow | None  # None for a screen capture
    rect: Rect  # where the picture is on screen
    data: bytes
    format: ImageFormat
    capture_ms: float
    #: the visible top-level windows the picture shows part of, topmost first
    windows: list[XWindow]
    #: screen rectangles painted out (windows of never-captured apps)
    withheld: list[Rect]
    pointer: tuple[int, int] | None


def new_frame_id() -> str:
    return "f-" + secrets.token_hex(8)


def session_key(session_id: str | None) -> str:
    return session_id or ""


def window_relative(region: Rect, window: Rect) -> Rect | None:
    """A screen rectangle as coordinates inside the window, clipped; None when outside."""
    x0, y0 = max(region.x, window.x), max(region.y, window.y)
    x1 = min(region.x + region.width, window.x + window.width)
    y1 = min(region.y + region.height, window.y + window.height)
    if x1 <= x0 or y1 <= y0:
        return None
    return Rect(x=x0 - window.x, y=y0 - window.y, width=x1 - x0, height=y1 - y0)


def covered_regions(window: XWindow, windows: list[XWindow]) -> list[Rect]:
    """The parts of ``window`` that the windows above it (``windows``: topmost first) lie
    over, window-relative: X captures a window's screen area, so its screenshot shows their
    pixels there (and an OCR outline would read their text as this window's)."""
    out: list[Rect] = []
    for w in windows:
        if w.xid == window.xid:
            break
        if not w.visible or w.minimized:
            continue
        rel = window_relative(w.bounds, window.bounds)
        if rel is not None:
            out.append(rel)
    return out


def opaque_areas(tree: TreeResult | None, window: XWindow) -> list[OpaqueArea]:
    """The tree's widgets that draw what they do not expose (atspi/opaque.py), in window
    coordinates and clipped to it: none for a tree that is partial (never acted on) or stale
    (its pixels may have moved on)."""
    if tree is None or tree.snapshot.partial is not None or tree.stale_age_ms is not None:
        return []
    out: list[OpaqueArea] = []
    for o in tree.snapshot.opaque:
        rect = window_relative(o.rect, window.bounds)
        if rect is not None:
            out.append(OpaqueArea(element_id=o.element_id, rect=rect))
    return out


class Observer:
    def __init__(self, desktop: X11Desktop, accessibility: Accessibility | None) -> None:
        self.desktop = desktop
        self.accessibility = accessibility
        self._bindings: OrderedDict[str, Binding] = OrderedDict()
        self._lock = threading.Lock()
        #: the raw pixels of the last observation asked to keep them (frameId, capture), for
        #: confirm_screenshot; one slot, so at most one window's pixels are held
        self._kept: tuple[str, Frame] | None = None
        #: windows whose last early screenshot missed: actions since (see early_screenshot)
        self._early_misses: OrderedDict[int, int] = OrderedDict()
        #: the AT-SPI frame each X window's last tree was read from: a hint for the next read
        #: of it (Accessibility.tree_for checks it against a fresh lookup)
        self._frames: OrderedDict[int, FrameInfo] = OrderedDict()

    # ---------------------------------------------------------------- bindings

    def binding(self, session_id: str | None) -> Binding | None:
        with self._lock:
            return self._bindings.get(session_key(session_id))

    def drop(self, session_id: str | None) -> None:
        with self._lock:
            self._bindings.pop(session_key(session_id), None)

    def _bind(self, binding: Binding) -> None:
        with self._lock:
            self._bindings.pop(binding.session, None)
            self._bindings[binding.session] = binding
            while len(self._bindings) > MAX_BINDINGS:
                self._bindings.popitem(last=False)

    # ---------------------------------------------------------------- observe

    async def observe(
        self, request: Observe, *, keep_pixels: bool = False, after_action: bool = False
    ) -> tuple[ObservationBody, bytes | None]:
        """``keep_pixels``: remember this capture's raw pixels for :meth:`confirm_screenshot`.
        ``after_action``: the look that shows an action's effect, which the tree cache must
        not serve from what it kept on the strength of events alone (atspi/tree_cache.py)."""
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        window, windows = self.desktop.resolve(request.target)
        deadline_s = tree_deadline_s(request)
        if window.pid is None and self.accessibility is not None:
            await self.accessibility.fill_missing_pids([window], timeout=deadline_s)
        # one deadline for the whole look: what a pid lookup spent, the tree read has not
        read_s = max(0.0, deadline_s - (time.perf_counter() - t0))
        foreground = next((w for w in windows if w.focused), None)
        timings["windows"] = _ms(t0)
        # credential apps: neither their tree nor their pixels are read
        assert_capture_allowed(window.privacy_identity())

        tree: TreeResult | None = None
        tree_task = None
        popups = self.desktop.popup_rects(window, [w.xid for w in windows])
        if self.accessibility is not None:
            tree_task = asyncio.ensure_future(
                self.accessibility.tree_for(
                    window,
                    max_elements=request.max_elements or DEFAULT_MAX_ELEMENTS,
                    text_budget=request.text_budget or DEFAULT_TEXT_BUDGET,
                    hint=self._frames.get(window.xid),
                    deadline_s=read_s,
                    popups=popups,
                    after_action=after_action,
                )
            )
            await asyncio.sleep(0)  # let the tree's first D-Bus calls go out before capturing
        capture_rect = self.desktop.visible_rect(window)
        png: bytes | None = None
        image: ImageDescriptor | None = None
        frame: Frame | None = None
        if request.include_screenshot:
            # grabbed and encoded on the capture thread while this loop serves the tree's
            # D-Bus replies: the grab no longer eats into the read's deadline
            try:
                frame, png, encode_ms = await self.desktop.require_shooter().grab_png(window.bounds)
            except BaseException:
                if tree_task is not None:
                    tree_task.cancel()
                raise
            timings["capture"] = frame.capture_ms
            timings["encode"] = encode_ms
            capture_rect = frame.rect
            image = ImageDescriptor(
                width=frame.rect.width, height=frame.rect.height, byte_length=len(png)
            )
        unavailable = False
        if tree_task is not None:
            t3 = time.perf_counter()
            read = await tree_task
            timings["tree_wait"] = _ms(t3)
            unavailable = isinstance(read, TreeUnavailable)
            tree = read if isinstance(read, TreeResult) else None
            self._frames.pop(window.xid, None)
            if tree is not None:  # also a stale one: a stopped app keeps its frames
                self._frames[window.xid] = tree.frame
                while len(self._frames) > MAX_BINDINGS:
                    self._frames.popitem(last=False)
                timings["tree"] = tree.elapsed_ms
                if tree.app_name:
                    window.app_name = tree.app_name
        if foreground is not None and foreground.xid == window.xid:
            foreground = window

        text, version, count = (
            (tree.snapshot.text, tree.snapshot.tree_version, tree.snapshot.element_count)
            if tree
            else (
                "",
                empty_tree_version(),
                0,
            )
        )
        sensitive: list[Rect] = []
        if tree is not None:
            for region in tree.snapshot.sensitive_regions:
                rel = window_relative(region, window.bounds)
                if rel is not None:
                    sensitive.append(rel)
        body = ObservationBody(
            frame_id=new_frame_id(),
            tree_version=version,
            app=window.identity(),
            window=titled(window.info(), tree),
            foreground_app=foreground.identity() if foreground else None,
            foreground_window=foreground.info() if foreground else None,
            tree=text,
            element_count=count,
            truncation=(
                tree.snapshot.truncation if tree else Truncation(tree_unavailable=unavailable)
            ),
            sensitive_regions=sensitive,
            covered_regions=covered_regions(window, windows),
            popup_regions=[r for p in popups if (r := window_relative(p, window.bounds))],
            opaque_regions=opaque_areas(tree, window),
            tree_read=tree_read(tree, deadline_s if tree_task is not None else None),
            url=tree.snapshot.url if tree else None,
            image=image,
            timings_ms={k: round(v, 2) for k, v in {**timings, "total": _ms(t0)}.items()},
        )
        self._kept = (body.frame_id, frame) if keep_pixels and frame is not None else None
        self._bind(
            Binding(
                session=session_key(request.session_id),
                frame_id=body.frame_id,
                tree_version=version,
                window=window,
                capture_rect=capture_rect,
                process_start=self.desktop.process_identity(window.pid),
                tree=tree,
                tree_read=body.tree_read,
                png_crc=png_crc(png),
            )
        )
        return body, png

    async def confirm_screenshot(
        self, session_id: str | None, body: ObservationBody, png: bytes | None
    ) -> tuple[ObservationBody, bytes]:
        """The screenshot of a post-action observation (still the session's binding), taken
        once the app went quiet. After an action the tree — and, with
        ``observe(keep_pixels=True)``, the screenshot — is read while the host is still
        confirming that quiet; ``png`` is that early image (None: the read was tree-only). It
        is kept when the window's pixels now are exactly the same (a grab and a compare, no
        encoding); otherwise this new grab is encoded. Either way the image is what the screen
        shows once the app settled."""
        binding = self._current(session_id, body)
        kept, self._kept = self._kept, None
        t1 = time.perf_counter()
        frame = await self.desktop.require_shooter().grab(binding.window.bounds)
        if png is None or kept is None or kept[0] != body.frame_id:
            return await self._with_pixels(body, binding, frame)
        same = kept[1].rect == frame.rect and kept[1].bgrx == frame.bgrx
        self._early_result(binding.window.xid, same)
        if same:
            timings = {**body.timings_ms, "confirm": round(_ms(t1), 2)}
            return body.model_copy(update={"timings_ms": timings}), png
        return await self._with_pixels(body, binding, frame)

    def early_screenshot(self, window: XWindow) -> bool:
        """Should a post-action read of ``window`` take its screenshot with the tree (kept if
        :meth:`confirm_screenshot` finds the pixels unchanged), rather than only after the
        wait? Yes, unless the last early one of this window was thrown away: a GTK button
        plays its release transition for ≈ 200 ms after ``clicked``, so its window is never
        still that early, and encoding it next to the tree read only slows the read. Such a
        window tries again every ``EARLY_RETRY`` actions."""
        misses = self._early_misses.get(window.xid)
        if misses is None:
            return True
        if misses + 1 >= EARLY_RETRY:
            del self._early_misses[window.xid]
            return True
        self._early_misses[window.xid] = misses + 1
        return False

    def _early_result(self, xid: int, kept: bool) -> None:
        self._early_misses.pop(xid, None)
        if not kept:
            self._early_misses[xid] = 0
            while len(self._early_misses) > MAX_EARLY_WINDOWS:
                self._early_misses.popitem(last=False)

    def _current(self, session_id: str | None, body: ObservationBody) -> Binding:
        binding = self.binding(session_id)
        if binding is None or binding.frame_id != body.frame_id:
            raise DeskpilotError(ErrorCode.STALE_FRAME, "the observation is no longer current")
        return binding

    async def _with_pixels(
        self, body: ObservationBody, binding: Binding, frame: Frame
    ) -> tuple[ObservationBody, bytes]:
        png, encode_ms = await self.desktop.require_shooter().encode(frame)
        timings = {
            **body.timings_ms,
            "capture": round(frame.capture_ms, 2),
            "encode": round(encode_ms, 2),
        }
        binding.capture_rect = frame.rect
        binding.png_crc = png_crc(png)
        image = ImageDescriptor(
            width=frame.rect.width, height=frame.rect.height, byte_length=len(png)
        )
        return body.model_copy(update={"image": image, "timings_ms": timings}), png

    async def capture(self, request: CaptureWindow) -> Captured:
        """A picture of one window or (``screen``) the whole screen; never bound, never
        acted on. The window itself must be one that may be captured; any *other* window of
        an app that is never captured which shows in the picture (on top of the target, or
        anywhere on a screen capture) is painted out before the picture is encoded — its
        whole rectangle, also where a window above covers it: too much grey is harmless,
        too little would show a secret."""
        shooter = self.desktop.require_shooter()
        window: XWindow | None = None
        if request.screen:
            windows, _ = self.desktop.windows()
            area = self.desktop.screen_rect()
        else:
            window, windows = self.desktop.resolve(request.target)
            assert_capture_allowed(window.privacy_identity())
            area = window.bounds
        frame = await shooter.grab(area)
        pointer = self.desktop.pointer() if request.include_pointer else None
        if window is not None:  # the target and what is stacked above it
            above = next((i for i, w in enumerate(windows) if w.xid == window.xid), 0)
            windows = [*windows[:above], window]
        shown = [w for w in windows if w.visible and window_relative(w.bounds, frame.rect)]
        blocked = [w.bounds for w in shown if not is_capture_allowed(w.privacy_identity())]
        fmt, quality = request.format, request.quality or JPEG_QUALITY

        def encode() -> tuple[bytes, list[Rect]]:
            image = frame.image()
            painted = paint_out(image, frame.rect, blocked) if blocked else []
            if fmt == "jpeg":
                return encode_jpeg(image, quality), painted
            return encode_png(image), painted

        data, withheld = await asyncio.to_thread(encode)
        if withheld:
            log.info("capture: %d window(s) of never-captured apps painted out", len(withheld))
        return Captured(window, frame.rect, data, fmt, frame.capture_ms, shown, withheld, pointer)


def titled(info: WindowInfo, tree: TreeResult | None) -> WindowInfo:
    """The window as the observation describes it: titled as its root node names it in the
    tree read with it, when that read is current (the X title can lag behind the app: it is
    what the window manager was last told); the X title otherwise."""
    if tree is None or tree.stale_age_ms is not None or not tree.snapshot.title:
        return info
    if tree.snapshot.title == info.title:
        return info
    return info.model_copy(update={"title": tree.snapshot.title})


def tree_deadline_s(request: Observe) -> float:
    """The observe's tree deadline in seconds: the request's, else this host's
    (:func:`host_tree_deadline_s`); never above ``MAX_TREE_DEADLINE_MS``."""
    if request.tree_deadline_ms is not None:
        return min(request.tree_deadline_ms, MAX_TREE_DEADLINE_MS) / 1000
    return host_tree_deadline_s()


def tree_read(tree: TreeResult | None, deadline_s: float | None) -> TreeRead:
    """What the observation says of how its tree was read. ``cache`` and ``cache_note``
    come from the snapshot (host/atspi/tree_cache.py); a stale tree says how it was read
    back then, its age says the rest."""
    deadline_ms = round(deadline_s * 1000, 1) if deadline_s is not None else None
    if tree is None:
        return TreeRead(source="none", deadline_ms=deadline_ms)
    snap = tree.snapshot
    return TreeRead(
        source="accessibility",
        cache=snap.cache_state,
        cache_note=snap.cache_note,
        partial=snap.partial,
        unread_subtrees=snap.unread_subtrees,
        details_unread=snap.details_unread,
        stale_age_ms=tree.stale_age_ms,
        deadline_ms=deadline_ms,
    )


def png_crc(png: bytes | None) -> int | None:
    """The checksum a binding keeps of its screenshot (the host writes PNG the same way each
    time: the same pixels are the same bytes)."""
    return zlib.crc32(png) if png is not None else None


def empty_tree_version() -> str:
    """The version of "no tree": stable, so two tree-less looks at a window compare equal."""
    return "t-none"


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000
