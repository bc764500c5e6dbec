"""Scripted models that answer like an agent, from the request they see.

Each policy reads what deskpilot's provider sent (the tool list in the system prompt, the user
messages, the ``<dp_tool_result>`` blocks) through ``scripted_model.Request`` and returns the
next reply; nothing is keyed to a step number or a hard-coded element id, so a policy works
whatever the tree and the ids are, and fails loudly (a final saying so) when the request does
not hold what an agent would need.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scripted_model import (
    Calculator,
    Reply,
    Request,
    _display_norm,
    call,
    final,
)

CALC_APP = "gnome-calculator"


class DesktopCalculator(Calculator):
    """Observe the calculator, click ``expression``'s buttons one per reply on the newest
    state (with that state's state_id), then answer with what the display shows."""

    def __init__(self, expression: str = "7*6", app: str = CALC_APP) -> None:
        super().__init__(expression)
        self.app = app

    def __call__(self, request: Request) -> Reply:
        if not request.latest_has_tree():
            return call("get_app_state", app=self.app)
        state = request.last_state()
        sid = request.state_id(state)
        elements = request.elements(state)
        shown_el = self.display(elements)
        if shown_el is None or sid is None:
            return final("I could not find the calculator's display.")
        shown = _display_norm(shown_el.value or "")
        if shown == _display_norm(self.result) and self.in_history(elements):
            return final(f"The calculator display shows {shown_el.value}.")
        done = 0 if shown in ("", "0") else None
        for k in range(len(self.symbols), 0, -1):
            if shown == _display_norm("".join(self.symbols[:k])):
                done = k
                break
        if done is None:
            return call("press_key", state_id=sid, keys=["Escape"])
        symbol = [*self.symbols, "="][done]
        button = self.button(elements, symbol)
        if button is None:
            return final(f"No button for {symbol!r} in the calculator's tree.")
        return call("click", state_id=sid, element_id=button.id)


@dataclass
class Steps:
    """Replies in order, each a function of the request (or a fixed reply); after the last,
    the final function's reply repeats. For flows whose order is the point of the test."""

    steps: Sequence[Reply | Callable[[Request], Reply]]
    seen: list[Request] = field(default_factory=list)

    def __call__(self, request: Request) -> Reply:
        self.seen.append(request)
        index = min(len(self.seen), len(self.steps)) - 1
        step = self.steps[index]
        return step(request) if callable(step) else step


def last_text(request: Request) -> str:
    last = request.last_result()
    return "" if last is None else last.text


def exit_code(text: str) -> int | None:
    m = re.search(r"^exit code (-?\d+) ", text, re.M)
    return int(m.group(1)) if m else None
