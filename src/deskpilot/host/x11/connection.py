"""One persistent X connection for the host's window queries and input.

Opening a connection costs a few milliseconds and the server-side state the host relies on
(remapped spare keycodes, cached atoms) is per connection, so the host opens it once and keeps
it. python-xlib reports asynchronous X errors through a handler; a window vanishing between
two requests is normal on a live desktop, so those errors are counted, not printed.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

from Xlib import X, display, error
from Xlib.ext import res as xres

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect


class XUnavailable(DeskpilotError):
    """No X server could be reached (no DISPLAY, Wayland only, or the server is gone)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.ENVIRONMENT_UNAVAILABLE, message)


@dataclass(frozen=True, slots=True)
class Extensions:
    xtest: bool
    shm: bool
    xres: bool
    composite: bool


class XConnection:
    """A python-xlib Display plus the atoms and extension facts the host needs."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name if name is not None else os.environ.get("DISPLAY", "")
        if not self.name:
            raise XUnavailable("DISPLAY is not set: no X server to connect to")
        try:
            self.display: Any = display.Display(self.name)
        except (error.DisplayError, error.ConnectionClosedError, OSError) as exc:
            raise XUnavailable(f"cannot open X display {self.name}: {exc}") from None
        self.async_errors = 0
        self.display.set_error_handler(self._on_error)
        self.screen: Any = self.display.screen()
        self.root: Any = self.screen.root
        self._atoms: dict[str, int] = {}
        self.extensions = Extensions(
            xtest=self._has_extension("XTEST"),
            shm=self._has_extension("MIT-SHM"),
            xres=self._has_extension("X-Resource"),
            composite=self._has_extension("Composite"),
        )

    def _on_error(self, err: Any, request: Any) -> None:
        self.async_errors += 1

    def _has_extension(self, name: str) -> bool:
        try:
            return bool(self.display.query_extension(name))
        except error.XError:
            return False

    @property
    def width(self) -> int:
        return int(self.screen.width_in_pixels)

    @property
    def height(self) -> int:
        return int(self.screen.height_in_pixels)

    def prop(self, win: Any, name: str, ptype: int = X.AnyPropertyType) -> Any:
        """A window's property by name (python-xlib's reply), or None when it has none or
        is gone."""
        try:
            return win.get_full_property(self.atom(name), ptype)
        except error.XError:
            return None

    def card_prop(self, win: Any, name: str) -> list[int]:
        """A 32-bit property (cardinals, window ids, atoms) as numbers; [] when absent."""
        prop = self.prop(win, name)
        if prop is None or prop.format != 32:
            return []
        return [int(v) for v in prop.value]

    def on_screen(self, rect: Rect) -> bool:
        """Whether any part of a root-coordinate rectangle lies on the screen."""
        return (
            rect.x + rect.width > 0
            and rect.y + rect.height > 0
            and rect.x < self.width
            and rect.y < self.height
        )

    def atom(self, name: str) -> int:
        cached = self._atoms.get(name)
        if cached is None:
            cached = int(self.display.intern_atom(name))
            self._atoms[name] = cached
        return cached

    def atom_name(self, atom: int) -> str:
        try:
            return str(self.display.get_atom_name(atom))
        except error.XError:
            return ""

    def window(self, xid: int) -> Any:
        return self.display.create_resource_object("window", xid)

    def client_pid(self, xid: int) -> int | None:
        """The pid of the client that owns a window, as the X server knows it (XRes 1.2)."""
        if not self.extensions.xres:
            return None
        try:
            reply = self.display.res_query_client_ids(
                [{"client": xid, "mask": xres.LocalClientPIDMask}]
            )
        except (error.XError, AttributeError):
            return None
        for item in reply.ids:
            if item.spec.mask & xres.LocalClientPIDMask and item.value:
                return int(item.value[0])
        return None

    def sync(self) -> None:
        self.display.sync()

    def flush(self) -> None:
        self.display.flush()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a dead connection is not worth a failure
            self.display.close()


def is_wayland_only() -> bool:
    """A Wayland session with no X server to fall back to (no Xwayland DISPLAY)."""
    return bool(os.environ.get("WAYLAND_DISPLAY")) and not os.environ.get("DISPLAY")


XID_NONE = X.NONE
