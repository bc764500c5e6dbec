"""Steps 5–6 of an action (:mod:`deskpilot.host.action_dispatch`): waiting for the UI to settle,
and the post-action observation the result carries with ``observeAfter``.

Which rule decides the wait depends on what was dispatched (the rules themselves are in
:mod:`deskpilot.host.settle`): a semantic op settles on its app's events, counted from the op
itself; synthetic input to a window with a tree on that tree's events and the pixels; input
to a window without one on the pixels alone. With ``observeAfter`` the tree (and, where that
tends to hold, the screenshot) is read during the wait, so the observation costs little more
than the wait.

A dialog the action opened gets a further short wait before it is handed out (see
:meth:`PostAction.complete`). The window listing goes with the post-action state, so the
caller learns of a new window without a second round trip.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

from deskpilot.host.action_checks import Target, check_canceled
from deskpilot.host.observer import Observer
from deskpilot.host.outcome import Outcome
from deskpilot.host.session_registry import SessionRegistry
from deskpilot.host.settle import FirstEventWindow, Settled, Settler
from deskpilot.host.window_list import window_infos
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import (
    ExecuteAction,
    ObservationBody,
    Observe,
    Rect,
    TargetSpec,
    WaitBound,
    WindowInfo,
)

# an action's log lines keep one logger name, whichever of its parts writes them
log = logging.getLogger("deskpilot.host.action_dispatch")

DEFAULT_SETTLE_MS = 1500
DIALOG_SETTLE_MS = 800
CHROMIUM_DIALOG_GUARD_S = 0.55
# dialogs inside the observed window (a tab-modal one in a browser); not "alert": an infobar
_DIALOG_LINE = re.compile(r'^\s*- ((?:dialog|alertDialog|fileChooser)(?: "[^\n]*?")?) ', re.M)

#: the post-action observation and its PNG (None without a screenshot)
Post = tuple[ObservationBody, bytes | None]


@dataclass(slots=True)
class Settling:
    """How the wait ended, and what was read during it."""

    settled: bool
    #: when the action was dispatched (a new dialog's input guard counts from it)
    since: float
    #: the observation read while waiting (observeAfter), None when it still has to be taken
    post: Post | None = None
    toolkit_delay_ms: float | None = None
    #: which bound ended the wait (ActionResult.wait_bound)
    wait_bound: WaitBound | None = None


def settle_budget_ms(request: ExecuteAction) -> float:
    return request.settle_ms if request.settle_ms is not None else DEFAULT_SETTLE_MS


class PostAction:
    def __init__(
        self,
        desktop: X11Desktop,
        settler: Settler,
        observer: Observer,
        sessions: SessionRegistry,
    ) -> None:
        self.desktop = desktop
        self.settler = settler
        self.observer = observer
        self.sessions = sessions

    def baseline(self, target: Target) -> int | None:
        """The "before" pixels, taken before dispatch: they only matter to the no-tree rule
        (``Settler.pixels_only``)."""
        no_tree = target.bus is None or self.settler.accessibility is None
        return self.settler.fingerprint(target.rect) if no_tree else None

    async def settle_after(
        self,
        request: ExecuteAction,
        target: Target,
        outcome: Outcome,
        baseline: int | None,
        since: float,
    ) -> Settling:
        """Wait by the rule that fits what was dispatched (see the module doc)."""
        element, window, bus = target.element, target.window, target.bus
        if outcome.events_since is not None and element is not None:
            # a semantic op: the app's events decide, counted from the op itself, the first
            # one waited for as long as the app's toolkit is known to need
            first = await self.settler.first_event_window(element, outcome.answered_at)
            settled, post, bound = await self._settle(
                request, window, element.bus_name, outcome.events_since, None, first
            )
            delay = None
            if outcome.answered_at is not None:
                delay = self.settler.toolkit_delay_ms(
                    element.bus_name, outcome.events_since, outcome.answered_at
                )
            return Settling(settled, since, post, delay, bound)
        if bus is not None and self.settler.accessibility is not None:
            settled, post, bound = await self._settle(request, window, bus, since, target.rect)
            return Settling(settled, since, post, wait_bound=bound)
        budget = settle_budget_ms(request)
        settled = await self.settler.pixels_only(target.rect, baseline, since, budget)
        return Settling(settled, since, wait_bound="pixels" if settled else "budget")

    async def _settle(
        self,
        request: ExecuteAction,
        window: XWindow,
        bus: str,
        since: float,
        pixels: Rect | None,
        first: FirstEventWindow | None = None,
    ) -> tuple[bool, Post | None, WaitBound | None]:
        """Wait for the UI to settle; with observeAfter, the tree (and, where that tends to
        hold, the screenshot) is read during the wait, and the pixels are checked or taken
        once it ended (see :mod:`deskpilot.host.settle`). Returns (settled, the observation
        read, which bound ended the wait)."""
        budget = settle_budget_ms(request)
        hold = await self.settler.hold_s(bus)
        if not request.observe_after:
            done: Settled[Post | None] = await self.settler.settle(
                bus, since, budget, pixels=pixels, window=first, hold_s=hold
            )
            return done.settled, None, done.bound

        early = self.observer.early_screenshot(window)

        async def read() -> Post | None:
            return await self.observe_after(request, window, screenshot=early, keep_pixels=early)

        done = await self.settler.settle(
            bus, since, budget, pixels=pixels, read=read, window=first, hold_s=hold
        )
        if done.value is None:
            return done.settled, None, done.bound
        body, png = done.value
        try:
            # the read's screenshot, if the window still looks exactly like it (else a new one)
            post = await self.observer.confirm_screenshot(request.session_id, body, png)
        except DeskpilotError as exc:
            log.info("post-action screenshot failed: %s", exc.code.value)
            post = None
        return done.settled, post, done.bound

    async def complete(
        self, request: ExecuteAction, target: Target, settling: Settling
    ) -> Post | None:
        """The observation to hand out: the one read while settling, else (observeAfter) one
        taken now; taken again once a dialog the action opened has settled."""
        post = settling.post
        if request.observe_after and post is None:
            post = await self.observe_after(request, target.window, screenshot=True)
        tree = target.binding.tree
        if (
            post is not None
            and tree is not None
            and _dialogs(post[0].tree) - _dialogs(tree.snapshot.text)
        ):
            post = (
                await self._let_dialog_settle(request, target.window, target.rect, settling.since)
                or post
            )
        return post

    async def _let_dialog_settle(
        self, request: ExecuteAction, window: XWindow, rect: Rect, since: float
    ) -> Post | None:
        """A dialog the action opened is usually still fading in, and Chromium ignores input
        to a new dialog for its double-click interval (0.5 s) after showing it: a state handed
        out at once shows a half-drawn dialog whose buttons silently drop the next click. Wait
        for the pixels to hold still (bounded) and, in Chromium, for that guard, then look
        again."""
        start = time.monotonic()
        await self.settler.pixels_only(
            rect, self.settler.fingerprint(rect), start, DIALOG_SETTLE_MS
        )
        if "chrom" in (window.executable or "").lower():
            wait = since + CHROMIUM_DIALOG_GUARD_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        return await self.observe_after(request, window, screenshot=True)

    async def observe_after(
        self,
        request: ExecuteAction,
        window: XWindow,
        *,
        screenshot: bool,
        keep_pixels: bool = False,
    ) -> Post | None:
        """The window as the action left it (it becomes the session's binding); None when it
        cannot be observed (closed, now a credential app...): the action still happened."""
        check_canceled(self.sessions, request.session_id)
        try:
            return await self.observer.observe(
                Observe(
                    id=0,
                    session_id=request.session_id,
                    target=TargetSpec(window_id=window.window_id),
                    include_screenshot=screenshot,
                ),
                keep_pixels=keep_pixels,
            )
        except DeskpilotError as exc:
            log.info("post-action observation failed: %s", exc.code.value)
            return None

    async def windows(self, body: ObservationBody | None) -> list[WindowInfo] | None:
        """The listing that goes with the post-action state (none without one)."""
        if body is None:
            return None
        windows, _ = await window_infos(self.desktop, self.settler.accessibility, app_names=False)
        return windows


def _dialogs(tree: str) -> set[str]:
    """The dialog-like elements of a rendered tree, by role and name."""
    return set(_DIALOG_LINE.findall(tree))
