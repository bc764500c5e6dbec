"""A GTK 3 window whose elements move down the outline, for the stable element id tests.

"Show message" inserts a label at the top of the window (every line after it moves down by
one), "Hide message" removes the newest one again, and "Save" sets the status label to
"Saved N". Run by the system python3 (which has gi).
"""

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

saves = 0
shown: list[Gtk.Label] = []
window = Gtk.Window(title="Stable ids")
window.set_default_size(360, 300)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
messages = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=2)
show = Gtk.Button(label="Show message")
hide = Gtk.Button(label="Hide message")
save = Gtk.Button(label="Save")
status = Gtk.Label(label="Not saved")


def on_show(_button: Gtk.Button) -> None:
    label = Gtk.Label(label=f"Message {len(shown) + 1}")
    messages.pack_start(label, False, False, 0)
    messages.reorder_child(label, 0)
    label.show()
    shown.append(label)


def on_hide(_button: Gtk.Button) -> None:
    if shown:
        messages.remove(shown.pop())


def on_save(_button: Gtk.Button) -> None:
    global saves
    saves += 1
    status.set_text(f"Saved {saves}")


show.connect("clicked", on_show)
hide.connect("clicked", on_hide)
save.connect("clicked", on_save)
for widget in (messages, show, hide, save, status):
    box.pack_start(widget, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
