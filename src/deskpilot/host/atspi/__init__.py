"""The accessibility half of the Linux host: AT-SPI2 over D-Bus (dbus-fast, asyncio).

Public API (the host's observer and dispatcher code against this; see docs/host-tree.md)::

    client = await AtspiClient.connect(session_address=None)  # enables org.a11y.Status
    await client.applications()            -> list[AppInfo]   # name, pid, bus_name, toolkit
    await client.application(bus_name)     -> AppInfo | None  # that app only
    await client.app_statuses(wait_s)      -> list[AppStatus] # each app answered, or silent
    await client.frames(pid=None)          -> list[FrameInfo] # top-level frames + states
    await client.answering_frames(wait_s)  -> list[FrameInfo] # of the apps that answer
    snap = await client.snapshot(frame.ref, max_elements=2000, text_budget=48000,
                                 origin=(win_x, win_y))    -> TreeSnapshot
    snap.text / snap.tree_version / snap.elements[id] -> ElementRef / snap.truncation /
    snap.sensitive_regions (relative to ``origin``) / snap.url / snap.focused_id
    await client.perform(element, SemanticOp.invoke())  -> SemanticResult (waits to settle)
    await client.perform(element, SemanticOp(OpKind.SET_TEXT, text="hi"))
    await client.still_valid(element)      -> bool   # not defunct, same pid (stale_tree)
    await client.extents(element)          -> Rect | None   # current screen bounds
    await client.action_names(element)     -> tuple[str, ...]
    await client.settle(bus_name, since)   -> bool   # events quiet (after synthetic input)
    await client.close()

``perform`` raises ``DeskpilotError``: UNSUPPORTED_ACTION when the element cannot do the
operation semantically (fall back to XTEST), STALE_TREE when the object is gone,
ACTION_FAILED / ACTION_TIMEOUT otherwise. ``snapshot`` raises TARGET_NOT_FOUND when the root
is gone and ENVIRONMENT_UNAVAILABLE (retryable) when the app does not answer in time.

Operations (``OpKind``): invoke (a named action, or the first of click/press/activate/
jump/open/toggle), set_text (EditableText.SetTextContents), insert_text (at the caret of a
focused field, else at the end), set_value (Value.CurrentValue for numbers, EditableText for
strings), select_text (Text.SetSelection/AddSelection), grab_focus (Component.GrabFocus),
select_child (the nearest ancestor's Table.AddRowSelection or Selection.SelectChild: a GTK
tree view row is selected by its table, not by the cell's own action), secondary (an action
named menu/showmenu/popup/showContextMenu, else unsupported so the caller right-clicks),
scroll_to (Component.ScrollTo).

``perform`` waits (``settle=True``) until the app's AT-SPI events go quiet: up to 600 ms for
the first one (GTK buttons click 250 ms after the action), then 120 ms of silence, at most
``settle_max_ms``. The element tree rules and the strategies are in docs/host-tree.md.

Only the host process imports this package.
"""

from deskpilot.host.atspi.client import AtspiClient, tree_version
from deskpilot.host.atspi.model import (
    AppInfo,
    ElementRef,
    FrameInfo,
    NodeRef,
    OpKind,
    SemanticOp,
    SemanticResult,
    TreeSnapshot,
)
from deskpilot.host.atspi.render import RenderOptions, render

__all__ = [
    "AppInfo",
    "AtspiClient",
    "ElementRef",
    "FrameInfo",
    "NodeRef",
    "OpKind",
    "RenderOptions",
    "SemanticOp",
    "SemanticResult",
    "TreeSnapshot",
    "render",
    "tree_version",
]
