"""What an element's states say a person can do with it, where more than one action asks."""

from __future__ import annotations

from deskpilot.host.atspi.model import ElementRef

#: rendered roles of fields that take typed text (the tree's vocabulary)
TEXT_FIELD_ROLES = frozenset({"textField", "passwordField"})


def read_only(element: ElementRef) -> bool:
    """A text field shown ``[readonly]`` (read only, or not editable: render.py's rule), or any
    element in the READ_ONLY state. ``set_value`` refuses it; a click on it is a click, not
    the keyboard focus a field to type into gets."""
    states = element.states
    if "read_only" in states:
        return True
    return element.role in TEXT_FIELD_ROLES and "editable" not in states
