"""``execute_action``: check freshness, act semantically when possible, else synthesise input.

Order of business for every action:

1. the session must not be canceled (``session_canceled``);
2. ``frameId`` must be the session's current observation (``stale_frame``) and
   ``treeVersion`` its tree (``stale_tree``); the binding is then dropped, so the next action
   needs a new observation whatever happens here;
3. the window must still exist with the same process (pid and start time), and an element id
   must resolve in that tree to a node that still exists in the same process (``stale_tree``);
4. dispatch: AT-SPI first (Action, EditableText, Value, Text selection, Component focus),
   XTEST when the element cannot do it or the action is positional;
5. wait for the UI to settle (bounded, :mod:`deskpilot.host.settle`), and report how it went;
6. with ``observeAfter``, carry the settled window's observation in the result (it becomes
   the session's binding, as an ``observe`` would).

Coordinates are normalised to the observed window's captured area: (0, 0) is its top-left
pixel, (1, 1) its bottom-right one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import Callable
from typing import Literal

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.combo import ComboParts
from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.combo_boxes import ComboBoxes
from deskpilot.host.item_clicks import ItemClicks, clicked_item
from deskpilot.host.observer import Binding, Observer
from deskpilot.host.outcome import Outcome
from deskpilot.host.session_registry import SessionRegistry
from deskpilot.host.settle import Settler
from deskpilot.host.window_list import window_infos
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.input import Canceled, XInput
from deskpilot.host.x11.keymap import parse_chord
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    ActionResult,
    ClickAction,
    DragAction,
    ExecuteAction,
    FocusWindowAction,
    InvokeElementAction,
    ObservationBody,
    Observe,
    PasteTextAction,
    Point,
    PressKeyAction,
    Rect,
    ScrollAction,
    SecondaryAction,
    SelectTextAction,
    SetValueAction,
    TargetSpec,
    TypeTextAction,
)

log = logging.getLogger("deskpilot.host.action_dispatch")

DEFAULT_SETTLE_MS = 1500
PASTE_IDLE_S = 0.25
FOCUS_ACTION_NAMES = frozenset({"focus", "grab_focus", "grabfocus"})
MAX_SELECT_KEYS = 5000
DIALOG_SETTLE_MS = 800
CHROMIUM_DIALOG_GUARD_S = 0.55
# dialogs inside the observed window (a tab-modal one in a browser); not "alert": an infobar
_DIALOG_LINE = re.compile(r'^\s*- ((?:dialog|alertDialog|fileChooser)(?: "[^\n]*?")?) ', re.M)
HANG_ENV = "DESKPILOT_HOST_TEST_HANG"
PASTE_FETCH_TIMEOUT_S = 2.0


def test_hang_target() -> str | None:
    """The request type or action kind to hang in (tests of the client's timeouts only)."""
    if os.environ.get("DESKPILOT_HOST_LOCAL_TRUST") != "1":
        return None
    return os.environ.get(HANG_ENV) or None


Post = tuple[ObservationBody, bytes | None]


class ActionDispatcher:
    def __init__(
        self,
        desktop: X11Desktop,
        accessibility: Accessibility | None,
        observer: Observer,
        sessions: SessionRegistry,
    ) -> None:
        self.desktop = desktop
        self.settler = Settler(desktop, accessibility)
        self.observer = observer
        self.sessions = sessions
        self.current_session: str | None = None
        self.running = False
        self._settle_ms = DEFAULT_SETTLE_MS
        self._after_settle: list[Callable[[], None]] = []
        self._items = ItemClicks(self._semantic, self._pointer_click, self._action_names)
        self._combos = ComboBoxes(
            self._semantic, self._action_names, self._combo_parts, self._combo_of_option
        )

    @property
    def accessibility(self) -> Accessibility | None:
        return self.settler.accessibility

    @accessibility.setter
    def accessibility(self, value: Accessibility | None) -> None:
        # connected after construction (RequestHandler.start): the settler must see it too
        self.settler.accessibility = value

    # ---------------------------------------------------------------- checks

    def _check_canceled(self, session_id: str | None) -> None:
        if self.sessions.is_canceled(session_id):
            raise DeskpilotError(ErrorCode.SESSION_CANCELED, "the session was canceled")

    def _fresh_binding(self, request: ExecuteAction) -> Binding:
        binding = self.observer.binding(request.session_id)
        if binding is None:
            raise DeskpilotError(
                ErrorCode.STALE_FRAME,
                "no current observation for this session; observe first",
            )
        if request.frame_id != binding.frame_id:
            raise DeskpilotError(
                ErrorCode.STALE_FRAME,
                "frameId is not this session's current observation; observe again",
            )
        if request.tree_version != binding.tree_version:
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "treeVersion does not match the current observation; observe again",
            )
        return binding

    def _live_window(self, binding: Binding) -> XWindow:
        window = self.desktop.current(binding.window.xid)
        if window is None:
            raise DeskpilotError(
                ErrorCode.STALE_TREE, "the observed window no longer exists; observe again"
            )
        if window.pid != binding.window.pid or (
            binding.process_start is not None
            and self.desktop.process_identity(window.pid) != binding.process_start
        ):
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "the observed window now belongs to another process; observe again",
            )
        return window

    async def _element(self, binding: Binding, element_id: int | None) -> ElementRef | None:
        if element_id is None:
            return None
        tree = binding.tree
        element = tree.snapshot.elements.get(element_id) if tree is not None else None
        if element is None:
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "element id does not resolve in the current tree; observe again",
                details={"elementId": element_id},
            )
        if binding.window.pid is not None and element.pid != binding.window.pid:
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "the element belongs to another process; observe again",
                details={"elementId": element_id},
            )
        if self.accessibility is not None and not await self.accessibility.still_valid(element):
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "the element no longer exists; observe again",
                details={"elementId": element_id},
            )
        return element

    # ---------------------------------------------------------------- entry

    async def execute(self, request: ExecuteAction) -> tuple[ActionResult, bytes | None]:
        """Run the action; with ``observeAfter``, the result carries the settled window's
        observation (and the PNG is returned alongside, for the binary frame)."""
        started = time.perf_counter()
        self._check_canceled(request.session_id)
        binding = self._fresh_binding(request)
        self.observer.drop(request.session_id)
        window = self._live_window(binding)
        action = request.action
        element_id = getattr(action, "element_id", None)
        element = await self._element(binding, element_id)
        rect = self.desktop.visible_rect(window)
        if _positional(action) and (rect.width, rect.height) != (
            binding.capture_rect.width,
            binding.capture_rect.height,
        ):
            # a point of the old image would land elsewhere in the resized window
            raise DeskpilotError(
                ErrorCode.STALE_FRAME,
                "the window was resized since it was observed; coordinates of that image no "
                "longer map to the same place: observe again",
                details={"reason": "window_resized"},
            )
        if _positional(action):
            self._check_uncovered(window, rect, action)
        xinput = self.desktop.input
        self.current_session = request.session_id
        self.running = True
        if xinput is not None:
            xinput.check = lambda: self._check_canceled(request.session_id)
        self._settle_ms = request.settle_ms if request.settle_ms is not None else DEFAULT_SETTLE_MS
        post: Post | None = None
        toolkit_delay_ms: float | None = None
        bus = binding.tree.frame.ref.bus_name if binding.tree is not None else None
        try:
            # the "before" pixels only matter to the no-tree rule (pixels_only)
            no_tree = bus is None or self.accessibility is None
            baseline = self.settler.fingerprint(rect) if no_tree else None
            since = time.monotonic()
            outcome = await self._dispatch(request, window, rect, element, binding)
            if outcome.events_since is not None and element is not None:
                # a semantic op: the app's events decide, counted from the op itself
                settled, post = await self._settle(
                    request, window, element.bus_name, outcome.events_since, None
                )
                if outcome.answered_at is not None:
                    toolkit_delay_ms = self.settler.toolkit_delay_ms(
                        element.bus_name, outcome.events_since, outcome.answered_at
                    )
            elif bus is not None and self.accessibility is not None:
                settled, post = await self._settle(request, window, bus, since, rect)
            else:
                settled = await self.settler.pixels_only(rect, baseline, since, self._settle_ms)
        except Canceled:
            raise DeskpilotError(
                ErrorCode.SESSION_CANCELED, "the session was canceled during the action"
            ) from None
        finally:
            for cleanup in self._after_settle:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(cleanup)
            self._after_settle.clear()
            self.running = False
            self.current_session = None
            if xinput is not None:
                xinput.check = lambda: None
        if request.observe_after and post is None:
            post = await self._observe_after(request, window, screenshot=True)
        if (
            post is not None
            and binding.tree is not None
            and _dialogs(post[0].tree) - _dialogs(binding.tree.snapshot.text)
        ):
            post = await self._let_dialog_settle(request, window, rect, since) or post
        body, png = post if post is not None else (None, None)
        windows = None
        if body is not None:  # the listing that goes with the post-action state
            windows, _ = await window_infos(self.desktop, self.accessibility, app_names=False)
        result = ActionResult(
            id=request.id,
            dispatched=outcome.dispatched,
            method=outcome.method,
            kind=action.kind,
            detail=outcome.detail,
            settled=settled,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
            toolkit_delay_ms=toolkit_delay_ms,
            observation=body,
            windows=windows,
            item_click=outcome.item_click,
        )
        return result, png

    # ---------------------------------------------------------------- settling

    def _check_uncovered(self, window: XWindow, rect: Rect, action: object) -> None:
        """A point of the observed image must still be this window's on screen: covered by
        another window, synthetic input would go to that one."""
        point = action.start if isinstance(action, DragAction) else getattr(action, "point", None)
        if point is None:
            return
        x, y = self._to_screen(rect, point)
        other = self.desktop.covered_at(window, x, y)
        if other is not None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "another window is on top of the window at that point; input there would go to it",
                details={"reason": "covered_point", "coveringWindow": f"0x{other:x}"},
            )

    async def _settle(
        self,
        request: ExecuteAction,
        window: XWindow,
        bus: str,
        since: float,
        pixels: Rect | None,
    ) -> tuple[bool, Post | None]:
        """Wait for the UI to settle; with observeAfter, the tree (and, where that tends to
        hold, the screenshot) is read during the wait, and the pixels are checked or taken
        once it ended (see :mod:`deskpilot.host.settle`)."""
        if not request.observe_after:
            settled, _ = await self.settler.settle(bus, since, self._settle_ms, pixels=pixels)
            return settled, None

        early = self.observer.early_screenshot(window)

        async def read() -> Post | None:
            return await self._observe_after(request, window, screenshot=early, keep_pixels=early)

        settled, tree_only = await self.settler.settle(
            bus, since, self._settle_ms, pixels=pixels, read=read
        )
        if tree_only is None:
            return settled, None
        body, png = tree_only
        try:
            # the read's screenshot, if the window still looks exactly like it (else a new one)
            return settled, await self.observer.confirm_screenshot(request.session_id, body, png)
        except DeskpilotError as exc:
            log.info("post-action screenshot failed: %s", exc.code.value)
            return settled, None

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
        return await self._observe_after(request, window, screenshot=True)

    async def _observe_after(
        self,
        request: ExecuteAction,
        window: XWindow,
        *,
        screenshot: bool,
        keep_pixels: bool = False,
    ) -> Post | None:
        """The window as the action left it (it becomes the session's binding); None when it
        cannot be observed (closed, now a credential app...): the action still happened."""
        self._check_canceled(request.session_id)
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

    # ---------------------------------------------------------------- helpers

    def _input(self) -> XInput:
        return self.desktop.require_input()

    @staticmethod
    def _to_screen(rect: Rect, point: Point) -> tuple[int, int]:
        x = rect.x + round(point.x * max(rect.width - 1, 0))
        y = rect.y + round(point.y * max(rect.height - 1, 0))
        return x, y

    async def _center(self, element: ElementRef, rect: Rect) -> tuple[int, int]:
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
        if not (rect.x <= x < rect.x + rect.width and rect.y <= y < rect.y + rect.height):
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element is outside the window's visible area; scroll it into view",
                details={"elementId": element.id, "reason": "offscreen"},
            )
        return x, y

    async def _semantic(
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
        # settling on the app's events is done by execute(), so it can overlap the next read
        return Outcome(
            "semantic",
            result.detail,
            events_since=since if settle else None,
            answered_at=answered if settle else None,
        )

    async def _pointer_click(self, element: ElementRef, rect: Rect, count: int) -> None:
        """A left click (``count`` times) at the element's centre."""
        x, y = await self._center(element, rect)
        await asyncio.to_thread(self._input().click, x, y, "left", count)

    async def _action_names(self, element: ElementRef) -> tuple[str, ...]:
        if self.accessibility is None:
            return ()
        return await self.accessibility.action_names(element)

    async def _combo_parts(self, element: ElementRef) -> ComboParts | None:
        if self.accessibility is None:
            return None
        return await self.accessibility.combo_parts(element)

    async def _combo_of_option(self, element: ElementRef) -> ComboParts | None:
        if self.accessibility is None:
            return None
        return await self.accessibility.combo_of_option(element)

    async def _ensure_focus(self, window: XWindow) -> str | None:
        if self.desktop.has_focus(window):
            return None
        return await asyncio.to_thread(self.desktop.focus, window)

    async def _focus_element(
        self, element: ElementRef, window: XWindow, rect: Rect
    ) -> tuple[str, str]:
        """Keyboard focus on an element: Component.GrabFocus, else a click at its centre."""
        moved = await self._ensure_focus(window)
        if moved is None and "focused" in element.states:
            # grabbing the focus again is not free: an entry selects all its text, and a
            # file chooser's location entry then drops the Enter that follows the typing
            return "semantic", "already focused"
        done = await self._semantic(element, SemanticOp(OpKind.GRAB_FOCUS), settle=False)
        if done is not None:
            return "semantic", done.detail
        x, y = await self._center(element, rect)
        await asyncio.to_thread(self._input().click, x, y, "left", 1)
        return "synthetic", "focus by click"

    async def _hang_if_asked(self, kind: str, session_id: str | None) -> None:
        if test_hang_target() != kind:
            return
        log.warning("test switch %s: hanging inside %s", HANG_ENV, kind)
        while True:
            self._check_canceled(session_id)
            await asyncio.sleep(0.05)

    # ---------------------------------------------------------------- dispatch

    async def _dispatch(
        self,
        request: ExecuteAction,
        window: XWindow,
        rect: Rect,
        element: ElementRef | None,
        binding: Binding,
    ) -> Outcome:
        action = request.action
        if action.kind != "press_key":
            await self._hang_if_asked(action.kind, request.session_id)
        if isinstance(action, ClickAction):
            return await self._click(action, rect, element, binding)
        if isinstance(action, TypeTextAction):
            return await self._type(action, window, rect, element)
        if isinstance(action, PasteTextAction):
            return await self._paste(action, window, rect, element)
        if isinstance(action, SetValueAction):
            return await self._set_value(action, window, rect, _need(element))
        if isinstance(action, InvokeElementAction):
            return await self._invoke(action, window, rect, _need(element))
        if isinstance(action, PressKeyAction):
            return await self._press(action, window, request.session_id)
        if isinstance(action, ScrollAction):
            return await self._scroll(action, rect, element)
        if isinstance(action, DragAction):
            return await self._drag(action, rect)
        if isinstance(action, SelectTextAction):
            return await self._select(action, window, rect, _need(element))
        if isinstance(action, FocusWindowAction):
            return await self._focus_window(window)
        if isinstance(action, SecondaryAction):
            return await self._secondary(rect, _need(element))
        raise DeskpilotError(ErrorCode.UNSUPPORTED_ACTION, "unknown action kind")

    async def _click(
        self, action: ClickAction, rect: Rect, element: ElementRef | None, binding: Binding
    ) -> Outcome:
        if element is None and action.point is None:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, "click needs elementId or point")
        item = None
        if element is not None and action.button == "left":
            # a row, cell, list item or option: one click selects, two activate (item_clicks)
            item = clicked_item(element, binding.tree.snapshot.elements if binding.tree else {})
        if item is not None:
            done = await self._items.click(item, rect, action.count)
            if done is not None:
                return done
        elif element is not None and action.button == "left" and action.count == 1:
            # an option of a <select> popup: choose it (never unchoose it) and close the popup
            done = await self._combos.click_option(element) or await self._semantic(
                element, SemanticOp.invoke()
            )
            if done is not None:
                return done
        if element is not None:
            x, y = await self._center(element, rect)
        else:
            assert action.point is not None
            x, y = self._to_screen(rect, action.point)
        await asyncio.to_thread(self._input().click, x, y, action.button.value, action.count)
        return Outcome("synthetic", f"xtest {action.button.value} x{action.count}")

    async def _type(
        self, action: TypeTextAction, window: XWindow, rect: Rect, element: ElementRef | None
    ) -> Outcome:
        method: Literal["synthetic", "mixed"] = "synthetic"
        if element is not None:
            if "EditableText" in element.interfaces:
                done = await self._semantic(
                    element, SemanticOp(OpKind.INSERT_TEXT, text=action.text)
                )
                if done is not None:
                    return done
            how, _ = await self._focus_element(element, window, rect)
            method = "mixed" if how == "semantic" else "synthetic"
        else:
            await self._ensure_focus(window)
        typed = await asyncio.to_thread(self._input().type_text, action.text)
        return Outcome(method, f"xtest typed {typed} characters")

    async def _paste(
        self, action: PasteTextAction, window: XWindow, rect: Rect, element: ElementRef | None
    ) -> Outcome:
        """EditableText insert when the element has it, else CLIPBOARD + ctrl+v."""
        if element is not None and "EditableText" in element.interfaces:
            done = await self._semantic(element, SemanticOp(OpKind.INSERT_TEXT, text=action.text))
            if done is not None:
                return done
        if element is not None:
            await self._focus_element(element, window, rect)
        else:
            await self._ensure_focus(window)
        clipboard = await asyncio.to_thread(self.desktop.clipboard)
        if not await asyncio.to_thread(clipboard.offer, action.text):
            raise DeskpilotError(ErrorCode.ACTION_FAILED, "could not take the clipboard")
        # the selection is given up once the action settled (or failed): see execute()
        self._after_settle.append(clipboard.withdraw)
        await asyncio.to_thread(self._input().press_chord, parse_chord("ctrl+v"))
        served = await asyncio.to_thread(clipboard.wait_served, PASTE_FETCH_TIMEOUT_S)
        if served:  # keep the selection while the app still asks for it (see wait_idle)
            await asyncio.to_thread(clipboard.wait_idle, PASTE_IDLE_S, PASTE_FETCH_TIMEOUT_S)
        detail = "clipboard + ctrl+v" if served else "clipboard + ctrl+v (the app did not fetch)"
        return Outcome("synthetic", detail, dispatched=True)

    async def _set_value(
        self, action: SetValueAction, window: XWindow, rect: Rect, element: ElementRef
    ) -> Outcome:
        # a combo box takes the name of one of its options (refused before dispatch if none)
        done = await self._combos.set_value(element, _as_text(action.value))
        if done is None:
            done = await self._semantic(element, SemanticOp(OpKind.SET_VALUE, value=action.value))
        if done is not None:
            return done
        if "editable" not in element.states or "Text" not in element.interfaces:
            # select-all and typing into a button, checkbox, calendar or slider would send
            # shortcuts to whatever it is, and "succeed" without setting anything
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element takes no value: set_value works on editable text fields and on "
                "elements with a value (sliders, spin buttons); click, select or type instead",
                details={"elementId": element.id, "reason": "no_value_interface"},
            )
        await self._focus_element(element, window, rect)
        xinput = self._input()
        await asyncio.to_thread(xinput.press_chord, parse_chord("ctrl+a"))
        await asyncio.to_thread(xinput.type_text, str(action.value))
        return Outcome("synthetic", "select all, then xtest typing")

    async def _invoke(
        self,
        action: InvokeElementAction,
        window: XWindow,
        rect: Rect,
        element: ElementRef,
    ) -> Outcome:
        if action.action is not None and action.action.lower() in FOCUS_ACTION_NAMES:
            # "focus" is deskpilot's own verb (type_text/paste into an element send it first),
            # not an AT-SPI action name: keyboard focus through GrabFocus, else a click.
            how, detail = await self._focus_element(element, window, rect)
            return Outcome("semantic" if how == "semantic" else "synthetic", detail)
        done = await self._semantic(element, SemanticOp.invoke(action.action))
        if done is not None:
            return done
        if action.action is not None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element has no action of that name",
                details={"elementId": element.id, "available": list(element.actions)[:20]},
            )
        x, y = await self._center(element, rect)
        await asyncio.to_thread(self._input().click, x, y, "left", 1)
        return Outcome("synthetic", "xtest left click (no accessible action)")

    async def _press(
        self, action: PressKeyAction, window: XWindow, session_id: str | None
    ) -> Outcome:
        chords = [parse_chord(k) for k in action.keys]  # all names valid before any press
        xinput = self._input()
        focus_detail = await self._ensure_focus(window)
        for chord in chords:
            self._check_canceled(session_id)
            pressed = await asyncio.to_thread(xinput.chord_down, chord)
            try:
                if test_hang_target() == "press_key":
                    await self._hang_if_asked("press_key", session_id)
                hold = (action.duration_ms or 0) / 1000 / max(len(chords), 1)
                await asyncio.sleep(max(hold, 0.01))
            finally:
                await asyncio.to_thread(xinput.keys_up, pressed)
            if len(chords) > 1:
                await asyncio.sleep(0.02)
        detail = f"xtest {len(chords)} chord(s)"
        if focus_detail:
            detail += f" after {focus_detail}"
        return Outcome("synthetic", detail)

    async def _scroll(
        self, action: ScrollAction, rect: Rect, element: ElementRef | None
    ) -> Outcome:
        if element is not None:
            x, y = await self._center(element, rect)
        elif action.point is not None:
            x, y = self._to_screen(rect, action.point)
        else:
            x, y = rect.x + rect.width // 2, rect.y + rect.height // 2
        await asyncio.to_thread(self._input().scroll, x, y, action.direction.value, action.amount)
        return Outcome("synthetic", f"xtest wheel {action.direction.value} x{action.amount}")

    async def _drag(self, action: DragAction, rect: Rect) -> Outcome:
        x0, y0 = self._to_screen(rect, action.start)
        x1, y1 = self._to_screen(rect, action.end)
        duration = (action.duration_ms or 300) / 1000
        await asyncio.to_thread(self._input().drag, x0, y0, x1, y1, min(duration, 10.0))
        return Outcome("synthetic", "xtest drag")

    async def _select(
        self, action: SelectTextAction, window: XWindow, rect: Rect, element: ElementRef
    ) -> Outcome:
        if action.end < action.start:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, "select_text needs start <= end")
        done = await self._semantic(
            element, SemanticOp(OpKind.SELECT_TEXT, start=action.start, end=action.end)
        )
        if done is not None:
            return done
        start, end = action.start, action.end
        length = (
            await self.accessibility.character_count(element)
            if self.accessibility is not None
            else None
        )
        if length is not None:  # keys past the end select nothing more, they only take time
            start, end = min(start, length), min(end, length)
        if end > MAX_SELECT_KEYS:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element has no text selection interface and the range is too long to "
                "select with keys",
                details={"elementId": element.id, "reason": "range_too_long"},
            )
        await self._focus_element(element, window, rect)
        xinput = self._input()

        def keys() -> None:
            xinput.press_chord(parse_chord("ctrl+Home"))
            right, shift_right = parse_chord("Right"), parse_chord("shift+Right")
            for _ in range(start):
                xinput.check()
                xinput.press_chord(right)
            for _ in range(end - start):
                xinput.check()
                xinput.press_chord(shift_right)

        await asyncio.to_thread(keys)
        return Outcome("synthetic", "xtest caret keys")

    async def _focus_window(self, window: XWindow) -> Outcome:
        how = await asyncio.to_thread(self.desktop.focus, window)
        return Outcome("semantic", how)

    async def _secondary(self, rect: Rect, element: ElementRef) -> Outcome:
        done = await self._semantic(element, SemanticOp(OpKind.SECONDARY))
        if done is not None:
            return done
        x, y = await self._center(element, rect)
        await asyncio.to_thread(self._input().click, x, y, "right", 1)
        return Outcome("synthetic", "xtest right click")


def _need(element: ElementRef | None) -> ElementRef:
    """The wire model makes elementId required for these kinds; this is the type's proof."""
    if element is None:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "this action needs an elementId")
    return element


def _as_text(value: str | float) -> str:
    """A set_value value as an option's text: 3.0 is "3"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _dialogs(tree: str) -> set[str]:
    """The dialog-like elements of a rendered tree, by role and name."""
    return set(_DIALOG_LINE.findall(tree))


def _positional(action: object) -> bool:
    """Aimed at a point of the observed image rather than at an element."""
    if isinstance(action, DragAction):
        return True
    if isinstance(action, ClickAction | ScrollAction):
        return action.point is not None and action.element_id is None
    return False
