"""A GTK 3 window whose effects come late, for the late-effect, dialog and set_value tests (run
by the system python3, which has gi).

* "Open later" (a button) and ctrl+d (a key) open a modal dialog "Later" ``LATE_MS`` after
  they were pressed: the handler itself changes nothing, a GLib timeout shows the dialog —
  later than GTK 3's short bound after a click and than the 600 ms first-event rule after a
  key (host/settle.py). The dialog (transient for the window, shown without being presented:
  nothing moves the X focus to it) has an entry and a "Close" button; Escape closes it too.
* "Nothing" is a button without a handler: a click on it changes nothing, now or later.
* "Short" is an entry of at most 5 characters: a longer value cannot replace its text.
* "Address" is an entry whose Enter replaces its text with ``https://TEXT/`` (an address
  bar's way).
* Every change of an entry's text is printed on stdout (``changed NAME TEXT``), and, once the
  window is shown, where the "Short" entry is in it (``short X Y W H``, window pixels): a test
  of a window without a tree reads the app's side from there.

``--no-a11y``: no accessibility bridge, so the window has no tree (what a GTK 3 app shows when
its bridge is missing).
"""

import os
import sys

if "--no-a11y" in sys.argv:
    os.environ["NO_AT_BRIDGE"] = "1"

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

LATE_MS = 700

window = Gtk.Window(title="Late effects")
window.set_default_size(360, 220)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
short = Gtk.Entry()
short.set_max_length(5)
short.set_text("ab")
short.get_accessible().set_name("Short")
later = Gtk.Button(label="Open later")
nothing = Gtk.Button(label="Nothing")
address = Gtk.Entry()
address.get_accessible().set_name("Address")
# Enter makes the text an address, as a browser's address bar does: what the field shows
# after the Enter is the app's, not what was typed
address.connect("activate", lambda e: e.set_text(f"https://{e.get_text()}/"))
for widget in (short, later, nothing, address):
    box.pack_start(widget, False, False, 0)
window.add(box)


def said(name: str, entry: Gtk.Entry) -> None:
    print(f"changed {name} {entry.get_text()}", flush=True)


short.connect("changed", lambda e: said("Short", e))
address.connect("changed", lambda e: said("Address", e))


def show_dialog() -> bool:
    dialog = Gtk.Dialog(title="Later", transient_for=window, modal=True)
    field = Gtk.Entry()
    field.get_accessible().set_name("Note")
    field.connect("changed", lambda e: said("Note", e))
    dialog.get_content_area().pack_start(field, False, False, 0)
    dialog.add_button("Close", Gtk.ResponseType.CLOSE)
    dialog.connect("response", lambda d, _r: d.destroy())
    dialog.show_all()
    return False  # once


def open_later(*_args: object) -> bool:
    GLib.timeout_add(LATE_MS, show_dialog)
    return True


later.connect("clicked", open_later)
keys = Gtk.AccelGroup()
keys.connect(Gdk.keyval_from_name("d"), Gdk.ModifierType.CONTROL_MASK, 0, open_later)
window.add_accel_group(keys)


def placed(*_args: object) -> None:
    x, y = short.translate_coordinates(window, 0, 0)
    alloc = short.get_allocation()
    print(f"short {x} {y} {alloc.width} {alloc.height}", flush=True)


window.connect("map-event", placed)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
