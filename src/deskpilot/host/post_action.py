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

**Late effects.** The wait ends once the app is quiet, or showed no reaction within its
toolkit's bound (host/settle.py). That bound proves nothing came *by then*: a key LibreOffice
answers with a dialog, or a handler that does its work from a timer, shows its effect later
— and a result that then says "nothing changed" misleads the agent into repeating the action
(an agent retyped a formula Calc showed a moment later, and left it twice). So when nothing
shows an effect yet — the post-action look shows the window exactly as the action found it
(the same tree version and the same screenshot bytes as the binding the action was checked
against), or the app sent no event since the input (a no-event wait bound) — the host keeps
watching until the request's settle budget (``settleMs``, 1.5 s by default) has passed
since the action: for the app's next accessibility event (its pixels are no sign where there
is a tree: a focused field's caret blinks), or, for a window without a tree, a change of its
pixels. A change within it is settled on (events quiet, pixels still) and looked at again;
only a window that stayed the same to the end goes out unchanged, and only then may the
caller say the action changed nothing (runtime/effects.py). The price is paid by actions
that change nothing: their result comes at the end of the budget instead of at the
toolkit's bound.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

from deskpilot.host.action_checks import Target, check_canceled
from deskpilot.host.observer import Observer, png_crc
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
#: wait bounds that end a wait in which the app sent no event at all (host/settle.py); with a
#: tree-less window, ``pixels`` (the pixels held still, changed or not)
NO_REACTION_BOUNDS: frozenset[WaitBound | None] = frozenset(
    {"first_event", "toolkit_gtk", "toolkit_none", "pixels"}
)
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
    #: when the wait ended (monotonic): a late effect is an event or a change after it
    ended: float = 0.0
    #: the window's pixels (fingerprint) right before dispatch, when they were taken
    baseline: int | None = None


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

    def baseline(self, request: ExecuteAction, target: Target) -> int | None:
        """The "before" pixels, taken right before dispatch: the no-tree rule waits for them
        to change (``Settler.pixels_only``), and a post-action look whose window still shows
        them, after an app that sent no event, is watched for a late effect."""
        no_tree = target.bus is None or self.settler.accessibility is None
        if no_tree or request.observe_after:
            return self.settler.fingerprint(target.rect)
        return None

    async def settle_after(
        self,
        request: ExecuteAction,
        target: Target,
        outcome: Outcome,
        baseline: int | None,
        since: float,
    ) -> Settling:
        """Wait by the rule that fits what was dispatched (see the module doc)."""
        settling = await self._wait(request, target, outcome, baseline, since)
        settling.baseline = baseline
        return settling

    async def _wait(
        self,
        request: ExecuteAction,
        target: Target,
        outcome: Outcome,
        baseline: int | None,
        since: float,
    ) -> Settling:
        element, window, bus = target.element, target.window, target.bus
        if outcome.events_since is not None and element is not None:
            # a semantic op: the app's events decide, counted from the op itself, the first
            # one waited for as long as the app's toolkit is known to need
            first = await self.settler.first_event_window(element, outcome.answered_at)
            settled, post, bound = await self._settle(
                request, window, element.bus_name, outcome.events_since, None, first
            )
            ended = time.monotonic()
            delay = None
            if outcome.answered_at is not None:
                delay = self.settler.toolkit_delay_ms(
                    element.bus_name, outcome.events_since, outcome.answered_at, ended
                )
            return Settling(settled, since, post, delay, bound, ended)
        if bus is not None and self.settler.accessibility is not None:
            settled, post, bound = await self._settle(request, window, bus, since, target.rect)
            return Settling(settled, since, post, wait_bound=bound, ended=time.monotonic())
        budget = settle_budget_ms(request)
        settled = await self.settler.pixels_only(target.rect, baseline, since, budget)
        ended_by: WaitBound = "pixels" if settled else "budget"
        return Settling(settled, since, wait_bound=ended_by, ended=time.monotonic())

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
        if (
            post is not None
            and request.observe_after
            and self._no_effect_yet(target, post, settling)
            and await self._late_effect(request, target, settling)
        ):
            # the look after it (None: the window is gone, closed by what came late)
            post = settling.post
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

    def _no_effect_yet(self, target: Target, post: Post, settling: Settling) -> bool:
        """Nothing shows an effect of the action yet: the post-action look shows the window
        as the action found it, or the app sent no event since the input (its toolkit's bound
        ended the wait). Pixels alone do not count as an effect where there is a tree: a
        focused field's caret blinks. A window without a tree has only its pixels: they must
        still be those of right before the input."""
        if _unchanged(target, post):
            return True
        if settling.wait_bound not in NO_REACTION_BOUNDS:
            return False
        if self._watched_bus(target) is not None:
            return True
        return self.settler.fingerprint(target.rect) == settling.baseline

    def _watched_bus(self, target: Target) -> str | None:
        """The bus whose events show the action's effect (None: the window has no tree)."""
        if self.settler.accessibility is None:
            return None
        return target.element.bus_name if target.element is not None else target.bus

    async def _late_effect(
        self, request: ExecuteAction, target: Target, settling: Settling
    ) -> bool:
        """Nothing shows an effect yet: watch for a late effect until the settle budget since
        the action has passed (see "Late effects" in the module doc). When one comes, settle
        on it and look again: ``settling`` then says how that wait ended and holds the new
        look (None when the window is gone); True. False when nothing came."""
        until = settling.since + settle_budget_ms(request) / 1000
        bus = self._watched_bus(target)
        seen = await self.settler.late_change(bus, target.rect, settling.ended, until)
        if seen is None:
            return False
        log.info("late effect %.0f ms after the action", (seen - settling.since) * 1000)
        if bus is not None:
            settled, post, bound = await self._settle(
                request, target.window, bus, settling.ended, target.rect
            )
        else:
            budget = settle_budget_ms(request)
            now = time.monotonic()
            base = self.settler.fingerprint(target.rect)
            settled = await self.settler.pixels_only(target.rect, base, now, budget)
            post, bound = None, ("pixels" if settled else "budget")
        settling.settled, settling.wait_bound = settled, bound
        settling.post = post or await self.observe_after(request, target.window, screenshot=True)
        return True

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
                after_action=True,
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


def _unchanged(target: Target, post: Post) -> bool:
    """The post-action look shows the window as the binding the action was checked against
    did: the same tree version and (when both have one) the same screenshot bytes."""
    body, png = post
    before = target.binding
    if body.tree_version != before.tree_version:
        return False
    return before.png_crc is None or png is None or png_crc(png) == before.png_crc


def _dialogs(tree: str) -> set[str]:
    """The dialog-like elements of a rendered tree, by role and name."""
    return set(_DIALOG_LINE.findall(tree))
