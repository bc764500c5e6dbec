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

Where the tree names no file (LibreOffice Writer names its document "report - LibreOffice
Document"; a text editor names none), the file is the one the app was started with whose name
the window's title begins with ("report.odt - LibreOffice Writer", "• todo.txt"): an
argument on the app process's command line (relative ones from its working directory), else
a file the process holds open by that name (LibreOffice keeps its documents open: a Writer
document opened in the process Calc was started by is not on its command line, and a trial's
five Writer saves were never confirmed). A document found neither way is not checked (the
result says nothing of it, rather than something untrue).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

from deskpilot.host.atspi.model import ElementRef
from deskpilot.host.outcome import Effect, EffectCheck
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.wire import ClickAction, InvokeElementAction, PressKeyAction

#: the names of the elements whose click saves the document (case-insensitive, exact)
SAVE_NAMES: Final = frozenset({"save"})
SAVE_KEYS: Final = frozenset({"ctrl+s", "control+s"})
#: open files looked at, at most (an app holds a few dozen)
MAX_FDS: Final = 4096
#: the folder a title names after the file (GNOME Text Editor: "todo.txt (~/notes)")
_FOLDER: Final = re.compile(r"\s+\([^()]*\)$")


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


def started_with(pid: int | None, title: str) -> Path | None:
    """The file whose name the window's title begins with (before " - ", past a modified
    mark, without a folder in brackets): among the process's command-line arguments, else
    among the files it holds open; None when there is none."""
    # "report.odt - LibreOffice Writer", "• todo.txt (~/notes) - Text Editor"
    name = _FOLDER.sub("", title.split(" - ", 1)[0].lstrip("•* ")).strip()
    if pid is None or not name:
        return None
    return _argument(pid, name) or _held_open(pid, name)


def _argument(pid: int, name: str) -> Path | None:
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:]
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None
    for raw in args:
        arg = raw.decode(errors="replace")
        if not arg or arg.startswith("-"):
            continue
        path = Path(unquote(urlparse(arg).path)) if arg.startswith("file://") else Path(arg)
        path = path if path.is_absolute() else cwd / path
        if path.name == name and path.is_file():
            return path
    return None


def _held_open(pid: int, name: str) -> Path | None:
    """The one regular file named ``name`` the process holds open (None when none, or more
    than one: which one the window shows cannot be told)."""
    fds = Path(f"/proc/{pid}/fd")
    found: set[Path] = set()
    try:
        links = list(fds.iterdir())
    except OSError:
        return None
    for link in links[:MAX_FDS]:
        try:
            target = Path(os.readlink(link))
        except OSError:
            continue
        if target.name == name and target.is_absolute() and target.is_file():
            found.add(target)
    return found.pop() if len(found) == 1 else None


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
    action: object,
    element: ElementRef | None,
    elements: Mapping[int, ElementRef],
    window: XWindow | None = None,
) -> EffectCheck | None:
    """The check of a save's effect, its "before" taken now; None for any other action or
    when neither the tree nor the app's command line names the document's file."""
    if not saves(action, element):
        return None
    path = document_file(elements)
    if path is None and window is not None:
        path = started_with(window.pid, window.title)
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
