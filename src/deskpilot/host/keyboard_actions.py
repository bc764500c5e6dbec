"""The performers of the kinds whose fallback is the keyboard: type_text, paste_text,
set_value, select_text and press_key, and focus_window (the window keys go to).

Semantic first where the element can do it (docs/host.md, "Actions": the dispatch table),
else keyboard focus on the element (or the window) and XTEST key events. Text into a field
goes through :mod:`deskpilot.host.text_entry`, which also reads it back; a set_value on a
combo box chooses one of its options (:mod:`deskpilot.host.combo_boxes`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from functools import partial

from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.atspi.sheet_reads import sheet_cell
from deskpilot.host.combo_boxes import ComboBoxes
from deskpilot.host.element_states import TEXT_FIELD_ROLES, read_only
from deskpilot.host.outcome import Outcome
from deskpilot.host.primitives import Primitives, test_hang_target
from deskpilot.host.sheet_cells import typed_effect, typing_target
from deskpilot.host.text_entry import TextEntry, takes_field_text
from deskpilot.host.x11.keymap import parse_chord
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    PasteTextAction,
    PressKeyAction,
    Rect,
    SelectedText,
    SelectTextAction,
    SetValueAction,
    TypeTextAction,
)

PASTE_IDLE_S = 0.25
PASTE_FETCH_TIMEOUT_S = 2.0
MAX_SELECT_KEYS = 5000


class KeyboardActions:
    def __init__(self, primitives: Primitives, entry: TextEntry) -> None:
        self._p = primitives
        self._entry = entry
        self._combos = ComboBoxes(
            primitives.semantic,
            primitives.action_names,
            primitives.combo_parts,
            primitives.combo_of_option,
            primitives.pointer_click,
            primitives.popup_rects,
            primitives.click_inside,
        )

    async def type_text(
        self,
        action: TypeTextAction,
        window: XWindow,
        rect: Rect,
        element: ElementRef | None,
        focused: ElementRef | None = None,
        elements: Mapping[int, ElementRef] | None = None,
    ) -> Outcome:
        """Into ``element`` (host/text_entry.py), else where the keyboard focus is: the
        ``focused`` element of the last look, if it is a field, is read back. Typing into a
        sheet's cell (``element``, else the current cell among ``elements``) is read back as
        a cell (host/sheet_cells.py)."""
        done = await self._type_text(action, window, rect, element, focused)
        cell = typing_target(element, elements or {})
        if cell is not None and self._p.accessibility is not None:
            done.check = partial(typed_effect, self._p.accessibility, cell, action.text)
        return done

    async def _type_text(
        self,
        action: TypeTextAction,
        window: XWindow,
        rect: Rect,
        element: ElementRef | None,
        focused: ElementRef | None,
    ) -> Outcome:
        """Into ``element`` (host/text_entry.py), else where the keyboard focus is: the
        ``focused`` element of the last look, if it is a field, is read back."""
        if element is not None:
            return await self._entry.type_into(element, action.text, window, rect)
        await self._p.ensure_focus(window)
        check = None
        if focused is not None:
            check = await self._entry.check_for(focused, "insert", action.text)
        typed = await asyncio.to_thread(self._p.input().type_text, action.text)
        return Outcome(
            "synthetic", f"xtest typed {typed} characters", check=self._entry.effect_of(check)
        )

    async def paste(
        self, action: PasteTextAction, window: XWindow, rect: Rect, element: ElementRef | None
    ) -> Outcome:
        """EditableText insert when the element has it (and it works), else CLIPBOARD +
        ctrl+v; the field is read back either way (host/text_entry.py)."""
        check = None
        if element is not None:
            check = await self._entry.check_for(element, "insert", action.text)
            done = await self._entry.insert_semantically(element, action.text, check)
            if done is not None:
                return done
            await self._entry.focus_for_typing(element, window, rect)
        else:
            await self._p.ensure_focus(window)
        clipboard = await asyncio.to_thread(self._p.desktop.clipboard)
        if not await asyncio.to_thread(clipboard.offer, action.text):
            raise DeskpilotError(ErrorCode.ACTION_FAILED, "could not take the clipboard")
        # the selection is given up once the action settled (or failed): ActionDispatcher._act
        self._p.after_settle.append(clipboard.withdraw)
        await asyncio.to_thread(self._p.input().press_chord, parse_chord("ctrl+v"))
        served = await asyncio.to_thread(clipboard.wait_served, PASTE_FETCH_TIMEOUT_S)
        if served:  # keep the selection while the app still asks for it (see wait_idle)
            await asyncio.to_thread(clipboard.wait_idle, PASTE_IDLE_S, PASTE_FETCH_TIMEOUT_S)
        detail = "clipboard + ctrl+v" if served else "clipboard + ctrl+v (the app did not fetch)"
        return Outcome("synthetic", detail, dispatched=True, check=self._entry.effect_of(check))

    async def set_value(
        self, action: SetValueAction, window: XWindow, rect: Rect, element: ElementRef
    ) -> Outcome:
        if read_only(element):
            # Qt's EditableText overwrites a read-only field: a person could not
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element is read only: its value cannot be set",
                details={"elementId": element.id, "reason": "read_only"},
            )
        if sheet_cell(element) and self._p.accessibility is not None:
            # a sheet's cell is set as a person sets it: made the current cell, the value
            # typed over what it held and entered with Enter, then read back
            entry = _as_text(action.value) + "\n"
            await self._p.focus_element(element, window, rect)
            await asyncio.to_thread(self._p.input().type_text, entry)
            typed = Outcome("synthetic", "made the current cell, then xtest typed and Enter")
            typed.check = partial(typed_effect, self._p.accessibility, element, entry)
            return typed
        # a combo box takes the name of one of its options (refused before dispatch if none)
        done = await self._combos.set_value(
            element, _as_text(action.value), rect, lambda: self._p.bring_to_front(window)
        )
        if done is not None:
            return done
        if element.role not in TEXT_FIELD_ROLES and not takes_field_text(element):
            # a number (slider, spin button), or text into something else that has it (an
            # editable combo box is a field: Firefox's address bar ignores a semantic value,
            # and the field's rules fall back to the keys a person types)
            done = await self._p.semantic(element, SemanticOp(OpKind.SET_VALUE, value=action.value))
            if done is not None:
                done.check = self._p.value_check(element, action.value)
                return done
        # text: replaced semantically where that works, else select-all and keys; a field is
        # read back by text_entry's rules, anything else by its value (host/effect_checks.py)
        done = await self._entry.replace(element, _as_text(action.value), window, rect)
        if done is None:
            # select-all and typing into a button, checkbox, calendar or slider would send
            # shortcuts to whatever it is, and "succeed" without setting anything
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element takes no value: set_value works on editable text fields and on "
                "elements with a value (sliders, spin buttons); click, select or type instead",
                details={"elementId": element.id, "reason": "no_value_interface"},
            )
        if done.check is None:
            done.check = self._p.value_check(element, action.value)
        return done

    async def select_text(
        self, action: SelectTextAction, window: XWindow, rect: Rect, element: ElementRef
    ) -> Outcome:
        if action.end < action.start:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, "select_text needs start <= end")
        done = await self._p.semantic(
            element, SemanticOp(OpKind.SELECT_TEXT, start=action.start, end=action.end)
        )
        if done is not None:
            return done
        start, end = action.start, action.end
        length = await self._p.character_count(element)
        if length is not None:  # keys past the end select nothing more, they only take time
            start, end = min(start, length), min(end, length)
        if end > MAX_SELECT_KEYS:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element has no text selection interface and the range is too long to "
                "select with keys",
                details={"elementId": element.id, "reason": "range_too_long"},
            )
        await self._p.focus_element(element, window, rect)
        xinput = self._p.input()

        def keys() -> None:
            xinput.press_chord(parse_chord("ctrl+Home"))
            right, shift_right = parse_chord("Right"), parse_chord("shift+Right")
            for _ in range(start):
                xinput.check()
                xinput.press_chord(right)
            for _ in range(end - start):
                xinput.check()
                xinput.press_chord(shift_right)

        await asyncio.to_thread(keys)
        return Outcome("synthetic", "xtest caret keys")

    async def selected(self, element: ElementRef) -> SelectedText | None:
        """What the element has selected now, read back once the action settled (the app
        may have chosen otherwise: a range past the end of the text ends there)."""
        got = await self._p.selection(element)
        return None if got is None else SelectedText(start=got[0], end=got[1], text=got[2])

    async def press(
        self, action: PressKeyAction, window: XWindow, session_id: str | None
    ) -> Outcome:
        chords = [parse_chord(k) for k in action.keys]  # all names valid before any press
        xinput = self._p.input()
        focus_detail = await self._p.ensure_focus(window)
        for chord in chords:
            self._p.check_canceled(session_id)
            pressed = await asyncio.to_thread(xinput.chord_down, chord)
            try:
                if test_hang_target() == "press_key":
                    # the test switch hangs here, with the keys down (docs/host.md)
                    await self._p.hang_if_asked("press_key", session_id)
                hold = (action.duration_ms or 0) / 1000 / max(len(chords), 1)
                await asyncio.sleep(max(hold, 0.01))
            finally:
                await asyncio.to_thread(xinput.keys_up, pressed)
            if len(chords) > 1:
                await asyncio.sleep(0.02)
        detail = f"xtest {len(chords)} chord(s)"
        if focus_detail:
            detail += f" after {focus_detail}"
        return Outcome("synthetic", detail)

    async def focus_window(self, window: XWindow) -> Outcome:
        how = await asyncio.to_thread(self._p.desktop.focus, window)
        return Outcome("semantic", how)


def _as_text(value: str | float) -> str:
    """A set_value value as an option's text: 3.0 is "3"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
