"""Checking an action's effect where the host can read it back (``ActionResult.effect``).

An agent is never told an effect it was not shown. Where the host can read what an action was
meant to leave behind, it does so in one place: the performer leaves a check on its outcome
(``Outcome.check``), and once the UI settled — after any late effect was waited for
(host/post_action.py) — the dispatcher runs it and puts what it saw in the result:
``confirmed``, or ``unconfirmed`` with a note in words for the agent. The note never holds
the text or value read back: it may be a secret, and the agent has the new state to read.

* ``set_value``: the element's value is read back and compared with the value asked for —
  the number of an element with one (a spin button, a slider) as a number, anyone else's text
  exactly. A field that kept its old text or added the value to it, an entry that cut the
  value at its maximum length, an app that refused or rounded it: ``unconfirmed``. A secret
  field's text comes back masked: its length is what is compared.
"""

from __future__ import annotations

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.model import ElementRef
from deskpilot.host.outcome import Effect, EffectCheck
from deskpilot.host.text_checks import NOT_REPLACED

NOT_READ = "its value could not be read back afterwards"


def value_check(acc: Accessibility, element: ElementRef, wanted: str | float) -> EffectCheck:
    """A check that ``element`` now holds ``wanted`` (a set_value's value)."""

    async def check() -> Effect:
        now = await acc.value_now(element)
        if now is None:
            return Effect("unconfirmed", NOT_READ)
        if holds(now, wanted, secret=element.secure):
            return Effect("confirmed")
        return Effect("unconfirmed", NOT_REPLACED)

    return check


def holds(now: str | float, wanted: str | float, *, secret: bool) -> bool:
    """Is ``now`` (a value read back: a number from a Value interface, else text) the value
    ``wanted`` that was set? Numbers as numbers, text exactly ("007" is not "7"), a secret
    field's masked text by its length."""
    if isinstance(now, float):
        b = _number(wanted)
        return b is not None and abs(now - b) <= 1e-9 * max(1.0, abs(b))
    if secret:
        return len(now) == len(_text(wanted))
    return now == _text(wanted)


def _text(value: str | float) -> str:
    """A value as the text a field shows for it: 3.0 is "3"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: str | float) -> float | None:
    if isinstance(value, float | int):
        return float(value)
    try:
        return float(value.strip())
    except ValueError:
        return None
