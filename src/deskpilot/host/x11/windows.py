"""Top-level windows and their app identity, with or without a window manager.

With an EWMH window manager the list is ``_NET_CLIENT_LIST`` (stacking order when offered) and
the focused window is ``_NET_ACTIVE_WINDOW``. Without one (a bare Xvfb) there is no client
list: the host walks the root's children, keeps mapped non-override-redirect windows that
carry a class or a name (plus iconic ones that carry ``WM_STATE``), and treats the input-focus
window as focused — or, when focus is ``PointerRoot`` (focus follows the pointer, Xvfb's
default), the top-level window under the pointer.

A window's pid comes from the X server itself (XRes ``LocalClientPIDMask``) when it can say,
else from ``_NET_WM_PID``; the executable is the lower-cased basename of ``/proc/PID/exe``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from Xlib import X, Xatom, error

from deskpilot.host.x11.connection import XConnection
from deskpilot.protocol.app_names import executable_names
from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo

_ICONIC_STATE = 3
_POINTER_ROOT = 1


@dataclass(slots=True)
class XWindow:
    xid: int
    title: str
    bounds: Rect
    visible: bool
    minimized: bool
    focused: bool = False
    pid: int | None = None
    executable: str | None = None
    wm_class: str | None = None  # "instance.Class" as xprop shows both parts
    wm_class_parts: tuple[str, ...] = field(default_factory=tuple)
    desktop_id: str | None = None
    app_name: str | None = None  # filled from the accessibility side when matched
    transient_for: int | None = None  # WM_TRANSIENT_FOR: the window this is a dialog of
    modal: bool = False  # _NET_WM_STATE_MODAL: the window it is a dialog of takes no input

    @property
    def window_id(self) -> str:
        return format_xid(self.xid)

    def identity(self) -> AppIdentity:
        return AppIdentity(
            pid=self.pid,
            name=self.app_name,
            executable=self.executable,
            wm_class=self.wm_class,
            desktop_id=self.desktop_id,
        )

    def privacy_identity(self) -> AppIdentity:
        """The identity with WM_CLASS parts NUL-separated, so each part is matched whole."""
        ident = self.identity()
        if self.wm_class_parts:
            ident.wm_class = "\0".join(self.wm_class_parts)
        return ident

    def info(self) -> WindowInfo:
        return WindowInfo(
            window_id=self.window_id,
            title=self.title,
            bounds=self.bounds,
            visible=self.visible,
            minimized=self.minimized,
            focused=self.focused,
            app=self.identity(),
            transient_for=format_xid(self.transient_for) if self.transient_for else None,
            modal=True if self.modal else None,
        )

    def matches_app(self, needle: str) -> bool:
        """Does ``needle`` name this window's app: its executable (also without a version or
        packaging suffix, protocol/app_names.py), accessibility name, desktop id or a part of
        WM_CLASS, case ignored."""
        n = needle.strip().lower()
        if not n:
            return False
        if self.executable and n in executable_names(self.executable):
            return True
        names = [self.app_name, self.desktop_id, *self.wm_class_parts]
        if self.desktop_id and self.desktop_id.endswith(".desktop"):
            names.append(self.desktop_id.removesuffix(".desktop"))
        return any(x is not None and x.lower() == n for x in names)


def keys_go_to(focused: int | None, windows: list[XWindow]) -> int | None:
    """The window a person's keys go to, given the window with the X input focus
    (``focused``) and the listing (topmost first): that window, or, while a modal dialog of
    it is shown, that dialog (the topmost one, and its own modal dialog in turn). A modal
    dialog blocks the window under it in its toolkit (GTK hands the keys to the dialog, Qt
    drops them), and without a window manager nothing moves the X focus to a new dialog:
    the X focus alone would call the blocked window focused."""
    seen: set[int] = set()
    while focused is not None and focused not in seen:
        seen.add(focused)
        dialog = next(
            (w.xid for w in windows if w.modal and w.visible and w.transient_for == focused),
            None,
        )
        if dialog is None:
            break
        focused = dialog
    return focused


def format_xid(xid: int) -> str:
    return f"0x{xid:x}"


def parse_xid(text: str) -> int | None:
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value if 0 < value < 1 << 32 else None


def executable_of(pid: int) -> str | None:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).lower() or None
    except OSError:
        return None


def process_start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot: a pid reused by another process differs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def _desktop_dirs() -> list[Path]:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local/share")
    data_dirs = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [Path(d) / "applications" for d in [data_home, *data_dirs.split(":")] if d]


def _desktop_file_exists(desktop_id: str) -> bool:
    return any((d / desktop_id).is_file() for d in _desktop_dirs())


@dataclass(frozen=True, slots=True)
class _Identity:
    """What does not change during a window's life: read once per window id."""

    pid: int | None
    executable: str | None
    wm_class: str | None
    wm_class_parts: tuple[str, ...]
    desktop_id: str | None
    started: int | None = None  # the owner's start time, to notice an id that was reused

    def still_owner(self) -> bool:
        """The X server hands a closed client's id range to the next client at once: a
        cached identity holds only while its process is the one that was read."""
        if self.pid is None:
            return False
        return process_start_time(self.pid) == self.started


class WindowLister:
    """Reads windows through the host's persistent connection.

    Every property read is an X round trip, so what cannot change during a window's life
    (owner pid, class, desktop id; override-redirect root children that are never clients)
    is remembered per window id and forgotten when the id leaves the root's children.
    """

    def __init__(self, conn: XConnection) -> None:
        self.conn = conn
        self._identities: dict[int, _Identity] = {}
        self._not_clients: set[int] = set()

    # ---------------------------------------------------------------- properties

    def _text_prop(self, win: Any, name: str) -> str | None:
        prop = self.conn.prop(win, name)
        if prop is None or prop.format != 8:
            return None
        value = prop.value
        if isinstance(value, str):
            return value
        utf8 = self.conn.atom("UTF8_STRING")
        encoding = "utf-8" if prop.property_type == utf8 else "latin-1"
        return bytes(value).decode(encoding, errors="replace")

    def ewmh_wm(self) -> bool:
        """A live EWMH window manager (``_NET_SUPPORTING_WM_CHECK`` points to itself)."""
        check = self.conn.card_prop(self.conn.root, "_NET_SUPPORTING_WM_CHECK")
        if not check:
            return False
        child = self.conn.card_prop(self.conn.window(check[0]), "_NET_SUPPORTING_WM_CHECK")
        return bool(child) and child[0] == check[0]

    # ---------------------------------------------------------------- listing

    def _client_ids(self) -> tuple[list[int], bool]:
        """Client windows bottom-to-top, and whether they came from an EWMH manager."""
        if self.ewmh_wm():
            stacking = self.conn.card_prop(self.conn.root, "_NET_CLIENT_LIST_STACKING")
            clients = stacking or self.conn.card_prop(self.conn.root, "_NET_CLIENT_LIST")
            if clients:
                return clients, True
        out: list[int] = []
        try:
            children = self.conn.root.query_tree().children
        except error.XError:
            return [], False
        live = {int(c.id) for c in children}
        self._not_clients &= live
        for child in children:
            if int(child.id) in self._not_clients and self._still_override(child):
                continue
            client = self._client_in(child, depth=2)
            if client is not None:
                out.append(client)
        return out, False

    def _still_override(self, win: Any) -> bool:
        """An id remembered as an override-redirect popup may since have been reused by a
        new client's window (one round trip; the property reads are what is saved)."""
        try:
            if win.get_attributes().override_redirect:
                return True
        except error.XError:
            return True
        self._not_clients.discard(int(win.id))
        return False

    def _client_in(self, win: Any, depth: int) -> int | None:
        """The client window at or below a root child (a reparenting WM wraps it in a frame)."""
        try:
            attrs = win.get_attributes()
        except error.XError:
            return None
        if attrs.override_redirect:
            if win.id != self.conn.root.id:
                self._not_clients.add(int(win.id))
            return None
        if self.conn.prop(win, "WM_STATE") is not None:
            return int(win.id)
        if attrs.map_state == X.IsViewable and (
            int(win.id) in self._identities
            or self.conn.prop(win, "WM_CLASS") is not None
            or self.conn.prop(win, "WM_NAME") is not None
        ):
            return int(win.id)
        if depth > 0 and attrs.map_state == X.IsViewable:
            try:
                children = win.query_tree().children
            except error.XError:
                return None
            for child in reversed(children):
                found = self._client_in(child, depth - 1)
                if found is not None:
                    return found
        return None

    def describe(self, xid: int) -> XWindow | None:
        """One window's identity and state, or None when it no longer exists."""
        win = self.conn.window(xid)
        try:
            attrs = win.get_attributes()
            geom = win.get_geometry()
            origin = win.translate_coords(self.conn.root, 0, 0)
        except error.XError:
            return None
        # translate_coords(root, 0, 0) gives the root's origin in the window: negate it
        x, y = -int(origin.x), -int(origin.y)
        title = self._text_prop(win, "_NET_WM_NAME") or self._text_prop(win, "WM_NAME") or ""
        wm_state = self.conn.card_prop(win, "WM_STATE")
        net_state = self.conn.card_prop(win, "_NET_WM_STATE")
        minimized = (bool(wm_state) and wm_state[0] == _ICONIC_STATE) or (
            self.conn.atom("_NET_WM_STATE_HIDDEN") in net_state
        )
        viewable = attrs.map_state == X.IsViewable
        bounds = Rect(x=x, y=y, width=int(geom.width), height=int(geom.height))
        ident = self._identities.get(xid)
        if ident is None or not ident.still_owner():
            ident = self._identity(win, xid)
            self._identities[xid] = ident
        parent = self.conn.card_prop(win, "WM_TRANSIENT_FOR")
        return XWindow(
            xid=xid,
            title=title,
            bounds=bounds,
            visible=viewable and not minimized and self.conn.on_screen(bounds),
            minimized=minimized,
            pid=ident.pid,
            executable=ident.executable,
            wm_class=ident.wm_class,
            wm_class_parts=ident.wm_class_parts,
            desktop_id=ident.desktop_id,
            transient_for=parent[0] if parent and parent[0] not in (0, xid) else None,
            modal=self.conn.atom("_NET_WM_STATE_MODAL") in net_state,
        )

    def _identity(self, win: Any, xid: int) -> _Identity:
        pid = self.conn.client_pid(xid)
        if pid is None:
            net_pid = self.conn.card_prop(win, "_NET_WM_PID")
            pid = net_pid[0] if net_pid else None
        parts: tuple[str, ...] = ()
        raw_class = self.conn.prop(win, "WM_CLASS", Xatom.STRING)
        if raw_class is not None and raw_class.format == 8:
            value = raw_class.value
            text = value if isinstance(value, str) else bytes(value).decode("latin-1")
            parts = tuple(p for p in text.split("\0") if p)
        return _Identity(
            pid=pid,
            started=process_start_time(pid) if pid else None,
            executable=executable_of(pid) if pid else None,
            wm_class=".".join(parts) if parts else None,
            wm_class_parts=parts,
            desktop_id=self._desktop_id(win),
        )

    def _desktop_id(self, win: Any) -> str | None:
        for name in ("_KDE_NET_WM_DESKTOP_FILE", "_BAMF_DESKTOP_FILE"):
            value = self._text_prop(win, name)
            if value:
                base = os.path.basename(value)
                return base if base.endswith(".desktop") else f"{base}.desktop"
        app_id = self._text_prop(win, "_GTK_APPLICATION_ID")
        if app_id:
            candidate = f"{app_id}.desktop"
            return candidate if _desktop_file_exists(candidate) else app_id
        return None

    def list_windows(self) -> tuple[list[XWindow], bool]:
        """Every top-level window, topmost first, and whether an EWMH manager is running."""
        ids, ewmh = self._client_ids()
        for gone in set(self._identities) - set(ids):
            del self._identities[gone]
        windows = [w for w in (self.describe(xid) for xid in reversed(ids)) if w is not None]
        focused = keys_go_to(self.focused_xid(ewmh, [w.xid for w in windows]), windows)
        for w in windows:
            w.focused = w.xid == focused
        return windows, ewmh

    # ---------------------------------------------------------------- focus

    def toplevel_of(self, xid: int, candidates: list[int]) -> int | None:
        """Walk up from any window to the listed top-level window that contains it."""
        wanted = set(candidates)
        current = xid
        for _ in range(64):
            if current in wanted:
                return current
            if current in (0, int(self.conn.root.id)):
                return None
            try:
                parent = self.conn.window(current).query_tree().parent
            except error.XError:
                return None
            current = int(parent.id) if parent else 0
        return None

    def focused_xid(self, ewmh: bool, candidates: list[int]) -> int | None:
        if ewmh:
            active = self.conn.card_prop(self.conn.root, "_NET_ACTIVE_WINDOW")
            if active and active[0]:
                return self.toplevel_of(active[0], candidates)
        try:
            focus = self.conn.display.get_input_focus().focus
        except error.XError:
            return None
        focus_id = focus if isinstance(focus, int) else int(focus.id)
        if focus_id not in (X.NONE, _POINTER_ROOT, int(self.conn.root.id)):
            found = self.toplevel_of(focus_id, candidates)
            if found is not None:
                return found
        if focus_id in (_POINTER_ROOT, int(self.conn.root.id)):
            try:
                pointer = self.conn.root.query_pointer()
            except error.XError:
                return None
            if pointer.child:
                child_id = int(pointer.child.id)
                found = self.toplevel_of(child_id, candidates)
                if found is None:  # a window manager's frame: its client is below it
                    inner = self._client_in(pointer.child, depth=2)
                    found = inner if inner in candidates else None
                return found
        return None
