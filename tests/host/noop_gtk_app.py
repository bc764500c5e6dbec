"""A GTK 3 window for the no-effect wait tests (run by the system python3, which has gi).

"Nothing" is a button without a handler: activating it changes nothing the app reports.
"Count" relabels a label, so its activation is an accessibility event after GTK's 250 ms
activation animation. "Spin" is a spin button whose value a semantic set_value changes.
"""

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

count = 0
window = Gtk.Window(title="No-op wait")
window.set_default_size(320, 200)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
label = Gtk.Label(label="Pressed 0")
nothing = Gtk.Button(label="Nothing")
counter = Gtk.Button(label="Count")


def on_count(_button: Gtk.Button) -> None:
    global count
    count += 1
    label.set_text(f"Pressed {count}")


counter.connect("clicked", on_count)
for widget in (label, nothing, counter):
    box.pack_start(widget, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
