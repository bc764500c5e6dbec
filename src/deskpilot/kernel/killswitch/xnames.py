"""The X names the kill switch uses, spelled as plain strings.

They are kept apart from the modules that talk to the X server so that the settings store, the
chord tests and every process on the display agree on one spelling without importing
python-xlib. The selection and the root property are how several deskpilot processes on one
display share a single switch (docs/kernel.md, "Several deskpilot processes on one display").
"""

from __future__ import annotations

from deskpilot.protocol.chords import keysym_name

#: canonical modifier (see ``protocol.chords.KILL_SWITCH_MODIFIERS``) → its Xlib mask name
MODIFIER_MASKS = {
    "ctrl": "ControlMask",
    "shift": "ShiftMask",
    "alt": "Mod1Mask",
    "super": "Mod4Mask",
}

#: the root window property every press is broadcast as (pid, token, sequence number)
KILL_PROPERTY = "_DESKPILOT_KILL"
#: ``<prefix>_<keycode>_<mods>``: the selection the process holding the grab owns
SELECTION_PREFIX = "_DESKPILOT_KILL_SWITCH"


def _keysym_name(key: str) -> str:
    """Our chord key spelling → an X keysym name (the table is shared with the settings store)."""
    return keysym_name(key)
