"""A GTK 3 window that mutates itself on command, for the tree cache's randomized test.

Run by the system python3 (which has gi): ``python3 mutating_gtk_app.py SEED``. Every line
``step N`` on stdin makes N seeded random changes — relabel a label or a button, hide or show
a widget, toggle a check button, set an entry's text, add, remove or move a widget between
the two boxes — and then prints ``ok K`` (K: steps done) once GTK has processed them.
``label TEXT`` sets the text of the fixed label at the top (and answers the same way);
``add TEXT`` packs a new label with that text at the top of the first box (GTK 3 announces
that with no event at all).
"""

import random
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
counter = 0
steps = 0

window = Gtk.Window(title="Mutating GTK")
window.set_default_size(480, 600)
top = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
fixed = Gtk.Label(label="Fixed label")
top.pack_start(fixed, False, False, 0)
outer = Gtk.Box(orientation=Gtk.Orientation.HORIZONTAL, spacing=8)
top.pack_start(outer, True, True, 0)
boxes = [Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=2) for _ in range(2)]
for b in boxes:
    outer.pack_start(b, True, True, 0)
window.add(top)
pool: list[Gtk.Widget] = []


def word() -> str:
    global counter
    counter += 1
    return f"{rng.choice(WORDS)} {counter}"


def new_widget() -> Gtk.Widget:
    kind = rng.randrange(4)
    w: Gtk.Widget
    if kind == 0:
        w = Gtk.Label(label=word())
    elif kind == 1:
        w = Gtk.Button(label=word())
    elif kind == 2:
        w = Gtk.CheckButton(label=word())
    else:
        w = Gtk.Entry()
        w.set_text(word())
    return w


def add() -> None:
    w = new_widget()
    rng.choice(boxes).pack_start(w, False, False, 0)
    w.show()
    pool.append(w)


def mutate() -> None:
    op = rng.randrange(8)
    if op == 0 or len(pool) < 4:
        if len(pool) < 24:
            add()
        return
    w = rng.choice(pool)
    if op == 1:
        pool.remove(w)
        w.get_parent().remove(w)
        w.destroy()
    elif op == 2:
        w.set_visible(not w.get_visible())
    elif op == 3:  # move to the other box
        parent = w.get_parent()
        other = boxes[1] if parent is boxes[0] else boxes[0]
        parent.remove(w)
        other.pack_start(w, False, False, 0)
    elif isinstance(w, Gtk.CheckButton):
        w.set_active(not w.get_active())
    elif isinstance(w, Gtk.Label):
        w.set_text(word())
    elif isinstance(w, Gtk.Button):
        w.set_label(word())
    elif isinstance(w, Gtk.Entry):
        w.set_text(word())


def on_line(channel: GLib.IOChannel, _cond: GLib.IOCondition) -> bool:
    global steps
    line = channel.readline()
    if not line:
        Gtk.main_quit()
        return False
    parts = line.split()
    if parts and parts[0] in ("step", "label", "add"):
        if parts[0] == "label":
            fixed.set_text(" ".join(parts[1:]))
        elif parts[0] == "add":
            added = Gtk.Label(label=" ".join(parts[1:]))
            boxes[0].pack_start(added, False, False, 0)
            boxes[0].reorder_child(added, 0)
            added.show()
        else:
            for _ in range(int(parts[1]) if len(parts) > 1 else 1):
                mutate()
        steps += 1
        # answer once GTK has processed what the changes queued (after the idle handlers)
        GLib.idle_add(answer, priority=GLib.PRIORITY_LOW)
    return True


def answer() -> bool:
    print(f"ok {steps}", flush=True)
    return False


for _ in range(8):
    add()
window.connect("destroy", Gtk.main_quit)
window.show_all()
GLib.io_add_watch(GLib.IOChannel.unix_new(0), GLib.IO_IN | GLib.IO_HUP, on_line)
Gtk.main()
