"""Putting text into a field, and reading it back: the one place type_text, paste_text and
set_value of text go through for a field (docs/host.md, "Text into a field").

* **Semantic where it works**: ``EditableText.InsertText`` (typing) and ``SetTextContents``
  (set_value) — unless the app was caught answering them and changing nothing (Firefox
  does: atspi/gecko.py). The field is read right after the call, and a field whose text did
  not change within ``LANDED_WAIT_S`` sends the host the way a person goes; the app is
  remembered (by bus name), so its next field goes there at once.
* **As a person types**: keyboard focus on the field (its caret at the end of its text
  when it did not have the focus: where InsertText would have put it), then keys; for
  set_value, select-all first and the keys of the value (Delete for an empty one).
* **Read back**: the field as it was before the action goes with the outcome as its effect
  check (``Outcome.check``, host/effect_checks.py's contract), and once the action settled
  :meth:`TextEntry.verify` reads it again, up to ``VERIFY_WAIT_S`` while it has not changed
  yet, and says "confirmed" or "unconfirmed" and why (host/text_checks.py); a field that
  showed the text only after that first look is ``late``, and the dispatcher looks at the
  window again. The dispatcher puts it in the result (``ActionResult.effect`` /
  ``effect_note``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Final, Literal

from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.element_states import TEXT_FIELD_ROLES
from deskpilot.host.outcome import Effect, EffectCheck, Outcome
from deskpilot.host.primitives import Primitives
from deskpilot.host.text_checks import CheckKind, TextCheck, Verdict
from deskpilot.host.x11.keymap import parse_chord
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.wire import Rect

#: how long a semantic write may take to show in the field before the keys go instead
LANDED_WAIT_S: Final = 0.3
#: how long a field may take to say it has the keyboard focus after it was given it
FOCUS_WAIT_S: Final = 0.5
#: how long, after the action settled, the field may take to show the text
VERIFY_WAIT_S: Final = 1.0
POLL_S: Final = 0.05


def takes_field_text(element: ElementRef, text: str = "") -> bool:
    """Whether these rules put ``text`` into ``element`` and read it back: a text or
    password field, a combo box that takes text (an address bar), or an editable paragraph
    (Writer's) for text that stays in it (a new line makes a new one)."""
    if element.role in TEXT_FIELD_ROLES:
        return True
    if element.role == "paragraph":
        return "editable" in element.states and not _CONTROL & set(text)
    return element.role == "comboBox" and "editable" in element.states


#: characters a person types as keys that do something (Enter, Tab), not as text
_CONTROL: Final = frozenset("\n\r\t")


def _one_line_field(element: ElementRef) -> bool:
    return (
        takes_field_text(element)
        and element.role != "paragraph"
        and "multi_line" not in element.states
    )


def _known(effect: Effect) -> EffectCheck:
    """An effect check whose answer was read already (before keys that changed the field)."""

    async def known() -> Effect:
        return effect

    return known


@dataclass(slots=True)
class TextEntry:
    """Text into fields, with the dispatcher's primitives."""

    p: Primitives
    #: apps (bus names) caught answering EditableText calls and changing nothing
    ignores_editable: set[str] = field(default_factory=set)

    # ---------------------------------------------------------------- reading

    async def check_for(self, element: ElementRef, kind: CheckKind, text: str) -> TextCheck | None:
        """The field as it is before the action, with what the action should leave in it;
        None when it is no field (a terminal, a canvas, a document, a sheet's cell: what
        typing leaves there is not the field's text alone, or not yet)."""
        if not takes_field_text(element, text):
            return None
        if self.p.accessibility is None:
            return None
        if "multi_line" not in element.states:
            # Enter and Tab leave no character in a one-line field: what stays is the rest
            text = "".join(ch for ch in text if ch not in _CONTROL)
        before = await self.p.accessibility.field_text(element, len(text))
        return None if before is None else TextCheck(element, kind, text, before)

    async def _read(self, check: TextCheck) -> Verdict:
        acc = self.p.accessibility
        after = await acc.field_text(check.element, len(check.text)) if acc else None
        return check.verdict(after)

    def effect_of(self, check: TextCheck | None) -> EffectCheck | None:
        """The read-back as the dispatcher runs it once the UI settled (``Outcome.check``)."""
        if check is None:
            return None

        async def read_back() -> Effect:
            return await self.verify(check)

        return read_back

    async def verify(self, check: TextCheck) -> Effect:
        """Read the field again, waiting up to ``VERIFY_WAIT_S`` while it has not changed
        (``Effect.late``: it showed the text only after the first look)."""
        deadline = time.monotonic() + VERIFY_WAIT_S
        verdict = await self._read(check)
        late = False
        while not verdict.confirmed and not verdict.final and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
            verdict = await self._read(check)
            late = True
        if verdict.confirmed:
            return Effect("confirmed", None, late)
        return Effect("unconfirmed", verdict.note, late)

    # ---------------------------------------------------------------- writing

    async def type_into(
        self, element: ElementRef, text: str, window: XWindow, rect: Rect
    ) -> Outcome:
        """``text`` in at the caret (a field without the focus: at its end), semantically
        where that works, else by focus and keys; the outcome carries the read-back check.

        Text that ends in Enter or Tab for a one-line field (``"example.org\n"`` into an
        address bar) is read back before those keys go: what the field shows after them is
        the app's (a page's address, the next field's text), not what was typed. The keys go
        to the field: a head put in semantically left the keyboard where it was (Calc's
        Name Box got "H40" and the Enter went to the sheet — or to another window)."""
        head = text.rstrip("".join(_CONTROL))
        if head != text and head and not _CONTROL & set(head) and _one_line_field(element):
            first = await self.type_into(element, head, window, rect)
            effect = await first.check() if first.check is not None else None
            await self.p.focus_element(element, window, rect)
            keys = await asyncio.to_thread(self.p.input().type_text, text[len(head) :])
            first.detail = f"{first.detail}; read back, then {keys} Enter/Tab keys"
            first.check = None if effect is None else _known(effect)
            return first
        check = await self.check_for(element, "insert", text)
        done = None
        if not await self._as_keys(element, text, check):
            done = await self.insert_semantically(element, text, check)
        if done is not None:
            return done
        how = await self.focus_for_typing(element, window, rect)
        typed = await asyncio.to_thread(self.p.input().type_text, text)
        method: Literal["mixed", "synthetic"] = "mixed" if how.method == "semantic" else "synthetic"
        return Outcome(
            method, f"{how.detail}; xtest typed {typed} characters", check=self.effect_of(check)
        )

    async def _as_keys(self, element: ElementRef, text: str, check: TextCheck | None) -> bool:
        """Whether the text must go in as a person types it rather than by ``InsertText``:
        Enter or Tab in a one-line field (a person's Enter submits or moves on; InsertText
        put a literal new line in Calc's Name Box, and called it confirmed), or a field with
        a selection (select_text chose what the text replaces; InsertText put the text
        beside the sentence a trial had selected to replace in Writer). A new line into a
        document's paragraph goes as Return too: a person's Enter makes a new paragraph, where
        InsertText put a line break inside this one."""
        if _CONTROL & set(text) and (
            "multi_line" not in element.states or element.role == "paragraph"
        ):
            return True
        if check is not None:
            return check.before.selection is not None
        if "Text" not in element.interfaces:
            return False
        acc = self.p.accessibility
        return acc is not None and await acc.selection(element) is not None

    async def insert_semantically(
        self, element: ElementRef, text: str, check: TextCheck | None
    ) -> Outcome | None:
        """``EditableText.InsertText`` where it works (and the field showed it); None when
        the keys have to go instead."""
        if not self._semantic_ok(element):
            return None
        done = await self.p.semantic(element, SemanticOp(OpKind.INSERT_TEXT, text=text))
        if done is None or not await self._landed(check, element):
            return None
        done.check = self.effect_of(check)
        return done

    async def replace(
        self, element: ElementRef, value: str, window: XWindow, rect: Rect
    ) -> Outcome | None:
        """The field's text made ``value``: SetTextContents where that works, else focus,
        select-all and keys. None when the element takes no typed text (the caller refuses)."""
        check = await self.check_for(element, "replace", value)
        if self._semantic_ok(element):
            # SetTextContents (a secure field's SET_VALUE refuses it: the keys go instead)
            op = OpKind.SET_VALUE if element.secure else OpKind.SET_TEXT
            done = await self.p.semantic(element, SemanticOp(op, text=value, value=value))
            if done is not None and await self._landed(check, element):
                done.check = self.effect_of(check)
                return done
        if "editable" not in element.states or "Text" not in element.interfaces:
            return None
        await self.p.focus_element(element, window, rect)
        # select-all before the field has the focus selects the page (Firefox moves the focus
        # a moment after GrabFocus answers): wait until it says it has it
        await self._until_focused(element)
        xinput = self.p.input()
        await asyncio.to_thread(xinput.press_chord, parse_chord("ctrl+a"))
        if value:
            await asyncio.to_thread(xinput.type_text, value)
        else:
            await asyncio.to_thread(xinput.press_chord, parse_chord("Delete"))
        return Outcome("synthetic", "select all, then xtest typing", check=self.effect_of(check))

    async def focus_for_typing(self, element: ElementRef, window: XWindow, rect: Rect) -> Outcome:
        """Keyboard focus on an element; a text field that takes the focus now gets its caret
        at the end of its text (where the app puts it on a focus grab differs: Chromium's
        address bar selects all with the caret at the start, Firefox's fields put it at the
        start, GTK's select all). A field that had the focus keeps its caret and selection
        (the agent may have placed them with select_text). So does one that did not have it
        but had a selection: select_text selects without focusing, and the text typed next
        is meant to replace it — a focus grab selects all (GTK) or moves the caret. An editable
        paragraph (Writer's) gets its caret at its own end (``Text.SetCaretOffset``: ctrl+End
        would go to the end of the document; LibreOffice puts the caret at the paragraph's
        start on a focus grab, and a trial's new line went before the paragraph's text)."""
        paragraph = element.role == "paragraph"
        field = (element.role in TEXT_FIELD_ROLES or paragraph) and "focused" not in element.states
        acc = self.p.accessibility
        chosen = await acc.selection(element) if field and acc is not None else None
        how, detail = await self.p.focus_element(element, window, rect)
        method: Literal["semantic", "synthetic"] = "semantic" if how == "semantic" else "synthetic"
        if not field:
            return Outcome(method, detail)
        # keys sent before the field has the focus go to the one that had it (Firefox moves
        # the focus a moment after GrabFocus answers): wait until it says it has it
        if not await self._until_focused(element):
            detail = f"{detail}; the field did not say it has the focus"
        if chosen is not None:
            start, stop, _text = chosen
            await self.p.semantic(element, SemanticOp(OpKind.SELECT_TEXT, start=start, end=stop))
            return Outcome(method, f"{detail}; its selection kept ({start}-{stop})")
        end = await self.p.character_count(element)
        if end is None or end == 0:
            return Outcome(method, detail)
        if paragraph:
            op = SemanticOp(OpKind.SET_CARET, start=end)
            done = await self.p.semantic(element, op, settle=False)
            if done is not None:
                return Outcome(method, f"{detail}; caret at the paragraph's end ({done.detail})")
            return Outcome(method, f"{detail}; the caret could not be put at its end")
        # the caret to the end by the key a person presses: keys are taken in the order they
        # are sent, so the text typed next lands after it (a semantic caret move raced
        # Firefox, which puts its caret at the start as the focus arrives)
        await asyncio.to_thread(self.p.input().press_chord, parse_chord("ctrl+End"))
        return Outcome(method, f"{detail}; caret at the end (ctrl+End)")

    async def _until_focused(self, element: ElementRef) -> bool:
        """Whether the field says it has the keyboard focus, read until it does (up to
        ``FOCUS_WAIT_S``); True when it cannot be read (nothing to say against it)."""
        acc = self.p.accessibility
        if acc is None:
            return True
        deadline = time.monotonic() + FOCUS_WAIT_S
        while True:
            now = await acc.field_text(element)
            if now is None or now.focused:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(POLL_S)

    def _semantic_ok(self, element: ElementRef) -> bool:
        """Whether EditableText is worth a try: the element has it, and its app was not
        caught answering it and changing nothing (Firefox, on its first field)."""
        return (
            "EditableText" in element.interfaces and element.bus_name not in self.ignores_editable
        )

    async def _landed(self, check: TextCheck | None, element: ElementRef) -> bool:
        """After a semantic write that answered true: did the field change? Read until it
        did, up to ``LANDED_WAIT_S``. A field that did not: the app is remembered as one
        whose EditableText changes nothing, and False (the keys go instead). Without a
        check (the field cannot be read) the call's answer is taken."""
        if check is None:
            return True
        deadline = time.monotonic() + LANDED_WAIT_S
        while True:
            verdict = await self._read(check)
            if not verdict.unchanged:
                return True
            if time.monotonic() >= deadline:
                self.ignores_editable.add(element.bus_name)
                return False
            await asyncio.sleep(POLL_S)
