"""The dispatcher's primitives: what every per-kind performer acts with.

An AT-SPI operation (answered, not yet settled: settling on the app's events is left to the
caller so it can overlap the post-action read), aiming synthetic input at an element's
centre, keyboard focus, the cancel check and the test switch. :mod:`deskpilot.host.item_clicks`
and :mod:`deskpilot.host.combo_boxes` run their rules on these too.

Nothing here decides *which* way an action is done; that is the performers'
(:mod:`deskpilot.host.pointer_actions`, :mod:`deskpilot.host.keyboard_actions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.action_checks import check_canceled
from deskpilot.host.atspi.combo import ComboParts
from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.effect_checks import value_check
from deskpilot.host.menu_grab import refuse_if_menu_open
from deskpilot.host.outcome import EffectCheck, Outcome
from deskpilot.host.session_registry import SessionRegistry
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.input import XInput
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

#: how long a window that was just given the X focus may take to say it is active
ACTIVE_WAIT_S = 0.5
ACTIVE_POLL_S = 0.02

# an action's log lines keep one logger name, whichever of its parts writes them
log = logging.getLogger("deskpilot.host.action_dispatch")

HANG_ENV = "DESKPILOT_HOST_TEST_HANG"


def test_hang_target() -> str | None:
    """The request type or action kind to hang in (tests of the client's timeouts only)."""
    if os.environ.get("DESKPILOT_HOST_LOCAL_TRUST") != "1":
        return None
    return os.environ.get(HANG_ENV) or None


class Primitives:
    def __init__(
        self, desktop: X11Desktop, accessibility: Accessibility | None, sessions: SessionRegistry
    ) -> None:
        self.desktop = desktop
        #: set again when it connects after construction (ActionDispatcher.accessibility)
        self.accessibility = accessibility
        self.sessions = sessions
        #: cleanups to run once the action settled or failed (a paste's clipboard selection)
        self.after_settle: list[Callable[[], None]] = []

    def input(self) -> XInput:
        return self.desktop.require_input()

    def check_canceled(self, session_id: str | None) -> None:
        check_canceled(self.sessions, session_id)

    async def hang_if_asked(self, kind: str, session_id: str | None) -> None:
        """The test switch (docs/host.md, "Test switch"): hang until the session is canceled."""
        if test_hang_target() != kind:
            return
        log.warning("test switch %s: hanging inside %s", HANG_ENV, kind)
        while True:
            self.check_canceled(session_id)
            await asyncio.sleep(0.05)

    async def run_after_settle(self) -> None:
        """Run and forget the cleanups; one that fails does not keep the others from running."""
        for cleanup in self.after_settle:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(cleanup)
        self.after_settle.clear()

    # ---------------------------------------------------------------- AT-SPI

    async def semantic(
        self, element: ElementRef | None, op: SemanticOp, *, settle: bool = True
    ) -> Outcome | None:
        """The op done through AT-SPI (settled on the app's events), or None when it cannot."""
        if element is None or self.accessibility is None:
            return None
        if settle:
            await self.accessibility.events_ready()
        since = time.monotonic()
        result = await self.accessibility.perform(element, op)
        if result is None:
            return None
        answered = time.monotonic()
        # settling on the app's events is the post-action step's, so it can overlap the next read
        return Outcome(
            "semantic",
            result.detail,
            events_since=since if settle else None,
            answered_at=answered if settle else None,
        )

    def value_check(self, element: ElementRef, wanted: str | float) -> EffectCheck | None:
        """The check that ``element`` holds ``wanted`` once the UI settled (a set_value's
        effect, host/effect_checks.py); None without accessibility."""
        if self.accessibility is None:
            return None
        return value_check(self.accessibility, element, wanted)

    async def action_names(self, element: ElementRef) -> tuple[str, ...]:
        if self.accessibility is None:
            return ()
        return await self.accessibility.action_names(element)

    async def combo_parts(self, element: ElementRef) -> ComboParts | None:
        if self.accessibility is None:
            return None
        return await self.accessibility.combo_parts(element)

    async def combo_of_option(self, element: ElementRef) -> ComboParts | None:
        if self.accessibility is None:
            return None
        return await self.accessibility.combo_of_option(element)

    async def toolkit(self, element: ElementRef) -> str:
        if self.accessibility is None:
            return ""
        return await self.accessibility.toolkit(element)

    async def character_count(self, element: ElementRef) -> int | None:
        if self.accessibility is None:
            return None
        return await self.accessibility.character_count(element)

    async def selection(self, element: ElementRef) -> tuple[int, int, str] | None:
        if self.accessibility is None:
            return None
        return await self.accessibility.selection(element)

    # ---------------------------------------------------------------- aim and focus

    async def center(
        self,
        element: ElementRef,
        rect: Rect,
        *,
        window: XWindow | None = None,
        in_popup: bool = False,
    ) -> tuple[int, int]:
        """Where synthetic input at the element goes: the centre of its extents read now,
        inside the window's visible area (else the input would hit something else) — or,
        with ``in_popup``, inside a mapped popup (an item of an open menu that hangs past the
        window's edge: popups stack above every window, x11/popups.py). With ``window``, the
        point must not be covered by another window either: a right click on an element of
        a covered window would open the menu of the window on top, and keys would follow."""
        extents = None
        if self.accessibility is not None:
            extents = await self.accessibility.extents(element)
        if extents is None or extents.width <= 0 or extents.height <= 0:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element has no on-screen extents to aim synthetic input at",
                details={"elementId": element.id, "reason": "no_extents"},
            )
        x = extents.x + extents.width // 2
        y = extents.y + extents.height // 2
        inside = [rect, *(self.desktop.popup_rects() if in_popup else ())]
        if not any(r.x <= x < r.x + r.width and r.y <= y < r.y + r.height for r in inside):
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element is outside the window's visible area; scroll it into view",
                details={"elementId": element.id, "reason": "offscreen"},
            )
        if window is not None:
            refuse_if_menu_open(self.desktop, window)
        other = self.desktop.covered_at(window, x, y) if window is not None else None
        if other is not None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "another window is on top of the element; input there would go to it",
                details={
                    "elementId": element.id,
                    "reason": "covered_point",
                    "coveringWindow": f"0x{other:x}",
                },
            )
        return x, y

    def popup_rects(self) -> list[Rect]:
        """Where the mapped popups (menus, drop-down lists) are now (x11/popups.py)."""
        return self.desktop.popup_rects()

    async def click_inside(self, element: ElementRef, area: Rect) -> bool:
        """A left click at the element's centre, read now, when it lies inside ``area`` (a
        popup that just opened); False, and nothing sent, when it does not (yet)."""
        extents = await self.accessibility.extents(element) if self.accessibility else None
        if extents is None or extents.width <= 0 or extents.height <= 0:
            return False
        x, y = extents.x + extents.width // 2, extents.y + extents.height // 2
        if not (area.x <= x < area.x + area.width and area.y <= y < area.y + area.height):
            return False
        await asyncio.to_thread(self.input().click, x, y, "left", 1)
        return True

    async def pointer_click(self, element: ElementRef, rect: Rect, count: int) -> None:
        """A left click (``count`` times) at the element's centre."""
        x, y = await self.center(element, rect)
        await asyncio.to_thread(self.input().click, x, y, "left", count)

    async def ensure_focus(self, window: XWindow) -> str | None:
        """Focus the window unless it has it; how it was done, or None when it had it.

        Every key an action sends comes after this (press_key, typing, paste, select-all):
        so it refuses first when another app's menu is open (host/menu_grab.py)."""
        refuse_if_menu_open(self.desktop, window)
        if self.desktop.has_focus(window):
            return None
        how = await asyncio.to_thread(self.desktop.focus, window)
        await self._until_active(window)
        return how

    async def _until_active(self, window: XWindow) -> None:
        """Wait (up to ``ACTIVE_WAIT_S``) until the window's frame says it is active: keys
        sent right after the X focus moved are dropped by an app that has not taken it in
        yet (Chromium lost the first 35 characters of a text typed at once: tests/FLAKES.md).
        No wait for a window without an accessible frame, or when it cannot be read."""
        acc = self.accessibility
        if acc is None:
            return
        deadline = time.monotonic() + ACTIVE_WAIT_S
        while True:
            try:
                frame, _ = await acc.frames_for(window)
            except Exception:  # a slow or gone app: the keys go as before
                return
            if frame is None or frame.active or time.monotonic() >= deadline:
                return
            await asyncio.sleep(ACTIVE_POLL_S)

    async def bring_to_front(self, window: XWindow) -> str:
        """The window raised and given the keyboard focus, as a person clicks a window before
        working in it: a list a covered Firefox window is asked to open does not open.
        Refused first when another app's menu is open (host/menu_grab.py). Returns once the
        window says it is active, as :meth:`ensure_focus` does: what follows a raise (a
        click, keys) goes to a window that has taken the focus in."""
        refuse_if_menu_open(self.desktop, window)
        how = await asyncio.to_thread(self.desktop.focus, window)
        await self._until_active(window)
        return how

    async def focus_element(
        self, element: ElementRef, window: XWindow, rect: Rect
    ) -> tuple[str, str]:
        """Keyboard focus on an element: Component.GrabFocus, else a click at its centre."""
        moved = await self.ensure_focus(window)
        if moved is None and "focused" in element.states:
            # grabbing the focus again is not free: an entry selects all its text, and a
            # file chooser's location entry then drops the Enter that follows the typing
            return "semantic", "already focused"
        done = await self.semantic(element, SemanticOp(OpKind.GRAB_FOCUS), settle=False)
        if done is not None:
            return "semantic", done.detail
        x, y = await self.center(element, rect, window=window)
        await asyncio.to_thread(self.input().click, x, y, "left", 1)
        return "synthetic", "focus by click"
