"""Waiting for the page a browser action loads, so the state an action returns shows it.

A click on a link, a reload or a form sent in a browser used to return the state read when
the app's first events went quiet — the page before it, the window's title still the old
page's (a trial found it in Chromium). What each browser says of a load, measured on
Debian's Chromium and firefox-esr (docs/host.md, "Page loads"):

* **Firefox** makes the document busy when a load starts (``StateChanged:busy`` 1) and says
  ``LoadComplete`` (busy 0) when it ends, so any action whose load started is waited for.
* **Chromium** says nothing until the server answers; then its new document is busy and
  loaded at once. So the action itself has to say a load is coming: a link to another
  document (its ``Hyperlink`` URI), a reload or history key (F5, ctrl+r, alt+Left …), the
  toolbar's Reload, Back or Forward, Return in the address bar (a field outside any page).
  Those are waited for up to ``LOAD_WAIT_S``. A form's default button (``is_default``) or
  Return in a page's field *may* send a form: up to ``MAYBE_WAIT_S`` for a load to show.

A load that started and did not end by ``LOAD_WAIT_S``, or an expected one that never came,
makes the result's effect "unconfirmed", saying so: the state may show the page before it.
Only browsers (toolkit Chromium or Gecko) are watched.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.action_checks import Target
from deskpilot.host.atspi.model import ElementRef
from deskpilot.protocol.wire import (
    ClickAction,
    ExecuteAction,
    InvokeElementAction,
    PressKeyAction,
    TypeTextAction,
)

#: how long a load that started (or one the action surely starts) is waited for
LOAD_WAIT_S: Final = 5.0
#: how long a load an action may start (a form's default button) is waited for to show
MAYBE_WAIT_S: Final = 1.5
BROWSER_KITS: Final = ("chromium", "gecko")
#: keys that reload the page or go through its history
LOAD_KEYS: Final = frozenset(
    {
        "f5",
        "ctrl+r",
        "ctrl+shift+r",
        "ctrl+f5",
        "shift+f5",
        "alt+left",
        "alt+right",
        "alt+home",
        "browserback",
        "browserforward",
        "browserrefresh",
    }
)
ENTER_KEYS: Final = frozenset({"return", "enter", "kp_enter"})
#: the browser toolbar's buttons that load a page (their names in Debian's English builds)
LOAD_BUTTONS: Final = frozenset({"Reload", "Back", "Forward", "Home"})
_PAGE_SCHEMES: Final = frozenset({"http", "https", "file", "ftp", "about", "data"})

Expectation = Literal["load", "maybe"]


@dataclass(frozen=True, slots=True)
class Loaded:
    """How the wait for a page load went: ``waited`` (a load came or was waited for: the
    state is to be read anew), ``note`` (it did not finish in time: why, for the agent)."""

    waited: bool
    note: str | None = None


class PageLoads:
    """The page-load rules of a browser action (see the module docstring)."""

    def __init__(self, accessibility: Accessibility | None = None) -> None:
        #: set again when it connects after construction (ActionDispatcher.accessibility)
        self.accessibility = accessibility

    async def expected(self, request: ExecuteAction, target: Target) -> Expectation | None:
        """Whether the action is one that loads a page in a browser ("load"), may send a
        form ("maybe"), or neither (None); read before it is dispatched (the link it
        follows may be gone after)."""
        acc, bus = self.accessibility, target.bus
        if acc is None or bus is None or await acc.toolkit_of(bus) not in BROWSER_KITS:
            return None
        action = request.action
        tree = target.binding.tree
        elements: Mapping[int, ElementRef] = tree.snapshot.elements if tree is not None else {}
        if isinstance(action, PressKeyAction):
            keys = {k.replace(" ", "").lower() for k in action.keys}
            if keys & LOAD_KEYS:
                return "load"
            if keys & ENTER_KEYS:
                return _enter(target.focused, elements)
            return None
        if isinstance(action, TypeTextAction):
            if action.text.endswith("\n"):
                return _enter(target.element or target.focused, elements)
            return None
        element = target.element
        if element is None or not isinstance(action, ClickAction | InvokeElementAction):
            return None
        if isinstance(action, ClickAction) and (action.button.value != "left" or action.count > 2):
            return None
        if element.role == "link":
            here = tree.snapshot.url if tree is not None else None
            return "load" if _elsewhere(await acc.link_target(element), here) else None
        if element.role == "button":
            if not _in_page(element, elements):
                return "load" if element.name in LOAD_BUTTONS else None
            if "is_default" in element.states:
                return "maybe"
        return None

    async def wait(self, bus: str, since: float, expected: Expectation | None) -> Loaded | None:
        """Wait for the page load the action started (since ``since``, monotonic) to end;
        None when there is none to wait for (no load expected, none started)."""
        acc = self.accessibility
        if acc is None:
            return None
        load = acc.page_load(bus, since)
        if expected is None and not load.started:
            return None
        deadline = since + LOAD_WAIT_S
        while True:
            load = acc.page_load(bus, since)
            if load.ended and not load.loading:
                return Loaded(True)
            # a form that may be sent, and no load has shown yet: only the short bound
            unsure = expected == "maybe" and not load.started and not load.ended
            limit = since + MAYBE_WAIT_S if unsure else deadline
            now = time.monotonic()
            if now >= limit:
                return None if unsure else Loaded(True, _late(load.started))
            await acc.next_event(bus, limit - now)


def _late(started: bool) -> str:
    if started:
        return (
            f"the page had not finished loading {LOAD_WAIT_S:.0f} s after the action: this "
            "state may show it part loaded, or the page before it; observe again"
        )
    return (
        f"no page load was seen within {LOAD_WAIT_S:.0f} s of an action that loads a page: "
        "this state may still show the page before it; observe again"
    )


def _enter(field: ElementRef | None, elements: Mapping[int, ElementRef]) -> Expectation | None:
    """Return in a field: the address bar (a field outside any page) loads a page, a page's
    field may send its form."""
    if field is None or field.role not in ("textField", "comboBox"):
        return None
    return "maybe" if _in_page(field, elements) else "load"


def _in_page(element: ElementRef, elements: Mapping[int, ElementRef]) -> bool:
    """Whether the element is inside a web page (a rendered ``document`` ancestor)."""
    parent = element.parent_id
    while parent is not None:
        above = elements.get(parent)
        if above is None:
            return False
        if above.role == "document":
            return True
        parent = above.parent_id
    return False


def _elsewhere(uri: str | None, here: str | None) -> bool:
    """A link target that is another document than ``here`` (not a fragment of it, not a
    script or a mail address)."""
    if not uri:
        return False
    if urllib.parse.urlsplit(uri).scheme.lower() not in _PAGE_SCHEMES:
        return False
    return uri.split("#", 1)[0] != (here or "").split("#", 1)[0]
