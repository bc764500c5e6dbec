"""When an action's result may carry the next stateId (docs/mcp.md, "stateId": one read fewer).

Only when every condition holds: no error, refusal or known state change (the caller checks
that); the same app identity as the state acted on; a complete window header; a window root;
unique valid element ids; a screenshot; nothing truncated, elided or partial; no modal dialog
of the window open over it (``modal_dialog_open``: the window takes no input until it closes,
and keys sent to it go to the dialog); in a browser, page content (a document or a dialog: a
tab that is still opening has neither). An open context menu or drop-down list is no reason:
the host shows it in the tree as a ``- popup`` section (docs/host-tree.md), and a menu is never
a top-level window of the listing. Another window of the app having the focus is none either:
keys are sent to the window acted on (the host gives it the focus first). The window title
is not compared with the tree's root name: AT-SPI reports a page's new title later than X
does. Otherwise the result says to observe explicitly; nothing is re-read in the background
to paper over it. This is a structure and identity check, not a promise that the UI is
atomic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from deskpilot.protocol.wire import AppIdentity, ObservationBody, WindowInfo
from deskpilot.runtime.tree import element_ids
from deskpilot.runtime.window_lists import dialogs_of

WINDOW_ROOT_ROLES = frozenset(
    {"window", "frame", "dialog", "alert", "file_chooser", "fileChooser", "application"}
)


_PAGE_CONTENT = re.compile(r"^\s*- (?:document|dialog|alertDialog)\b", re.M)
_BROWSERS = ("chromium", "chrome", "firefox", "brave", "vivaldi", "opera", "epiphany", "edge")


def _is_browser(app: AppIdentity) -> bool:
    name = (app.executable or app.name or "").lower()
    return any(b in name for b in _BROWSERS)


def reuse_refusals(
    previous_app: AppIdentity,
    obs: ObservationBody | None,
    png: bytes | None,
    windows: Sequence[WindowInfo] = (),
) -> list[str]:
    """Names of the conditions that fail; empty means the state may be reused. ``windows``:
    the desktop's windows as listed with the state (the dialogs open over it)."""
    if obs is None:
        return ["no_observation"]
    reasons: list[str] = []
    if obs.app.pid != previous_app.pid or (
        previous_app.name is not None
        and obs.app.name is not None
        and obs.app.name != previous_app.name
    ):
        reasons.append("app_identity_changed")
    w = obs.window
    if not w.window_id or w.bounds.width <= 0 or w.bounds.height <= 0:
        reasons.append("incomplete_window_header")
    lines = [ln for ln in obs.tree.splitlines() if ln.strip()]
    first = lines[0].lstrip() if lines else ""
    role = first[2:].split(" ", 1)[0] if first.startswith("- ") else ""
    if role not in WINDOW_ROOT_ROLES:
        reasons.append("no_window_root")
    if _is_browser(obs.app) and not _PAGE_CONTENT.search(obs.tree):
        reasons.append("page_not_loaded")  # a new tab or navigation still on its way
    ids = element_ids(obs.tree)
    if not ids or len(set(ids)) != len(ids) or min(ids) < 1 or len(ids) != obs.element_count:
        reasons.append("element_ids_invalid")
    if png is None or obs.image is None:
        reasons.append("no_screenshot")
    t = obs.truncation
    if t.omitted_elements or t.element_cap_hit or t.text_budget_hit or "[truncated" in obs.tree:
        reasons.append("truncated")
    if t.elided_children:
        reasons.append("partial_elided")
    if t.tree_unavailable:
        reasons.append("tree_unavailable")
    if obs.tree_read.partial is not None:
        reasons.append("tree_partial")  # cut at its deadline: element ids cannot be acted on
    if obs.tree_read.stale_age_ms is not None:
        reasons.append("tree_stale")  # the app did not answer: the last tree read of it
    if any(d.modal for d in dialogs_of(list(windows), w.window_id)):
        reasons.append("modal_dialog_open")  # its dialog takes the input: act on that
    return reasons
