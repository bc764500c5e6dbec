"""A Qt 6 window that mutates itself on command, for the host's Qt tests and the tree
cache's randomized test: the Qt twin of mutating_gtk_app.py, same protocol.

Run by the system python3 (Debian's python3-pyqt6, Qt 6.4: the Qt whose AT-SPI bridge
crashes on ``Properties.GetAll``): ``python3 mutating_qt_app.py SEED`` (``SEED qt5``: the same
window in Qt 5 through python3-pyqt5, whose bridge registers only when the display names the
accessibility bus). Every line
``step N`` on stdin makes N seeded random changes — relabel a label or a button, hide or
show a widget, toggle a check box, set a line edit's text, add, remove or move a widget
between the two columns, move the keyboard focus (Qt hands a text edit's focus on to its
viewport without an event) — and then prints ``ok K`` (K: steps done) once Qt has processed
them. ``label TEXT`` sets the fixed label at the top. The window is a plain ``QWidget``,
which Qt exposes with the role filler, not frame. Its fixed widgets, for the action tests: a
button "Increment" that counts in the label "Count is N", a menu Edit > More > "Add Ten" that
adds ten, a line edit "Name", a spin box
"Amount", a check box "Subscribe", a combo box of Red, Green and Blue (named after its
current item), a read-only line edit "SKU" and a text edit "Notes".
"""

import random
import sys

if sys.argv[2:] == ["qt5"]:
    from PyQt5 import QtCore, QtWidgets
else:
    from PyQt6 import QtCore, QtWidgets

rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
counter = 0
steps = 0

app = QtWidgets.QApplication(sys.argv[:1])
window = QtWidgets.QWidget()
window.setWindowTitle("Mutating Qt")
window.resize(480, 640)
top = QtWidgets.QVBoxLayout(window)
menus = QtWidgets.QMenuBar()
top.setMenuBar(menus)
fixed = QtWidgets.QLabel("Fixed label")
top.addWidget(fixed)
count = QtWidgets.QLabel("Count is 0")
top.addWidget(count)
clicks = [0]


def increment() -> None:
    clicks[0] += 1
    count.setText(f"Count is {clicks[0]}")


def add_ten() -> None:
    clicks[0] += 10
    count.setText(f"Count is {clicks[0]}")


edit_menu = menus.addMenu("Edit")
more_menu = edit_menu.addMenu("More")
more_menu.addAction("Add Ten").triggered.connect(add_ten)
increment_button = QtWidgets.QPushButton("Increment")
increment_button.clicked.connect(increment)
top.addWidget(increment_button)
name = QtWidgets.QLineEdit()
name.setAccessibleName("Name")
top.addWidget(name)
amount = QtWidgets.QSpinBox()
amount.setAccessibleName("Amount")
top.addWidget(amount)
subscribe = QtWidgets.QCheckBox("Subscribe")
top.addWidget(subscribe)
colour = QtWidgets.QComboBox()
colour.addItems(["Red", "Green", "Blue"])
top.addWidget(colour)
sku = QtWidgets.QLineEdit("SKU-0001")
sku.setAccessibleName("SKU")
sku.setReadOnly(True)
top.addWidget(sku)
notes = QtWidgets.QTextEdit()
notes.setAccessibleName("Notes")
notes.setFixedHeight(60)
top.addWidget(notes)
row = QtWidgets.QHBoxLayout()
top.addLayout(row)
columns = [QtWidgets.QVBoxLayout(), QtWidgets.QVBoxLayout()]
for column in columns:
    row.addLayout(column)
pool: list[QtWidgets.QWidget] = []
focusable: list[QtWidgets.QWidget] = [name, amount, subscribe, notes, increment_button]


def word() -> str:
    global counter
    counter += 1
    return f"{rng.choice(WORDS)} {counter}"


def new_widget() -> QtWidgets.QWidget:
    kind = rng.randrange(4)
    if kind == 0:
        return QtWidgets.QLabel(word())
    if kind == 1:
        return QtWidgets.QPushButton(word())
    if kind == 2:
        return QtWidgets.QCheckBox(word())
    edit = QtWidgets.QLineEdit()
    edit.setText(word())
    return edit


def column_of(w: QtWidgets.QWidget) -> QtWidgets.QVBoxLayout:
    return columns[0] if columns[0].indexOf(w) >= 0 else columns[1]


def add() -> None:
    w = new_widget()
    rng.choice(columns).addWidget(w)
    pool.append(w)


def mutate() -> None:
    op = rng.randrange(9)
    if op == 0 or len(pool) < 4:
        if len(pool) < 24:
            add()
        return
    if op == 8:
        rng.choice(focusable + pool).setFocus()
        return
    w = rng.choice(pool)
    if op == 1:
        pool.remove(w)
        column_of(w).removeWidget(w)
        w.setParent(None)
        w.deleteLater()
    elif op == 2:
        w.setVisible(not w.isVisible())
    elif op == 3:  # move to the other column
        here = column_of(w)
        here.removeWidget(w)
        (columns[1] if here is columns[0] else columns[0]).addWidget(w)
    elif isinstance(w, QtWidgets.QCheckBox):
        w.setChecked(not w.isChecked())
    elif isinstance(w, (QtWidgets.QLabel, QtWidgets.QPushButton, QtWidgets.QLineEdit)):
        w.setText(word())


def on_line() -> None:
    global steps
    line = sys.stdin.readline()
    if not line:
        app.quit()
        return
    parts = line.split()
    if parts and parts[0] in ("step", "label"):
        if parts[0] == "label":
            fixed.setText(" ".join(parts[1:]))
        else:
            for _ in range(int(parts[1]) if len(parts) > 1 else 1):
                mutate()
        steps += 1
        # answer once Qt has processed what the changes queued (the next loop turns)
        QtCore.QTimer.singleShot(50, answer)


def answer() -> None:
    print(f"ok {steps}", flush=True)


for _ in range(8):
    add()
window.show()
# Qt 6 scopes the enum (QSocketNotifier.Type.Read); Qt 5 has it on the class
notifier = QtCore.QSocketNotifier
reader = notifier(sys.stdin.fileno(), getattr(notifier, "Type", notifier).Read)
reader.activated.connect(on_line)
sys.exit(app.exec())
