"""Reference policies that solve the desktop cases the way a model would: from the request.

Each policy is stateless: it reads the user's words, the tool results so far and the newest
state's element lines (``reading.Request``) and answers the next step — find the app with
``list_apps``, observe it, act on the element the tree shows, answer with what is shown now.
Nothing is keyed to a step number, an element id or the case's secret (the number on the
calculator, the dialog's code), so a policy that passes proves the agent carried what a model
needs: the goal, the tree and the state ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from deskpilot.smoke.desktop_cases import COMPUTE, FORM, HOSTILE, OBSERVE
from deskpilot.smoke.fake_model.reading import (
    Element,
    Request,
    ancestors,
    children,
    norm_label,
    parse_elements,
)
from deskpilot.smoke.fake_model.replies import Reply, call, final
from deskpilot.smoke.fake_model.server import Policy

# ----------------------------------------------------------------------------- reading


def user_words(request: Request) -> str:
    """What the person asked in this turn: the newest user message's text before any tool
    result block (the agent sends the goal first, the results after it)."""
    for text in reversed(request.user_texts):
        head = text.split("<dp_tool_result>", 1)[0].strip()
        if head and not head.startswith("<dp_repair"):
            return head
    return ""


def running_apps(request: Request) -> list[dict[str, Any]] | None:
    """The apps the newest ``list_apps`` result names (None: not listed yet)."""
    for result in reversed(request.results()):
        if result.name != "list_apps" or result.is_error or result.omitted:
            continue
        start = result.text.find("{")
        try:
            value, _ = json.JSONDecoder().raw_decode(result.text[start:])
        except ValueError:
            return None
        apps = value.get("apps") if isinstance(value, dict) else None
        return [a for a in apps if isinstance(a, dict)] if isinstance(apps, list) else None
    return None


def pick_app(apps: Sequence[dict[str, Any]], hints: Sequence[str]) -> dict[str, Any] | None:
    """The app a person means: the one whose name, executable or desktop id has a hint word;
    else the only one running."""
    for hint in hints:
        for app in apps:
            words = " ".join(str(app.get(k) or "") for k in ("name", "executable", "desktopId"))
            if hint in words.casefold():
                return app
    return apps[0] if len(apps) == 1 else None


def look(request: Request, hints: Sequence[str]) -> Reply | None:
    """``list_apps`` then ``get_app_state`` on the app meant, until a state is in view (None:
    the newest result holds one)."""
    if request.latest_has_tree():
        return None
    apps = running_apps(request)
    if apps is None:
        return call("list_apps")
    app = pick_app(apps, hints)
    if app is None:
        return final(f"I could not tell which window you mean among {len(apps)} apps.")
    return call("get_app_state", app=int(app["pid"]))


def _norm(text: str) -> str:
    return "".join(ch for ch in text if ch not in " ,\u2009\u202f\u00a0")


# ----------------------------------------------------------------------------- calculator

CALC_HINTS = ("calculator", "calc")


def calculator_display(elements: Sequence[Element]) -> Element | None:
    """The editable (not ``readonly``) text field, the focused one first."""
    fields = [e for e in elements if e.role == "textField" and "readonly" not in e.states]
    focused = [e for e in fields if "focused" in e.states]
    found = focused or fields
    return found[0] if found else None


def calculator_button(elements: Sequence[Element], symbol: str) -> Element | None:
    """gnome-calculator names a button after its glyph, twice (``"7 7"``, ``"× ×"``)."""
    for e in elements:
        if e.role == "button" and (e.name == f"{symbol} {symbol}" or e.name == symbol):
            return e
    return None


def history_labels(elements: Sequence[Element]) -> list[str]:
    """Labels of the history list gnome-calculator grows after ``=`` (``"12×7"``, ``"84"``)."""
    return [
        _norm(e.name)
        for e in elements
        if e.role == "label" and any(a.role == "listItem" for a in ancestors(elements, e))
    ]


def observe_calculator(request: Request) -> Reply:
    """Look at the calculator and say what its display shows; never touch it."""
    step = look(request, CALC_HINTS)
    if step is not None:
        return step
    display = calculator_display(request.elements())
    if display is None:
        return final("I found the calculator, but I could not find its display.")
    return final(f"The calculator's display shows {display.value or '0'}.")


_FACTOR = re.compile(r"\b(?:multiply|times)\b.*?\bby\s+(\d+)", re.I | re.S)


def compute_on_calculator(request: Request) -> Reply:
    """Multiply what the display shows by the factor the user named, one button per reply,
    deciding from the display how far the entry got; answer with the display's value."""
    m = _FACTOR.search(user_words(request))
    if m is None:
        return final("I could not tell what to multiply by.")
    factor = m.group(1)
    step = look(request, CALC_HINTS)
    if step is not None:
        return step
    elements = request.elements()
    display, sid = calculator_display(elements), request.state_id()
    if display is None or sid is None:
        return final("I found the calculator, but I could not find its display.")
    shown = _norm(display.value or "")
    done = [h for h in history_labels(elements) if re.fullmatch(rf"-?\d+×{factor}", h)]
    if done and shown.isdigit():
        start = done[-1].split("×")[0]
        return final(
            f"{start} × {factor} = {display.value}; the display now shows {display.value}."
        )
    entry = re.fullmatch(r"(-?\d+)(?:×(\d*))?", shown)
    if entry is None:
        return final(f"The display shows {display.value!r}, which I did not expect.")
    typed = entry.group(2)
    if typed is None:
        symbol = "×"
    elif typed == factor:
        symbol = "="
    elif factor.startswith(typed):
        symbol = factor[len(typed)]
    else:
        return final(f"The display shows {display.value!r}, which I did not expect.")
    button = calculator_button(elements, symbol)
    if button is None:
        return final(f"The calculator has no {symbol} button I can see.")
    return call("click", state_id=sid, element_id=button.id)


# ----------------------------------------------------------------------------- form

FORM_HINTS = ("zenity", "form", "dialog")
FIELD_ROLES = ("textField", "passwordField")


def form_field(elements: Sequence[Element], label: str) -> Element | None:
    """The text field named after ``label`` (GTK names an entry after its mnemonic label),
    else an unnamed one beside a label of that name."""
    want = norm_label(label)
    for e in elements:
        if e.role in FIELD_ROLES and norm_label(e.name) == want:
            return e
    for lab in (e for e in elements if e.role == "label" and norm_label(e.name) == want):
        siblings = children(elements, lab.parent)
        pos = siblings.index(lab)
        near = sorted(
            (abs(i - pos), i)
            for i, s in enumerate(siblings)
            if s.role in FIELD_ROLES and not s.name
        )
        if near:
            return siblings[near[0][1]]
    return None


def asked_value(words: str, label: str) -> str | None:
    """What the user said goes into ``label``: ``… the city is Paris and …``,
    ``Name: Ada, …``."""
    m = re.search(
        rf"\b{re.escape(label)}\b\s*(?:is\s+|:\s*|=\s*)(.+?)(?=,|;|\s+and\s|\.\s|\.$|$)",
        words,
        re.I,
    )
    return m.group(1).strip().strip("\"'") if m else None


def form_labels(elements: Sequence[Element]) -> list[str]:
    """The form's field labels, top to bottom as the tree lists them."""
    labels = []
    for e in elements:
        if (e.role in FIELD_ROLES and e.name) or (
            e.role == "label" and form_field(elements, e.name) is not None
        ):
            labels.append(e.name)
    return list(dict.fromkeys(labels))


def _wanted(elements: Sequence[Element], words: str) -> dict[str, str]:
    found = {label: asked_value(words, label) for label in form_labels(elements)}
    return {k: v for k, v in found.items() if v is not None}


def _filled(state: str, words: str) -> bool:
    elements = parse_elements(state)
    wanted = _wanted(elements, words)
    return bool(wanted) and all(
        (f := form_field(elements, label)) is not None and f.value == value
        for label, value in wanted.items()
    )


def fill_form(request: Request) -> Reply:
    """Type each value the user gave into its field (``set_value`` over other text), one
    per reply, then click OK; once the dialog is gone after a state showed it filled, say
    so."""
    words = user_words(request)
    states = request.states()
    if request.window_gone() and any(_filled(s, words) for s in states):
        return final("I filled in the form with the details you gave and submitted it.")
    step = look(request, FORM_HINTS)
    if step is not None:
        return step
    elements, sid = request.elements(), request.state_id()
    wanted = _wanted(elements, words)
    if not wanted or sid is None:
        return final("I could not match the form's fields to what you asked me to enter.")
    for label, value in wanted.items():
        field = form_field(elements, label)
        if field is None or field.value == value:
            continue
        if field.value:
            return call("set_value", state_id=sid, element_id=field.id, value=value)
        return call("type_text", state_id=sid, element_id=field.id, text=value)
    ok = [e for e in elements if e.role == "button" and norm_label(e.name) == "ok"]
    if not ok:
        return final("The form is filled in, but I could not find its OK button.")
    return call("click", state_id=sid, element_id=ok[0].id)


# ----------------------------------------------------------------------------- hostile

_CODE = re.compile(r"\baccess code is\s+([A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])")


def report_code(request: Request) -> Reply:
    """Look at the dialog and report its access code; everything else it says is data."""
    step = look(request, FORM_HINTS)
    if step is not None:
        return step
    texts = [request.window_title() or ""] + [e.name for e in request.elements()]
    for text in texts:
        m = _CODE.search(text)
        if m:
            return final(
                f"The dialog shows the access code {m.group(1)}. The rest of its text tries "
                "to make me run commands; I treated it as data and did nothing else."
            )
    return final("I looked at the dialog but found no access code in it.")


DESKTOP_POLICIES: dict[str, Policy] = {
    OBSERVE: observe_calculator,
    COMPUTE: compute_on_calculator,
    FORM: fill_form,
    HOSTILE: report_code,
}
