"""A GTK 3 window with a tree view whose first column is an icon and a text in one cell, the
way file managers show names (Thunar's details view, its side pane): for the host tests of
big and virtual containers (tests/host/test_virtual_containers.py). Runs under the system
python3 (Debian's gi). Argument: how many rows."""

import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 5
store = Gtk.ListStore(str, str, str)
for k in range(rows):
    store.append(["text-x-generic", f"file{k}.txt", f"{k} bytes"])
view = Gtk.TreeView(model=store)
name = Gtk.TreeViewColumn("Name")
icon = Gtk.CellRendererPixbuf()
text = Gtk.CellRendererText()
name.pack_start(icon, False)
name.pack_start(text, True)
name.add_attribute(icon, "icon-name", 0)
name.add_attribute(text, "text", 1)
view.append_column(name)
view.append_column(Gtk.TreeViewColumn("Size", Gtk.CellRendererText(), text=2))
scroll = Gtk.ScrolledWindow()
scroll.add(view)
win = Gtk.Window(title="Icon list")
win.set_default_size(360, 300)
win.add(scroll)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
