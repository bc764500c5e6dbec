"""Whether a save wrote the document: its file, looked at before and after.

A document app's tree seldom says that a save happened: LibreOffice 7.4 shows its "modified"
mark in the status bar as an image with no name or text, and keeps its window title. The
document's file does say it. When the observed tree names the document's file (a
``document`` element whose name is a ``file://`` URL, as LibreOffice names it: "file:///…/
prices.ods - LibreOffice Spreadsheets"), an action that saves — a click or invoke on an
element named "Save", or the key ctrl+s — has its effect checked once it settled: the file's
modification time is taken before the action is sent and again after
(``ActionResult.effect``): ``confirmed`` when the file was written, ``unconfirmed`` (with
why) when it was not, which is what a dialog asking how to save (Keep current format?)
looks like.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

from deskpilot.host.atspi.model import ElementRef
from deskpilot.host.outcome import Effect, EffectCheck
from deskpilot.protocol.wire import ClickAction, InvokeElementAction, PressKeyAction

#: the names of the elements whose click saves the document (case-insensitive, exact)
SAVE_NAMES: Final = frozenset({"save"})
SAVE_KEYS: Final = frozenset({"ctrl+s", "control+s"})


def document_file(elements: Mapping[int, ElementRef]) -> Path | None:
    """The file of the first document element named by a ``file://`` URL (the app's name
    for its window may follow: " - LibreOffice Spreadsheets"); None when there is none or
    the file does not exist."""
    for e in elements.values():
        if e.role != "document" or not e.name.startswith("file://"):
            continue
        name = e.name
        while True:
            path = Path(unquote(urlparse(name).path))
            if path.is_file():
                return path
            if " - " not in name:
                break
            name = name.rsplit(" - ", 1)[0]
    return None


def saves(action: object, element: ElementRef | None) -> bool:
    """Whether ``action`` is a person's way to save: a left click (or the default action) on
    an element named "Save", or ctrl+s."""
    if isinstance(action, PressKeyAction):
        return [k.lower().replace(" ", "") for k in action.keys] in [[k] for k in SAVE_KEYS]
    if element is None or element.name.strip().lower() not in SAVE_NAMES:
        return False
    if isinstance(action, ClickAction):
        return action.button == "left" and action.count == 1
    return isinstance(action, InvokeElementAction) and action.action is None


def watch(
    action: object, element: ElementRef | None, elements: Mapping[int, ElementRef]
) -> EffectCheck | None:
    """The check of a save's effect, its "before" taken now; None for any other action or
    when the tree names no document file."""
    if not saves(action, element):
        return None
    path = document_file(elements)
    if path is None:
        return None
    before = _mtime(path)

    async def check() -> Effect:
        after = _mtime(path)
        if after is not None and after != before:
            return Effect("confirmed")
        return Effect(
            "unconfirmed",
            "the document's file was not written: the app may be asking how to save (a "
            "dialog), or it had nothing to save; read the new state",
        )

    return check


def _mtime(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
