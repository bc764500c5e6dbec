"""The host's pure rules behind honest outcomes (no desktop needed): which window the keys go
to (x11/windows.py ``keys_go_to``), and when a value read back is the value set
(effect_checks.py)."""

from __future__ import annotations

from deskpilot.host.effect_checks import holds
from deskpilot.host.x11.windows import XWindow, keys_go_to
from deskpilot.protocol.wire import Rect


def _win(xid: int, *, of: int | None = None, modal: bool = False, visible: bool = True) -> XWindow:
    return XWindow(
        xid=xid,
        title=f"w{xid}",
        bounds=Rect(x=0, y=0, width=100, height=100),
        visible=visible,
        minimized=False,
        transient_for=of,
        modal=modal,
    )


def test_the_keys_go_to_the_modal_dialog_of_the_focused_window() -> None:
    main, finder = _win(1), _win(2, of=1)
    dialog, nested = _win(3, of=1, modal=True), _win(4, of=3, modal=True)
    assert keys_go_to(1, [main]) == 1
    assert keys_go_to(1, [finder, main]) == 1  # a non-modal dialog takes no keys of it
    assert keys_go_to(1, [dialog, finder, main]) == 3
    assert keys_go_to(1, [nested, dialog, main]) == 4  # and the dialog's own modal one
    assert keys_go_to(2, [dialog, finder, main]) == 2  # the dialog of another window
    assert keys_go_to(1, [_win(3, of=1, modal=True, visible=False), main]) == 1
    assert keys_go_to(None, [dialog, main]) is None
    looped = [_win(5, of=6, modal=True), _win(6, of=5, modal=True)]
    assert keys_go_to(5, looped) in (5, 6)  # a WM_TRANSIENT_FOR loop ends


def test_a_value_read_back_is_the_value_set_only_when_it_is_exactly_there() -> None:
    assert holds("xyz", "xyz", secret=False)
    assert not holds("abxyz", "xyz", secret=False)  # added to the old text
    assert not holds("abcde", "abcdefgh", secret=False)  # cut at the field's maximum
    assert not holds("007", "7", secret=False)  # text is compared as text
    assert holds("3", 3.0, secret=False)  # a number given for a field shows as "3"
    assert holds(5.0, "5", secret=False) and holds(2.5, 2.5, secret=False)  # a Value
    assert not holds(4.0, "3.5", secret=False)  # rounded by the app
    assert not holds(5.0, "five", secret=False)
    assert holds("••••", "pass", secret=True) and not holds("••••••", "pass", secret=True)
