"""A GTK 3 window with a context menu (run by the system python3, which has gi).

A right click on the "Notes" area pops up a menu (a window of its own, override-redirect, an
application child beside the window's frame) with "Shout" and "Whisper", which set the label
below, a disabled "Nothing here", and a "More" submenu with "Echo". The menu is placed so that
it hangs past the window's bottom edge, as a context menu near an edge does.

SIGUSR1 pops the menu down (the app closing its own menu, as one does when its document
changes); ``context_menu_gtk_app.py autoclose`` pops it down 0.8 s after it opened.
``context_menu_gtk_app.py two`` adds a second window, "Other window", at x=250,
over the right part of the first: a menu opened over the first window lies over it too.
"""

import signal
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

window = Gtk.Window(title="Context menus")
window.set_default_size(360, 160)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
area = Gtk.EventBox()
area.add(Gtk.Label(label="Notes"))
area.set_size_request(340, 100)
said = Gtk.Label(label="Said: nothing")

menu = Gtk.Menu()


def item(label: str, parent: Gtk.Menu, said_text: str | None) -> Gtk.MenuItem:
    entry = Gtk.MenuItem(label=label)
    if said_text is None:
        entry.set_sensitive(False)
    else:
        entry.connect("activate", lambda _i: said.set_text(f"Said: {said_text}"))
    parent.append(entry)
    return entry


item("Shout", menu, "shout")
item("Whisper", menu, "whisper")
item("Nothing here", menu, None)
more = Gtk.MenuItem(label="More")
submenu = Gtk.Menu()
item("Echo", submenu, "echo")
more.set_submenu(submenu)
menu.append(more)
menu.show_all()
menu.attach_to_widget(area, None)


def on_press(_widget: Gtk.Widget, event: Gdk.EventButton) -> bool:
    if event.button == 3:
        menu.popup_at_pointer(event)
        if sys.argv[1:] == ["autoclose"]:
            GLib.timeout_add(800, lambda: menu.popdown() or False)
        return True
    return False


area.connect("button-press-event", on_press)
box.pack_start(area, False, False, 0)
box.pack_start(said, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
if sys.argv[1:] == ["two"]:
    other = Gtk.Window(title="Other window")
    other.set_default_size(300, 200)
    other.add(Gtk.Label(label="Second pane"))
    other.move(250, 0)
    other.show_all()
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, lambda: menu.popdown() or True)
Gtk.main()
