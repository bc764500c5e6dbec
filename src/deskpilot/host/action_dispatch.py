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
   text put into a field is read back (:mod:`deskpilot.host.text_entry`: ``effect``);
6. with ``observeAfter``, carry the settled window's observation in the result (it becomes
   the session's binding, as an ``observe`` would).

Coordinates are normalised to the observed window's captured area: (0, 0) is its top-left
pixel, (1, 1) its bottom-right one.

This module only runs the steps in that order: 1–3 are :mod:`deskpilot.host.action_checks`,
4 the performers of :mod:`deskpilot.host.pointer_actions` and
:mod:`deskpilot.host.keyboard_actions` (on :mod:`deskpilot.host.primitives`), 5–6
:mod:`deskpilot.host.post_action`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from deskpilot.host import save_effects
from deskpilot.host.accessibility import Accessibility
from deskpilot.host.action_checks import (
    Target,
    check_aim,
    check_canceled,
    check_popup_open,
    fresh_binding,
    live_window,
    resolve_element,
    to_screen,
)
from deskpilot.host.atspi.model import ElementRef
from deskpilot.host.keyboard_actions import (
    MAX_SELECT_KEYS,
    PASTE_FETCH_TIMEOUT_S,
    PASTE_IDLE_S,
    KeyboardActions,
)
from deskpilot.host.observer import Observer
from deskpilot.host.outcome import Effect, Outcome
from deskpilot.host.page_loads import Expectation, Loaded, PageLoads
from deskpilot.host.pointer_actions import FOCUS_ACTION_NAMES, PointerActions
from deskpilot.host.post_action import (
    CHROMIUM_DIALOG_GUARD_S,
    DEFAULT_SETTLE_MS,
    DIALOG_SETTLE_MS,
    Post,
    PostAction,
    Settling,
)
from deskpilot.host.primitives import HANG_ENV, Primitives, test_hang_target
from deskpilot.host.session_registry import SessionRegistry
from deskpilot.host.settle import Settler
from deskpilot.host.text_entry import TextEntry
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.input import Canceled
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    ActionResult,
    ClickAction,
    DragAction,
    ExecuteAction,
    FocusWindowAction,
    InvokeElementAction,
    PasteTextAction,
    Point,
    PressKeyAction,
    Rect,
    ScrollAction,
    SecondaryAction,
    SelectTextAction,
    SetValueAction,
    TypeTextAction,
)

#: how long a finished action waits for its aim to be read (ActionResult.target_bounds)
AIM_WAIT_S = 0.25
#: how long a page that loaded may take to go quiet before its state is read
LOADED_SETTLE_MS = 1000
#: after giving a window the focus for keys: how long its first focus event may take, and the
#: most the app's reaction to the focus is waited for before the keys go out
FOCUS_EVENTS_FIRST_MS = 100.0
FOCUS_EVENTS_MAX_MS = 400.0

# the names this module has always offered, now defined by its parts
__all__ = [
    "CHROMIUM_DIALOG_GUARD_S",
    "DEFAULT_SETTLE_MS",
    "DIALOG_SETTLE_MS",
    "FOCUS_ACTION_NAMES",
    "HANG_ENV",
    "MAX_SELECT_KEYS",
    "PASTE_FETCH_TIMEOUT_S",
    "PASTE_IDLE_S",
    "ActionDispatcher",
    "Post",
    "test_hang_target",
]


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
        #: the session whose action is running (RequestHandler.cancel_now releases its input)
        self.current_session: str | None = None
        self.running = False
        self._primitives = Primitives(desktop, accessibility, sessions)
        self._entry = TextEntry(self._primitives)
        self._pointer = PointerActions(self._primitives, self._entry)
        self._keyboard = KeyboardActions(self._primitives, self._entry)
        self._loads = PageLoads(accessibility)
        self._post = PostAction(desktop, self.settler, observer, sessions)

    @property
    def accessibility(self) -> Accessibility | None:
        return self.settler.accessibility

    @accessibility.setter
    def accessibility(self, value: Accessibility | None) -> None:
        # connected after construction (RequestHandler.start): the settler (which the
        # post-action steps read it from) and the performers' primitives must see it too
        self.settler.accessibility = value
        self._primitives.accessibility = value
        self._loads.accessibility = value

    async def execute(self, request: ExecuteAction) -> tuple[ActionResult, bytes | None]:
        """Run the action; with ``observeAfter``, the result carries the settled window's
        observation (and the PNG is returned alongside, for the binary frame)."""
        started = time.perf_counter()
        target = await self._target(request)
        # read while the action runs and settles, so it costs the action no time
        aimed = asyncio.ensure_future(self._aimed_at(request, target))
        try:
            load = await self._loads.expected(request, target)
            outcome, settling = await self._act(request, target)
            loaded = await self._page_loaded(target, settling, load)
            if isinstance(request.action, SelectTextAction) and target.element is not None:
                outcome.selected = await self._keyboard.selected(target.element)
            post = await self._post.complete(request, target, settling)
            # what the action was meant to leave behind, read once the UI settled
            effect = await outcome.check() if outcome.check is not None else None
            if effect is not None and effect.late and post is not None:
                # the look was taken before the effect showed (a field's text): look again
                again = await self._post.observe_after(request, target.window, screenshot=True)
                post = again or post
            body, png = post if post is not None else (None, None)
            windows = await self._post.windows(body)
            target_bounds = await _settled(aimed)
        finally:
            aimed.cancel()  # a no-op once it is done
        result = ActionResult(
            id=request.id,
            dispatched=outcome.dispatched,
            method=outcome.method,
            kind=request.action.kind,
            detail=outcome.detail,
            settled=settling.settled,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
            toolkit_delay_ms=settling.toolkit_delay_ms,
            wait_bound=settling.wait_bound,
            observation=body,
            windows=windows,
            item_click=outcome.item_click,
            target_bounds=target_bounds,
            **_effect(effect, loaded),
            selected=outcome.selected,
        )
        return result, png

    async def _page_loaded(
        self, target: Target, settling: Settling, expected: Expectation | None
    ) -> Loaded | None:
        """A browser's page load the action started, waited for (host/page_loads.py); the
        state read while settling showed the page before it, so it is read again."""
        bus = target.bus
        if bus is None:
            return None
        loaded = await self._loads.wait(bus, settling.since, expected)
        if loaded is not None and loaded.waited:
            settling.post = None
            await self.settler.settle(bus, time.monotonic(), LOADED_SETTLE_MS)
        return loaded

    async def _aimed_at(self, request: ExecuteAction, target: Target) -> Rect | None:
        """Where the action aims on screen (ActionResult.target_bounds): the element's
        extents, or a 1×1 rectangle at a positional action's point."""
        action = request.action
        if target.element is not None and self.accessibility is not None:
            extents = await self.accessibility.extents(target.element)
            if extents is not None and extents.width > 0 and extents.height > 0:
                return extents
        point = action.start if isinstance(action, DragAction) else getattr(action, "point", None)
        if isinstance(point, Point):
            x, y = to_screen(target.rect, point)
            return Rect(x=x, y=y, width=1, height=1)
        return None

    async def _target(self, request: ExecuteAction) -> Target:
        """Steps 1–3: nothing is sent unless the request still describes the live window."""
        check_canceled(self.sessions, request.session_id)
        binding = fresh_binding(self.observer, request)
        self.observer.drop(request.session_id)
        window = live_window(self.desktop, binding)
        element_id = getattr(request.action, "element_id", None)
        element = await resolve_element(self.accessibility, binding, element_id)
        check_popup_open(self.desktop, element)
        rect = self.desktop.visible_rect(window)
        check_aim(self.desktop, binding, window, rect, request.action)
        return Target(binding, window, rect, element)

    async def _act(self, request: ExecuteAction, target: Target) -> tuple[Outcome, Settling]:
        """Steps 4–5, while the action counts as running: a cancel releases its held input,
        and the input's checkpoints stop it with ``session_canceled``. The cleanups a
        performer left (a paste's clipboard) run once it settled or failed."""
        xinput = self.desktop.input
        self.current_session = request.session_id
        self.running = True
        if xinput is not None:
            xinput.check = lambda: check_canceled(self.sessions, request.session_id)
        try:
            await self._focus_first(request, target)
            baseline = self._post.baseline(request, target)
            tree = target.binding.tree
            saving = save_effects.watch(
                request.action,
                target.element,
                tree.snapshot.elements if tree else {},
                target.window,
            )
            since = time.monotonic()
            outcome = await self._dispatch(request, target)
            if outcome.check is None:
                outcome.check = saving
            settling = await self._post.settle_after(request, target, outcome, baseline, since)
        except Canceled:
            raise DeskpilotError(
                ErrorCode.SESSION_CANCELED, "the session was canceled during the action"
            ) from None
        finally:
            await self._primitives.run_after_settle()
            self.running = False
            self.current_session = None
            if xinput is not None:
                xinput.check = lambda: None
        return outcome, settling

    async def _focus_first(self, request: ExecuteAction, target: Target) -> None:
        """Keys meant for the window (press_key, text without an element): the window gets
        the keyboard focus first, and the app's own reaction to that (focus events, a caret
        drawn) is let pass before the keys go out and the wait for their effect starts. A key
        that opens a dialog only after the toolkit's bound is then seen as what it is: keys
        that showed no reaction yet (host/post_action.py, "Late effects"), not a focus change
        taken for their effect."""
        action = request.action
        keys = isinstance(action, PressKeyAction) or (
            isinstance(action, TypeTextAction | PasteTextAction) and action.element_id is None
        )
        if not keys:
            return
        moved_at = time.monotonic()
        moved = await self._primitives.ensure_focus(target.window)
        acc, bus = self.accessibility, target.bus
        if moved is not None and acc is not None and bus is not None:
            await acc.quiet_after(
                bus, moved_at, first_ms=FOCUS_EVENTS_FIRST_MS, max_ms=FOCUS_EVENTS_MAX_MS
            )

    async def _dispatch(self, request: ExecuteAction, target: Target) -> Outcome:
        """Step 4: the performer of the action's kind."""
        action = request.action
        window, rect, element = target.window, target.rect, target.element
        if action.kind != "press_key":  # press_key hangs with its keys down (keyboard_actions)
            await self._primitives.hang_if_asked(action.kind, request.session_id)
        pointer, keyboard = self._pointer, self._keyboard
        if isinstance(action, ClickAction):
            return await pointer.click(action, window, rect, element, target.binding)
        if isinstance(action, TypeTextAction):
            elements = target.binding.tree.snapshot.elements if target.binding.tree else {}
            return await keyboard.type_text(action, window, rect, element, target.focused, elements)
        if isinstance(action, PasteTextAction):
            return await keyboard.paste(action, window, rect, element)
        if isinstance(action, SetValueAction):
            return await keyboard.set_value(action, window, rect, _need(element))
        if isinstance(action, InvokeElementAction):
            return await pointer.invoke(action, window, rect, _need(element))
        if isinstance(action, PressKeyAction):
            return await keyboard.press(action, window, request.session_id)
        if isinstance(action, ScrollAction):
            return await pointer.scroll(action, rect, element)
        if isinstance(action, DragAction):
            return await pointer.drag(action, rect)
        if isinstance(action, SelectTextAction):
            return await keyboard.select_text(action, window, rect, _need(element))
        if isinstance(action, FocusWindowAction):
            return await keyboard.focus_window(window)
        if isinstance(action, SecondaryAction):
            return await pointer.secondary(window, rect, _need(element))
        raise DeskpilotError(ErrorCode.UNSUPPORTED_ACTION, "unknown action kind")


def _effect(effect: Effect | None, loaded: Loaded | None) -> dict[str, Any]:
    """``effect`` and ``effect_note`` of the result: what the effect check saw (a field read
    back, a value), and a page load that did not end in time (either unconfirmed makes it
    unconfirmed)."""
    notes = [n for n in (effect.note if effect else None, loaded.note if loaded else None) if n]
    if notes:
        return {"effect": "unconfirmed", "effect_note": "; ".join(notes)}
    if effect is not None:
        return {"effect": effect.seen}
    return {}


async def _settled(aimed: asyncio.Future[Rect | None]) -> Rect | None:
    """The aim, when it is known by now (a bounded wait: it only labels the result)."""
    try:
        return await asyncio.wait_for(aimed, AIM_WAIT_S)
    except Exception:
        return None


def _need(element: ElementRef | None) -> ElementRef:
    """The wire model makes elementId required for these kinds; this is the type's proof."""
    if element is None:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "this action needs an elementId")
    return element
