"""Semantic operations on an element: what each ``OpKind`` is in AT-SPI calls.

The table of operations and the calls they make is docs/host-tree.md ("Acting"). Reads go
over the app's reading connection; every call that changes the app goes on an action
connection, so an action that opens a modal dialog cannot deadlock the app (docs/host.md,
"Actions that open a modal dialog"). Whatever cannot be done semantically is refused with
UNSUPPORTED_ACTION, and the host falls back to synthetic input.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Final

from dbus_fast import Variant

from deskpilot.host.atspi.action_conns import ActionConns
from deskpilot.host.atspi.app_events import AppEvents
from deskpilot.host.atspi.bus import (
    I_ACTION,
    I_COMPONENT,
    I_EDITABLE_TEXT,
    I_PROPERTIES,
    I_SELECTION,
    I_TEXT,
    I_VALUE,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.connections import Connections
from deskpilot.host.atspi.element_reads import action_names, caret_or_end, interfaces
from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp, SemanticResult
from deskpilot.host.atspi.refusals import STILL_RUNNING, UNSUPPORTED_ERRORS, unsupported
from deskpilot.host.atspi.select_child import select_child
from deskpilot.host.atspi.selection import ActFn
from deskpilot.host.atspi.vocab import CLICK_ACTIONS, SECONDARY_ACTIONS, is_noise_action
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

CALL_TIMEOUT_S: Final = 5.0


class Operations:
    """The action connections (``ActionConns``), and the operations done over them."""

    def __init__(self, connections: Connections, events: AppEvents) -> None:
        self._connections = connections
        self._events = events
        # state-changing calls go on their own sockets (modal dialogs: see action_conns)
        self._actions = ActionConns(connections.bus)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._actions.close(), 3.0)

    async def perform(
        self, element: ElementRef, op: SemanticOp, *, settle: bool, settle_max_ms: float
    ) -> SemanticResult:
        """Do ``op``, bounded in time; AT-SPI errors become DeskpilotError (see the facade)."""
        if settle:
            await self._events.ready()
        t0 = time.perf_counter()
        since = time.monotonic()
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                conn = await self._connections.conn_for(element.bus_name)
                detail = await self._do(conn, element, op)
        except TimeoutError as exc:
            raise DeskpilotError(
                ErrorCode.ACTION_TIMEOUT, f"{op.kind.value}: the app did not answer"
            ) from exc
        except AtspiCallError as exc:
            if exc.gone:
                raise DeskpilotError(
                    ErrorCode.STALE_TREE, "the element no longer exists", retryable=True
                ) from exc
            if exc.name in UNSUPPORTED_ERRORS:
                raise unsupported(op, element, exc.name) from exc
            raise DeskpilotError(ErrorCode.ACTION_FAILED, f"{op.kind.value}: {exc.name}") from exc
        settled: bool | None = None
        if settle:
            settled = await self._events.settle(element.bus_name, since, max_ms=settle_max_ms)
        return SemanticResult(
            kind=op.kind,
            detail=detail,
            settled=settled,
            duration_ms=(time.perf_counter() - t0) * 1000,
        )

    async def _do(self, conn: Conn, el: ElementRef, op: SemanticOp) -> str:
        """Do ``op``; the detail of how it was done."""
        ifaces = await interfaces(conn, el)
        kind = op.kind
        if kind in (OpKind.INVOKE, OpKind.SECONDARY):
            return await self._invoke(conn, el, op, ifaces)
        # a number goes to the Value interface where there is one; a text field without it
        # (an entry) takes "42" as text, as it takes any other value
        if kind in (OpKind.SET_TEXT, OpKind.INSERT_TEXT) or (
            kind == OpKind.SET_VALUE and (not _numeric(op.value) or "Value" not in ifaces)
        ):
            return await self._write_text(conn, el, op, ifaces)
        if kind == OpKind.SET_VALUE:
            return await self._set_number(conn, el, op, ifaces)
        if kind == OpKind.SELECT_TEXT:
            return await self._select_text(conn, el, op, ifaces)
        if kind == OpKind.GRAB_FOCUS:
            return await self._grab_focus(conn, el, op, ifaces)
        if kind == OpKind.SET_CARET:
            if "Text" not in ifaces:
                raise unsupported(op, el, "no Text interface")
            body = await self._act(conn, el, I_TEXT, "SetCaretOffset", "i", (op.start or 0,))
            if body is not None and not body[0]:
                raise unsupported(op, el, "SetCaretOffset returned false")
            return "Text.SetCaretOffset"
        if kind == OpKind.SCROLL_TO:
            if "Component" not in ifaces:
                raise unsupported(op, el, "no Component interface")
            await self._act(conn, el, I_COMPONENT, "ScrollTo", "u", (6,))  # ANYWHERE
            return "Component.ScrollTo"
        if kind == OpKind.SELECT_CHILD:
            return await select_child(conn, el, op, self._act_on(conn, el))
        if kind == OpKind.CHOOSE_OPTION:
            return await self._choose_option(conn, el, op, ifaces)
        if kind == OpKind.CLEAR_SELECTION:
            if "Selection" not in ifaces:
                raise unsupported(op, el, "no Selection interface")
            body = await self._act(conn, el, I_SELECTION, "ClearSelection")
            if body is not None and not body[0]:
                raise unsupported(op, el, "ClearSelection returned false")
            return "Selection.ClearSelection"
        raise unsupported(op, el, "unknown operation")

    async def _invoke(
        self, conn: Conn, el: ElementRef, op: SemanticOp, ifaces: frozenset[str]
    ) -> str:
        """``Action.DoAction`` of the action ``op`` names (or the default one)."""
        if "Action" not in ifaces:
            raise unsupported(op, el, "no Action interface")
        names = await action_names(conn, el)
        index = _pick_action(names, op)
        if index is None:
            raise unsupported(op, el, "no matching action", available=list(names))
        body = await self._act(conn, el, I_ACTION, "DoAction", "i", (index,))
        if body is None:
            return f"action {names[index]!r}; {STILL_RUNNING}"
        if not body[0]:
            raise unsupported(op, el, f"DoAction({names[index]!r}) returned false")
        return f"action {names[index]!r}"

    async def _write_text(
        self, conn: Conn, el: ElementRef, op: SemanticOp, ifaces: frozenset[str]
    ) -> str:
        """set_text, insert_text (where typing would land), and set_value of a string."""
        kind = op.kind
        text = op.text if kind != OpKind.SET_VALUE else str(op.value)
        if text is None:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"{kind.value} needs text")
        if "EditableText" not in ifaces or (el.secure and kind == OpKind.SET_VALUE):
            raise unsupported(op, el, "no EditableText interface")
        if kind == OpKind.INSERT_TEXT:
            pos = await caret_or_end(conn, el)
            body = await self._act(
                conn, el, I_EDITABLE_TEXT, "InsertText", "isi", (pos, text, len(text.encode()))
            )
            detail = "EditableText.InsertText"
        else:
            body = await self._act(conn, el, I_EDITABLE_TEXT, "SetTextContents", "s", (text,))
            detail = "EditableText.SetTextContents"
        if body is None:
            return f"{detail}; {STILL_RUNNING}"
        if not body[0]:
            raise unsupported(op, el, f"{detail} returned false")
        return detail

    async def _set_number(
        self, conn: Conn, el: ElementRef, op: SemanticOp, ifaces: frozenset[str]
    ) -> str:
        if "Value" not in ifaces:
            raise unsupported(op, el, "no Value interface")
        assert op.value is not None
        body = await self._act(
            conn,
            el,
            I_PROPERTIES,
            "Set",
            "ssv",
            (I_VALUE, "CurrentValue", Variant("d", float(op.value))),
        )
        return "Value.CurrentValue" if body is not None else f"Value.CurrentValue; {STILL_RUNNING}"

    async def _select_text(
        self, conn: Conn, el: ElementRef, op: SemanticOp, ifaces: frozenset[str]
    ) -> str:
        if "Text" not in ifaces:
            raise unsupported(op, el, "no Text interface")
        start, end = op.start or 0, op.end if op.end is not None else 0
        n_sel = await conn.call(el.bus_name, el.path, I_TEXT, "GetNSelections")
        if int(n_sel[0]) > 0:
            body = await self._act(conn, el, I_TEXT, "SetSelection", "iii", (0, start, end))
            if body is not None and body[0] and start < end and not await _has_selection(conn, el):
                # GTK 4.8's SetSelection clears the selection it was asked to move (its
                # AddSelection works): the old range is removed and the new one added
                await self._act(conn, el, I_TEXT, "RemoveSelection", "i", (0,))
                body = await self._act(conn, el, I_TEXT, "AddSelection", "ii", (start, end))
        else:
            body = await self._act(conn, el, I_TEXT, "AddSelection", "ii", (start, end))
        if body is None:
            return f"Text selection; {STILL_RUNNING}"
        if not body[0]:
            raise unsupported(op, el, "selection refused")
        return "Text selection"

    async def _grab_focus(
        self, conn: Conn, el: ElementRef, op: SemanticOp, ifaces: frozenset[str]
    ) -> str:
        if "Component" not in ifaces:
            raise unsupported(op, el, "no Component interface")
        body = await self._act(conn, el, I_COMPONENT, "GrabFocus")
        if body is None:
            return f"Component.GrabFocus; {STILL_RUNNING}"
        if not body[0]:
            raise unsupported(op, el, "GrabFocus returned false")
        return "Component.GrabFocus"

    async def _choose_option(
        self, conn: Conn, el: ElementRef, op: SemanticOp, ifaces: frozenset[str]
    ) -> str:
        """The combo box ``el`` makes option ``op.index`` its active item."""
        if "Selection" not in ifaces or op.index is None:
            raise unsupported(op, el, "no Selection interface")
        body = await self._act(conn, el, I_SELECTION, "SelectChild", "i", (op.index,))
        if body is not None and not body[0]:
            raise unsupported(op, el, "SelectChild returned false")
        done = "Selection.SelectChild on the combo box"
        return done if body is not None else f"{done}; {STILL_RUNNING}"

    async def _act(
        self,
        conn: Conn,
        el: ElementRef,
        iface: str,
        member: str,
        signature: str = "",
        body: tuple[Any, ...] = (),
        *,
        path: tuple[str, str] | None = None,
    ) -> list[Any] | None:
        """A state-changing call, on an action connection (never ``conn``, which reads trees,
        when the app offers private sockets). None: delivered, and the app has not returned
        from it within ``ACTION_REPLY_WAIT_S`` — it counts as dispatched."""
        b, p = path if path is not None else (el.bus_name, el.path)
        return await self._actions.call(b, el.pid, conn, p, iface, member, signature, body)

    def _act_on(self, conn: Conn, el: ElementRef) -> ActFn:
        """``_act`` for calls on another object of ``el``'s app (its container)."""

        async def act(
            path: tuple[str, str], iface: str, member: str, sig: str, body: tuple[Any, ...]
        ) -> list[Any] | None:
            return await self._act(conn, el, iface, member, sig, body, path=path)

        return act


async def _has_selection(conn: Conn, el: ElementRef) -> bool:
    """Whether the element has a non-empty selection now (GTK 4 answers InvalidArgs when it
    has none, LibreOffice (-1, -1), GTK 3 an empty range)."""
    try:
        start, end = await conn.call(el.bus_name, el.path, I_TEXT, "GetSelection", "i", (0,))
    except AtspiCallError:
        return False
    return 0 <= int(start) < int(end)


def _numeric(v: float | str | None) -> bool:
    if isinstance(v, int | float):
        return True
    try:
        float(str(v))
    except (TypeError, ValueError):
        return False
    return True


def _pick_action(names: tuple[str, ...], op: SemanticOp) -> int | None:
    """The index of the action ``op`` asks for: for secondary, a menu action; a named action
    exactly, case-insensitively or by a unique prefix; else the default (click and the like,
    a single usable action, clickAncestor/doDefault)."""
    lowered = [n.lower() for n in names]
    if op.kind == OpKind.SECONDARY:
        for want in SECONDARY_ACTIONS:
            if want.lower() in lowered:
                return lowered.index(want.lower())
        return None
    if op.action:
        if op.action in names:
            return names.index(op.action)
        if op.action.lower() in lowered:
            return lowered.index(op.action.lower())
        # the tree shortens long action names with "…": a unique prefix names one action
        prefix = op.action.rstrip("…").rstrip(".").strip().lower()
        if len(prefix) >= 3:
            matches = [i for i, n in enumerate(lowered) if n.startswith(prefix)]
            if len(matches) == 1:
                return matches[0]
        return None
    for want in CLICK_ACTIONS:
        if want in lowered:
            return lowered.index(want)
    usable = [i for i, n in enumerate(names) if not is_noise_action(n)]
    if len(usable) == 1:
        return usable[0]
    for fallback in ("clickancestor", "dodefault"):
        if fallback in lowered:
            return lowered.index(fallback)
    return None
