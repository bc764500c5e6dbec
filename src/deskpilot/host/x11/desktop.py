"""The X11 desktop as the host sees it: windows, pixels, input, focus — one object.

Holds the persistent connections: python-xlib for queries and XTEST (main thread), mss/XCB for
capture, and a separate guard connection that only ever releases held input, so the stdin
watcher thread never shares a connection with a busy action.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection

from Xlib import X, error
from Xlib.protocol import event as xevent

from deskpilot.host.x11.capture import Capturer, CaptureThread
from deskpilot.host.x11.clipboard import ClipboardOwner
from deskpilot.host.x11.connection import XConnection, XUnavailable
from deskpilot.host.x11.input import HeldInputs, XInput, release_all
from deskpilot.host.x11.popups import PopupLister
from deskpilot.host.x11.windows import WindowLister, XWindow, parse_xid, process_start_time
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect, TargetSpec

log = logging.getLogger("deskpilot.host.x11")

FOCUS_WAIT_S = 0.5


class X11Desktop:
    def __init__(self) -> None:
        self.connect_error: str | None = None
        self.conn: XConnection | None = None
        self.guard: XConnection | None = None
        self.held = HeldInputs()
        self.input: XInput | None = None
        try:
            self.conn = XConnection()
            self.guard = XConnection(self.conn.name)
        except XUnavailable as exc:
            self.connect_error = exc.message
        self.lister = WindowLister(self.conn) if self.conn else None
        self.popups = PopupLister(self.conn) if self.conn else None
        self.capturer = Capturer(self.conn.name) if self.conn else None
        #: the observer's grabs and their encoding, off the event loop (x11/capture.py)
        self.shooter = CaptureThread(self.conn.name) if self.conn else None
        if self.conn is not None and self.conn.extensions.xtest:
            self.input = XInput(self.conn, self.held)
        self._clipboard: ClipboardOwner | None = None

    def clipboard(self) -> ClipboardOwner:
        """The CLIPBOARD owner (its own connection and thread), started on first use."""
        conn, _, _ = self.require()
        if self._clipboard is None:
            self._clipboard = ClipboardOwner(conn.name)
        return self._clipboard

    # ---------------------------------------------------------------- requirements

    def require(self) -> tuple[XConnection, WindowLister, Capturer]:
        if self.conn is None or self.lister is None or self.capturer is None:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                self.connect_error or "no X server",
            )
        return self.conn, self.lister, self.capturer

    def require_shooter(self) -> CaptureThread:
        """The capture thread; ENVIRONMENT_UNAVAILABLE without an X server."""
        self.require()
        assert self.shooter is not None  # made with the connection
        return self.shooter

    def require_input(self) -> XInput:
        if self.input is None:
            raise DeskpilotError(
                ErrorCode.INPUT_PERMISSION_DENIED,
                "synthetic input is unavailable (no X server with XTEST)",
            )
        return self.input

    # ---------------------------------------------------------------- windows

    def windows(self) -> tuple[list[XWindow], bool]:
        _, lister, _ = self.require()
        return lister.list_windows()

    def resolve(self, target: TargetSpec) -> tuple[XWindow, list[XWindow]]:
        """The window a target names (default: the foreground one), plus the full list."""
        windows, _ = self.windows()
        if target.window_id is not None:
            xid = parse_xid(target.window_id)
            if xid is None:
                raise DeskpilotError(
                    ErrorCode.INVALID_REQUEST,
                    "windowId must be an X window id such as 0x1a00004",
                )
            for w in windows:
                if w.xid == xid:
                    return w, windows
            raise DeskpilotError(
                ErrorCode.TARGET_NOT_FOUND,
                "no top-level window with that id",
                details={"windowId": target.window_id},
            )
        candidates = windows
        if target.pid is not None:
            candidates = [w for w in candidates if w.pid == target.pid]
        if target.app is not None:
            candidates = [w for w in candidates if w.matches_app(target.app)]
        if target.pid is not None or target.app is not None:
            if not candidates:
                raise DeskpilotError(
                    ErrorCode.TARGET_NOT_FOUND,
                    "no window belongs to that app",
                    details={"pid": target.pid, "app": (target.app or "")[:80]},
                )
            return _best(candidates), windows
        if not windows:
            raise DeskpilotError(ErrorCode.NO_WINDOWS_AVAILABLE, "there are no windows")
        return _best(windows), windows

    def popup_rects(
        self, window: XWindow | None = None, others: Collection[int] = ()
    ) -> list[Rect]:
        """Where the mapped popups (menus, tooltips, drop-down lists) are, topmost first;
        [] without an X server (x11/popups.py). With ``window`` and the other top-level
        windows ``others`` (ids), only those that may be ``window``'s own: a popup that names
        one of the others as the window it belongs to (``WM_TRANSIENT_FOR``) is left out,
        though it lies over this one. One that names no listed window (Qt names its hidden
        leader window for a menu without a parent) may be anyone's."""
        if self.popups is None:
            return []
        return [
            p.rect
            for p in self.popups.popups()
            if window is None or p.transient_for == window.xid or p.transient_for not in others
        ]

    def foreign_menu(self, window: XWindow) -> int | None:
        """The pid of the app whose open menu is not ``window``'s, if one is: another
        process's, or one another listed window of the same app opened (``WM_TRANSIENT_FOR``).
        Such a menu holds the keyboard and the pointer until it closes, so input meant for
        ``window`` would choose in it instead. None when there is none, or no X server."""
        if self.popups is None or window.pid is None:
            return None
        menus = [p for p in self.popups.popups() if p.menu and p.pid is not None]
        other = next((p.pid for p in menus if p.pid != window.pid), None)
        if other is not None:
            return other
        owners = {p.transient_for for p in menus} - {None, window.xid}
        if owners and owners & {w.xid for w in self.windows()[0]}:
            return window.pid  # one of the app's other windows has its menu open
        return None

    def current(self, xid: int) -> XWindow | None:
        _, lister, _ = self.require()
        return lister.describe(xid)

    # ---------------------------------------------------------------- focus

    def focus(self, window: XWindow) -> str:
        """Give a window the keyboard focus; returns how (for the action's detail)."""
        conn, lister, _ = self.require()
        win = conn.window(window.xid)
        if lister.ewmh_wm():
            data = [2, X.CurrentTime, 0, 0, 0]  # source 2: a pager acting for the user
            ev = xevent.ClientMessage(
                window=win,
                client_type=conn.atom("_NET_ACTIVE_WINDOW"),
                data=(32, data),
            )
            conn.root.send_event(
                ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask
            )
            conn.sync()
            deadline = time.monotonic() + FOCUS_WAIT_S
            while time.monotonic() < deadline:
                if lister.focused_xid(True, [window.xid]) == window.xid:
                    return "ewmh_active_window"
                time.sleep(0.02)
            return "ewmh_active_window_unconfirmed"
        try:
            win.configure(stack_mode=X.Above)
            win.set_input_focus(X.RevertToPointerRoot, X.CurrentTime)
            conn.sync()
        except error.XError as exc:
            raise DeskpilotError(
                ErrorCode.ACTION_FAILED, f"could not focus the window: {exc}"
            ) from None
        return "x11_set_input_focus"

    def has_focus(self, window: XWindow) -> bool:
        _, lister, _ = self.require()
        return lister.focused_xid(lister.ewmh_wm(), [window.xid]) == window.xid

    # ---------------------------------------------------------------- geometry

    def covered_at(self, window: XWindow, x: int, y: int) -> int | None:
        """The top-level window that is on top at screen point (x, y) when it is not
        ``window`` (or the frame around it) nor a popup of the same app (a menu it opened): a
        synthetic click there would land on that one."""
        conn, _, _ = self.require()
        root = int(conn.root.id)
        try:
            child = conn.root.translate_coords(conn.root, x, y).child
        except Exception:
            return None
        top = int(child.id) if child else 0
        if top in (0, root):
            return None
        current = window.xid  # the target's root-level ancestor (itself without a manager)
        for _ in range(16):
            try:
                parent = conn.window(current).query_tree().parent
            except Exception:
                return None
            parent_id = int(parent.id) if parent else 0
            if parent_id in (0, root):
                break
            current = parent_id
        if current == top:
            return None
        try:  # the app's own popup (a menu, a completion list) is part of what was seen
            popup = bool(conn.window(top).get_attributes().override_redirect)
        except Exception:
            popup = False
        if popup and window.pid is not None and conn.client_pid(top) == window.pid:
            return None
        return top

    def pointer(self) -> tuple[int, int] | None:
        """The pointer in screen pixels (XQueryPointer on the root); None when it is on
        another screen of the display or the query fails."""
        conn, _, _ = self.require()
        try:
            reply = conn.root.query_pointer()
        except Exception:
            return None
        if not reply.same_screen:
            return None
        return int(reply.root_x), int(reply.root_y)

    def screen_rect(self) -> Rect:
        conn, _, _ = self.require()
        return Rect(x=0, y=0, width=conn.width, height=conn.height)

    def visible_rect(self, window: XWindow) -> Rect:
        """The part of a window on screen (what a capture of it covers)."""
        conn, _, _ = self.require()
        b = window.bounds
        x0, y0 = max(b.x, 0), max(b.y, 0)
        x1, y1 = min(b.x + b.width, conn.width), min(b.y + b.height, conn.height)
        return Rect(x=x0, y=y0, width=max(x1 - x0, 0), height=max(y1 - y0, 0))

    # ---------------------------------------------------------------- input safety

    def release_inputs(self, keymap_restore: bool = True) -> tuple[int, int]:
        """From any thread: release held keys/buttons via the guard connection."""
        if self.guard is None:
            return 0, 0
        released = release_all(self.guard, self.held)
        if keymap_restore and self.input is not None:
            for code in self.input.keymap.touched_codes():
                try:
                    self.guard.display.change_keyboard_mapping(code, [(0, 0)])
                except Exception:
                    break
            with contextlib.suppress(Exception):
                self.guard.sync()
        return released

    def process_identity(self, pid: int | None) -> int | None:
        return process_start_time(pid) if pid else None

    def close(self) -> None:
        if self._clipboard is not None:
            self._clipboard.close()
        if self.input is not None:
            self.input.ping.close()  # its listening connection, opened while typing
        if self.capturer is not None:
            self.capturer.close()
        if self.shooter is not None:
            self.shooter.close()
        for c in (self.conn, self.guard):
            if c is not None:
                c.close()


def _best(windows: list[XWindow]) -> XWindow:
    """Focused first, then the topmost visible one, then the topmost at all."""
    for w in windows:
        if w.focused:
            return w
    for w in windows:
        if w.visible:
            return w
    return windows[0]
