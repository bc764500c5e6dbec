"""A Qt window with a context menu (run by the system python3: ``context_menu_qt_app.py`` for
Qt 6 through python3-pyqt6, ``context_menu_qt_app.py qt5`` for Qt 5 through python3-pyqt5).

A right click anywhere in the window pops up a ``QMenu`` at the pointer with "Alpha" and
"Beta", which set the label "chosen: …", a disabled "Nothing here", and a "More" submenu
with "Delta"; a tool button "Tools" whose click opens a menu (InstantPopup) of "Hammer" and
"Saw". Qt leaves such a menu out of its application's accessible children (it is a
popup window), so the host finds it by the ``showing`` event it sends (host/popups.py).
"""

import sys

if sys.argv[1:] == ["qt5"]:
    from PyQt5 import QtCore, QtWidgets
else:
    from PyQt6 import QtCore, QtWidgets

app = QtWidgets.QApplication(sys.argv[:1])
window = QtWidgets.QWidget()
window.setWindowTitle("Qt context menus")
window.resize(400, 260)
layout = QtWidgets.QVBoxLayout(window)
layout.addWidget(QtWidgets.QLabel("Right click anywhere"))
chosen = QtWidgets.QLabel("chosen: none")
layout.addWidget(chosen)
tools = QtWidgets.QToolButton()
tools.setText("Tools")
tools.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.InstantPopup)
tools_menu = QtWidgets.QMenu(tools)
for tool in ("Hammer", "Saw"):
    tools_menu.addAction(tool).triggered.connect(lambda _=False, n=tool: choose(n))
tools.setMenu(tools_menu)
layout.addWidget(tools)
window.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)


def choose(name: str) -> None:
    chosen.setText(f"chosen: {name}")


def pop_up(pos: QtCore.QPoint) -> None:
    menu = QtWidgets.QMenu(window)
    for name in ("Alpha", "Beta"):
        menu.addAction(name).triggered.connect(lambda _=False, n=name: choose(n))
    menu.addAction("Nothing here").setEnabled(False)
    more = menu.addMenu("More")
    more.addAction("Delta").triggered.connect(lambda _=False: choose("Delta"))
    menu.exec(window.mapToGlobal(pos))


window.customContextMenuRequested.connect(pop_up)
window.show()
app.exec()
