"""Steps 1–3 of an action (:mod:`deskpilot.host.action_dispatch`): the request held against the
session's binding and the live window, before anything reaches the desktop.

Every check raises a typed error (docs/host.md, "Actions"): an action planned on an
observation that no longer describes the window must not land anywhere. Positional actions
are also checked against the window as it is *now*: a point of the observed image must still
mean the same pixel of the same window.

Coordinates are normalised to the observed window's captured area: (0, 0) is its top-left
pixel, (1, 1) its bottom-right one (:func:`to_screen`).
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.model import ElementRef
from deskpilot.host.menu_grab import refuse_if_menu_open
from deskpilot.host.observer import Binding, Observer
from deskpilot.host.popups import same_place
from deskpilot.host.session_registry import SessionRegistry
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    ClickAction,
    DragAction,
    ExecuteAction,
    Point,
    Rect,
    ScrollAction,
)


@dataclass(frozen=True, slots=True)
class Target:
    """What the checks established: the binding the action was planned on, the live window,
    its visible area now and the element (None for an action without ``elementId``)."""

    binding: Binding
    window: XWindow
    rect: Rect
    element: ElementRef | None

    @property
    def bus(self) -> str | None:
        """The observed tree's application bus: its events tell when the UI settled."""
        tree = self.binding.tree
        return tree.frame.ref.bus_name if tree is not None else None

    @property
    def focused(self) -> ElementRef | None:
        """The element the observed tree showed focused (where keys without an element go)."""
        tree = self.binding.tree
        if tree is None or tree.snapshot.focused_id is None:
            return None
        return tree.snapshot.elements.get(tree.snapshot.focused_id)


def check_canceled(sessions: SessionRegistry, session_id: str | None) -> None:
    """Checked before anything else, and again wherever a long action can stop."""
    if sessions.is_canceled(session_id):
        raise DeskpilotError(ErrorCode.SESSION_CANCELED, "the session was canceled")


def fresh_binding(observer: Observer, request: ExecuteAction) -> Binding:
    """The session's current observation, if the request was planned on it."""
    binding = observer.binding(request.session_id)
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


def live_window(desktop: X11Desktop, binding: Binding) -> XWindow:
    """The observed window, if it still exists with the same process: an X id can be reused,
    and a pid too, so the process start time is compared as well."""
    window = desktop.current(binding.window.xid)
    if window is None:
        raise DeskpilotError(
            ErrorCode.STALE_TREE, "the observed window no longer exists; observe again"
        )
    if window.pid != binding.window.pid or (
        binding.process_start is not None
        and desktop.process_identity(window.pid) != binding.process_start
    ):
        raise DeskpilotError(
            ErrorCode.STALE_TREE,
            "the observed window now belongs to another process; observe again",
        )
    return window


async def resolve_element(
    accessibility: Accessibility | None, binding: Binding, element_id: int | None
) -> ElementRef | None:
    """The element of the observed tree, if it still exists in the same process, and if
    that tree may be acted on at all: a partial tree (cut at its deadline) or a stale one
    (the app did not answer; the last tree read of it) is refused with TREE_PARTIAL — its
    elements may no longer be there, or not be all there is — while points of its
    screenshot stay usable."""
    if element_id is None:
        return None
    read = binding.tree_read
    if not read.reusable:
        why = (
            f"is partial ({read.partial}: {read.unread_subtrees} subtrees unread)"
            if read.partial is not None
            else f"is stale (the app did not answer; the last tree read of it, "
            f"{round(read.stale_age_ms or 0)} ms old)"
        )
        raise DeskpilotError(
            ErrorCode.TREE_PARTIAL,
            f"the observed tree {why}: its element ids cannot be acted on; observe again, "
            "or act on a point of the screenshot",
            details={
                "elementId": element_id,
                "partial": read.partial,
                "stale": read.partial is None,
            },
        )
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
    if accessibility is not None and element.identity is not None:
        # a sheet cell is a new object each time: found again by its table and address
        found = await accessibility.live(element)
        if found is None:
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "the element cannot be acted on: its table no longer has that cell; observe again",
                details={"elementId": element_id},
            )
        return found
    if accessibility is not None and not await accessibility.still_valid(element):
        gone = (
            "the menu or popup it was in has closed" if element.popup_at else "it no longer exists"
        )
        raise DeskpilotError(
            ErrorCode.STALE_TREE,
            f"the element cannot be acted on: {gone}; observe again",
            details={"elementId": element_id},
        )
    return element


def check_popup_open(desktop: X11Desktop, element: ElementRef | None) -> None:
    """An element of a popup (a menu item) is acted on only while a popup is still mapped
    where its popup was: Chromium's items of a closed menu still say they are showing (and
    an action on one crashes Chromium), so the X side is asked too (x11/popups.py)."""
    if element is None or element.popup_at is None:
        return
    if not any(same_place(element.popup_at, r) for r in desktop.popup_rects()):
        raise DeskpilotError(
            ErrorCode.STALE_TREE,
            "the element cannot be acted on: the menu or popup it was in has closed; observe again",
            details={"elementId": element.id},
        )


def check_aim(
    desktop: X11Desktop, binding: Binding, window: XWindow, rect: Rect, action: object
) -> None:
    """A positional action's point must still be the same pixel of this window: the window
    has the observed size, and no other window covers the point."""
    if not positional(action):
        return
    refuse_if_menu_open(desktop, window)
    if (rect.width, rect.height) != (binding.capture_rect.width, binding.capture_rect.height):
        # a point of the old image would land elsewhere in the resized window
        raise DeskpilotError(
            ErrorCode.STALE_FRAME,
            "the window was resized since it was observed; coordinates of that image no "
            "longer map to the same place: observe again",
            details={"reason": "window_resized"},
        )
    _check_uncovered(desktop, window, rect, action)


def _check_uncovered(desktop: X11Desktop, window: XWindow, rect: Rect, action: object) -> None:
    """Covered by another window, synthetic input at the point would go to that one."""
    point = action.start if isinstance(action, DragAction) else getattr(action, "point", None)
    if point is None:
        return
    x, y = to_screen(rect, point)
    other = desktop.covered_at(window, x, y)
    if other is not None:
        raise DeskpilotError(
            ErrorCode.UNSUPPORTED_ACTION,
            "another window is on top of the window at that point; input there would go to it",
            details={"reason": "covered_point", "coveringWindow": f"0x{other:x}"},
        )


def positional(action: object) -> bool:
    """Aimed at a point of the observed image rather than at an element."""
    if isinstance(action, DragAction):
        return True
    if isinstance(action, ClickAction | ScrollAction):
        return action.point is not None and action.element_id is None
    return False


def to_screen(rect: Rect, point: Point) -> tuple[int, int]:
    """A normalised point of the observed image, in root coordinates of the window now."""
    x = rect.x + round(point.x * max(rect.width - 1, 0))
    y = rect.y + round(point.y * max(rect.height - 1, 0))
    return x, y
