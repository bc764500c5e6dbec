"""Owning the CLIPBOARD selection for ``paste_text``: the app pulls the text on ctrl+v.

X has no clipboard storage: the owner answers each ``SelectionRequest``. The host owns the
selection with a hidden window on its own connection, served by one thread that waits on the
X socket and a wake-up pipe, so requests are answered whatever the worker is doing. Text
above one request's size goes out with the ICCCM ``INCR`` protocol. After the paste the host
gives the selection up and forgets the text: a pasted password does not linger in memory or
on the clipboard.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from dataclasses import dataclass
from typing import Any

from Xlib import X, Xatom, error
from Xlib.protocol import event as xevent
from Xlib.protocol import request

from deskpilot.host.x11.connection import XConnection

log = logging.getLogger("deskpilot.host.clipboard")

CHUNK_BYTES = 200_000  # under one request's maximum (65,535 × 4 bytes) with room to spare


@dataclass(slots=True)
class _Incr:
    requestor: Any
    prop: int
    type_atom: int
    data: bytes
    offset: int = 0


class ClipboardOwner:
    def __init__(self, display_name: str) -> None:
        self.conn = XConnection(display_name)
        d = self.conn.display
        self.window = self.conn.root.create_window(
            -10, -10, 1, 1, 0, X.CopyFromParent, X.InputOnly, X.CopyFromParent
        )
        self.clipboard = self.conn.atom("CLIPBOARD")
        self.targets = self.conn.atom("TARGETS")
        self.utf8 = self.conn.atom("UTF8_STRING")
        self.incr = self.conn.atom("INCR")
        self.text_plain = self.conn.atom("text/plain;charset=utf-8")
        self.text = self.conn.atom("TEXT")
        self._data: bytes | None = None
        self._served = threading.Event()
        self._last_activity = 0.0
        self._lock = threading.Lock()
        self._incr: dict[tuple[int, int], _Incr] = {}
        self._commands: list[tuple[str, bytes | None]] = []
        self._wake_r, self._wake_w = os.pipe()
        self._done = threading.Event()
        self._last_ok = False
        self._stop = False
        d.flush()
        self._thread = threading.Thread(target=self._serve, name="clipboard", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- worker-side API

    def offer(self, text: str, timeout: float = 2.0) -> bool:
        """Own CLIPBOARD with ``text``; True once the server confirms the ownership."""
        self._served.clear()
        return self._command("offer", text.encode(), timeout)

    def wait_served(self, timeout: float) -> bool:
        """True once an app fetched the text (its last chunk, for INCR transfers)."""
        return self._served.wait(timeout)

    def wait_idle(self, idle_s: float, timeout: float) -> bool:
        """True once no transfer is in flight and no request came for ``idle_s``.

        An app may fetch the text more than once (another target, a second look after the
        first transfer): giving the selection up right after the first fetch can leave the
        paste empty, so the owner stays until the requests have stopped."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            if not self._incr and now - self._last_activity >= idle_s:
                return True
            if now >= deadline:
                return False
            time.sleep(0.02)

    def withdraw(self, timeout: float = 1.0) -> None:
        """Give the selection up and forget the text."""
        self._command("withdraw", None, timeout)

    def _command(self, name: str, payload: bytes | None, timeout: float) -> bool:
        with self._lock:
            self._done.clear()
            self._commands.append((name, payload))
            os.write(self._wake_w, b"x")
        return self._done.wait(timeout) and self._last_ok

    # ---------------------------------------------------------------- serving thread

    def _serve(self) -> None:
        d = self.conn.display
        fd = d.fileno()
        while not self._stop:
            try:
                while d.pending_events():
                    self._on_event(d.next_event())
                with self._lock:
                    commands, self._commands = self._commands, []
                for name, payload in commands:
                    self._last_ok = self._run(name, payload)
                    self._done.set()
                d.flush()
                # python-xlib reads what the server sent while it flushes (a big chunk's write
                # would deadlock otherwise): those events now wait in its queue, where select()
                # on the socket cannot see them. Blocking here stalled INCR transfers for the
                # full second, past the app's per-step timeout, and the paste was dropped.
                if d.pending_events():
                    continue
                readable, _, _ = select.select([fd, self._wake_r], [], [], 1.0)
                if self._wake_r in readable:
                    os.read(self._wake_r, 64)
            except (error.ConnectionClosedError, OSError, ValueError):
                return
            except Exception:  # one bad request must not end the service
                log.exception("clipboard event handling failed")

    def _run(self, name: str, payload: bytes | None) -> bool:
        if name == "offer":
            self._data = payload
            self.window.set_selection_owner(self.clipboard, X.CurrentTime)
            owner = self.conn.display.get_selection_owner(self.clipboard)
            return bool(owner) and int(owner.id) == int(self.window.id)
        self._data = None
        self._incr.clear()
        owner = self.conn.display.get_selection_owner(self.clipboard)
        if owner and int(owner.id) == int(self.window.id):
            request.SetSelectionOwner(
                display=self.conn.display.display,
                window=X.NONE,
                selection=self.clipboard,
                time=X.CurrentTime,
            )
            self.conn.display.sync()
        return True

    def _on_event(self, ev: Any) -> None:
        if ev.type == X.SelectionRequest:
            self._on_request(ev)
        elif ev.type == X.SelectionClear:
            self._data = None  # someone else copied: forget ours
            self._incr.clear()
        elif ev.type == X.PropertyNotify and ev.state == X.PropertyDelete:
            self._on_incr_progress(ev)

    def _on_request(self, ev: Any) -> None:
        self._last_activity = time.monotonic()
        prop = ev.property or ev.target  # obsolete clients pass None: use the target
        requestor = ev.requestor
        ok = False
        data = self._data
        if data is not None and ev.selection == self.clipboard:
            if ev.target == self.targets:
                atoms = [self.targets, self.utf8, self.text_plain, self.text, Xatom.STRING]
                requestor.change_property(prop, Xatom.ATOM, 32, atoms)
                ok = True
            elif ev.target in (self.utf8, self.text_plain, self.text, Xatom.STRING):
                type_atom = self.utf8 if ev.target != Xatom.STRING else Xatom.STRING
                payload = (
                    data
                    if ev.target != Xatom.STRING
                    else data.decode().encode("latin-1", errors="replace")
                )
                if len(payload) <= CHUNK_BYTES:
                    requestor.change_property(prop, type_atom, 8, payload)
                    self._served.set()
                else:
                    requestor.change_attributes(event_mask=X.PropertyChangeMask)
                    requestor.change_property(prop, self.incr, 32, [len(payload)])
                    self._incr[(int(requestor.id), prop)] = _Incr(
                        requestor, prop, type_atom, payload
                    )
                ok = True
        notify = xevent.SelectionNotify(
            time=ev.time,
            requestor=requestor,
            selection=ev.selection,
            target=ev.target,
            property=prop if ok else X.NONE,
        )
        with contextlib.suppress(error.XError):
            requestor.send_event(notify)

    def _on_incr_progress(self, ev: Any) -> None:
        transfer = self._incr.get((int(ev.window.id), ev.atom))
        if transfer is None:
            return
        self._last_activity = time.monotonic()
        chunk = transfer.data[transfer.offset : transfer.offset + CHUNK_BYTES]
        transfer.offset += len(chunk)
        transfer.requestor.change_property(transfer.prop, transfer.type_atom, 8, chunk)
        if not chunk:  # the zero-length chunk ends the transfer
            del self._incr[(int(ev.window.id), ev.atom)]
            self._served.set()

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        self._thread.join(timeout=2)
        self._data = None
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.conn.close()
