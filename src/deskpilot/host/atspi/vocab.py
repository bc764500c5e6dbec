"""AT-SPI numbers and our short vocabulary for them.

AT-SPI speaks in numbers (``AtspiRole``, ``AtspiStateType``) and, for some calls, in role
names. We read the numbers (``GetRole`` and the Cache's role field are numeric and cheaper
than ``GetRoleName``) and render a short camelCase vocabulary the agent sees; the mapping is
documented in docs/host-tree.md and is a contract, so change both together.
"""

from __future__ import annotations

import enum
from typing import Final

# AtspiRole, in enum order (at-spi2-core atspi-constants.h). Index = role number.
ATSPI_ROLE_NAMES: Final[tuple[str, ...]] = (
    "invalid", "accelerator label", "alert", "animation", "arrow", "calendar", "canvas",
    "check box", "check menu item", "color chooser", "column header", "combo box",
    "date editor", "desktop icon", "desktop frame", "dial", "dialog", "directory pane",
    "drawing area", "file chooser", "filler", "focus traversable", "font chooser", "frame",
    "glass pane", "html container", "icon", "image", "internal frame", "label",
    "layered pane", "list", "list item", "menu", "menu bar", "menu item", "option pane",
    "page tab", "page tab list", "panel", "password text", "popup menu", "progress bar",
    "push button", "radio button", "radio menu item", "root pane", "row header",
    "scroll bar", "scroll pane", "separator", "slider", "spin button", "split pane",
    "status bar", "table", "table cell", "table column header", "table row header",
    "tearoff menu item", "terminal", "text", "toggle button", "tool bar", "tool tip", "tree",
    "tree table", "unknown", "viewport", "window", "extended", "header", "footer",
    "paragraph", "ruler", "application", "autocomplete", "editbar", "embedded", "entry",
    "chart", "caption", "document frame", "heading", "page", "section", "redundant object",
    "form", "link", "input method window", "table row", "tree item", "document spreadsheet",
    "document presentation", "document text", "document web", "document email", "comment",
    "list box", "grouping", "image map", "notification", "info bar", "level bar",
    "title bar", "block quote", "audio", "video", "definition", "article", "landmark", "log",
    "marquee", "math", "rating", "timer", "static", "math fraction", "math root",
    "subscript", "superscript", "description list", "description term",
    "description value", "footnote", "content deletion", "content insertion", "mark",
    "suggestion", "push button menu",
)  # fmt: skip

ROLE_NUMBER: Final[dict[str, int]] = {name: i for i, name in enumerate(ATSPI_ROLE_NAMES)}

# AT-SPI role name -> rendered role. Anything not listed renders as "generic".
_ROLE_VOCAB: Final[dict[str, str]] = {
    "accelerator label": "label",
    "alert": "alert",
    "animation": "image",
    "application": "application",
    "arrow": "arrow",
    "article": "article",
    "audio": "media",
    "autocomplete": "comboBox",
    "block quote": "blockquote",
    "calendar": "calendar",
    "canvas": "canvas",
    "caption": "caption",
    "chart": "chart",
    "check box": "checkBox",
    "check menu item": "checkMenuItem",
    "color chooser": "colorChooser",
    "column header": "columnHeader",
    "combo box": "comboBox",
    "comment": "comment",
    "content deletion": "deletion",
    "content insertion": "insertion",
    "date editor": "dateEditor",
    "definition": "definition",
    "description list": "list",
    "description term": "term",
    "description value": "definition",
    "desktop frame": "desktop",
    "desktop icon": "icon",
    "dial": "dial",
    "dialog": "dialog",
    "directory pane": "group",
    "document email": "document",
    "document frame": "document",
    "document presentation": "document",
    "document spreadsheet": "document",
    "document text": "document",
    "document web": "document",
    "drawing area": "canvas",
    "editbar": "textField",
    "embedded": "embedded",
    "entry": "textField",
    "file chooser": "dialog",
    "filler": "group",
    "font chooser": "fontChooser",
    "footer": "footer",
    "footnote": "footnote",
    "form": "form",
    "frame": "window",
    "glass pane": "group",
    "grouping": "group",
    "header": "header",
    "heading": "heading",
    "html container": "group",
    "icon": "image",
    "image": "image",
    "image map": "image",
    "info bar": "infoBar",
    "input method window": "window",
    "internal frame": "window",
    "label": "label",
    "landmark": "landmark",
    "layered pane": "group",
    "level bar": "levelBar",
    "link": "link",
    "list": "list",
    "list box": "list",
    "list item": "listItem",
    "log": "log",
    "mark": "mark",
    "marquee": "marquee",
    "math": "math",
    "menu": "menu",
    "menu bar": "menuBar",
    "menu item": "menuItem",
    "notification": "notification",
    "option pane": "group",
    "page": "page",
    "page tab": "tab",
    "page tab list": "tabList",
    "panel": "group",
    "paragraph": "paragraph",
    "password text": "passwordField",
    "popup menu": "menu",
    "progress bar": "progressBar",
    "push button": "button",
    "push button menu": "menuButton",
    "radio button": "radioButton",
    "radio menu item": "radioMenuItem",
    "rating": "rating",
    "root pane": "group",
    "row header": "rowHeader",
    "ruler": "ruler",
    "scroll bar": "scrollBar",
    "scroll pane": "scrollArea",
    "section": "section",
    "separator": "separator",
    "slider": "slider",
    "spin button": "spinButton",
    "split pane": "splitPane",
    "static": "text",
    "status bar": "statusBar",
    "subscript": "text",
    "superscript": "text",
    "suggestion": "suggestion",
    "table": "table",
    "table cell": "cell",
    "table column header": "columnHeader",
    "table row": "row",
    "table row header": "rowHeader",
    "tearoff menu item": "menuItem",
    "terminal": "terminal",
    "text": "textField",
    "timer": "timer",
    "title bar": "titleBar",
    "toggle button": "toggleButton",
    "tool bar": "toolbar",
    "tool tip": "tooltip",
    "tree": "tree",
    "tree item": "treeItem",
    "tree table": "treeTable",
    "video": "media",
    "viewport": "viewport",
    "window": "window",
}

ROLE_VOCAB: Final[tuple[str, ...]] = tuple(
    _ROLE_VOCAB.get(name, "generic") for name in ATSPI_ROLE_NAMES
)


def role_name(role: int) -> str:
    """The AT-SPI role name for a role number ("unknown" when out of range)."""
    return ATSPI_ROLE_NAMES[role] if 0 <= role < len(ATSPI_ROLE_NAMES) else "unknown"


def rendered_role(role: int) -> str:
    return ROLE_VOCAB[role] if 0 <= role < len(ROLE_VOCAB) else "generic"


def _roles(*names: str) -> frozenset[int]:
    return frozenset(ROLE_NUMBER[n] for n in names)


R_APPLICATION: Final = ROLE_NUMBER["application"]
R_PASSWORD_TEXT: Final = ROLE_NUMBER["password text"]
R_LABEL: Final = ROLE_NUMBER["label"]
R_STATIC: Final = ROLE_NUMBER["static"]

# Top-level nodes an observe can target.
FRAME_ROLES: Final = _roles("frame", "window", "dialog", "alert", "file chooser")
R_WINDOW: Final = ROLE_NUMBER["window"]


def window_role(role: int) -> int:
    """The role a window's root is shown with: its own when it is a window role, else
    ``window`` (a Qt top-level that is a plain ``QWidget`` says filler; it is the window
    all the same, and agents and the state-reuse rules read the root line's role)."""
    return role if role in FRAME_ROLES else R_WINDOW


# Elements a user operates. Their Action is assumed usable without looking at names.
INTERACTIVE_ROLES: Final = _roles(
    "push button", "push button menu", "toggle button", "check box", "radio button",
    "check menu item", "radio menu item", "menu item", "tearoff menu item", "menu",
    "combo box", "autocomplete", "entry", "text", "password text", "editbar", "spin button",
    "slider", "dial", "link", "page tab", "list item", "tree item", "table cell",
    "table row", "column header", "row header", "table column header", "table row header",
    "terminal", "calendar", "date editor", "color chooser", "font chooser",
)  # fmt: skip

# Interactive elements shown even without a name (an unnamed text field is still a field).
ALWAYS_SHOWN_ROLES: Final = INTERACTIVE_ROLES - _roles(
    "list item", "tree item", "table cell", "table row", "column header", "row header",
    "table column header", "table row header", "menu", "calendar",
)  # fmt: skip

# Roles whose Text content is the element's value (bounded, never for password text).
TEXT_VALUE_ROLES: Final = _roles(
    "entry", "text", "editbar", "spin button", "terminal", "combo box", "autocomplete",
    "document text",
)  # fmt: skip

#: Unnamed text leaves whose own text stands for their name (LibreOffice's status bar labels,
#: Firefox's headings and links hold their words in the Text interface only).
TEXT_NAME_ROLES: Final = _roles("label", "static", "heading", "link", "caption")

#: Unnamed leaves whose text is document content, shown as their value: Writer's paragraphs
#: (one per paragraph on screen), Firefox's ``<p>``.
TEXT_CONTENT_ROLES: Final = _roles("paragraph", "block quote")

#: Elements that are checked or not; each shown says which (``[checked]`` / ``[unchecked]``).
#: Any other element with the CHECKABLE state is one too.
CHECKABLE_ROLES: Final = _roles(
    "check box", "radio button", "check menu item", "radio menu item", "toggle button"
)

# Roles whose Value.CurrentValue is the element's value.
NUMERIC_VALUE_ROLES: Final = _roles(
    "slider", "spin button", "progress bar", "level bar", "dial", "rating"
)

# Choosers whose value is the chosen item when they have no text of their own.
COMBO_ROLES: Final = _roles("combo box", "autocomplete")
#: a combo box's child that holds its options (atspi/combo.py, atspi/combo_view.py)
COMBO_POPUP_ROLES: Final = _roles("menu", "list box", "list")

# Fields an unnamed instance of which takes its name from a label (LABELLED_BY relation, or
# the nearest label left of it on the same row).
LABELLED_ROLES: Final = _roles(
    "entry", "text", "password text", "editbar", "spin button", "combo box", "autocomplete",
    "slider", "dial", "calendar", "date editor", "color chooser", "font chooser",
)  # fmt: skip

# Roles a field's label has.
LABEL_ROLES: Final = _roles("label", "static", "caption")

# AtspiRelationType: the relation pointing from a field to its label(s).
RELATION_LABELLED_BY: Final = 2

# Unnamed containers of these roles carry no meaning of their own; their children are shown
# in their place (the node is "flattened").
GENERIC_CONTAINER_ROLES: Final = _roles(
    "panel", "filler", "section", "grouping", "redundant object", "unknown", "invalid",
    "viewport", "scroll pane", "split pane", "layered pane", "root pane", "glass pane",
    "html container", "option pane", "internal frame", "extended", "embedded", "form",
    "landmark", "article", "block quote", "header", "footer", "page", "directory pane",
    "paragraph", "static", "label",
)  # fmt: skip

# Leaf text roles: dropped when they only repeat their parent's name.
TEXT_LEAF_ROLES: Final = _roles("label", "static", "paragraph", "caption")

DOCUMENT_ROLES: Final = _roles(
    "document frame", "document web", "document text", "document email",
    "document spreadsheet", "document presentation",
)  # fmt: skip

#: Items of a list, table, tree or list box: rows, cells, list items, tree items and options
#: (ARIA ``option`` and ``<select size>`` options are "list item" in AT-SPI; ARIA grid rows
#: and grid cells are "table row" / "table cell").
#:
#: A single click on one of these *selects* it; only a double click (or Enter) *activates*
#: it. Their own default AT-SPI action is not a click: a GTK tree-view cell's is "Activate",
#: which emits row-activated — a ``zenity --list`` dialog returns as if the row had been
#: double-clicked, a file manager opens the file. So a left single click on one is sent as a
#: selection (see ``host/item_clicks.py``), never as that action. Menu items are not here:
#: choosing one is what a click on it means (a ``<select>`` dropdown's options are menu
#: items whose only action is "select", which toggles: ``host/combo_boxes.py``).
SELECT_ON_CLICK_ROLES: Final = _roles("list item", "table cell", "table row", "tree item")

#: Rendered roles of a text leaf that stands for the item it labels: a click on the label of
#: a GTK 4 list row (the row itself is unnamed, its label child carries the text) is a click
#: on the row.
ITEM_LABEL_ROLES: Final[frozenset[str]] = frozenset({"label", "text"})


class State(enum.IntEnum):
    """AtspiStateType; a node's state set is a 64-bit mask of ``1 << State``."""

    INVALID = 0
    ACTIVE = 1
    ARMED = 2
    BUSY = 3
    CHECKED = 4
    COLLAPSED = 5
    DEFUNCT = 6
    EDITABLE = 7
    ENABLED = 8
    EXPANDABLE = 9
    EXPANDED = 10
    FOCUSABLE = 11
    FOCUSED = 12
    HAS_TOOLTIP = 13
    HORIZONTAL = 14
    ICONIFIED = 15
    MODAL = 16
    MULTI_LINE = 17
    MULTISELECTABLE = 18
    OPAQUE = 19
    PRESSED = 20
    RESIZABLE = 21
    SELECTABLE = 22
    SELECTED = 23
    SENSITIVE = 24
    SHOWING = 25
    SINGLE_LINE = 26
    STALE = 27
    TRANSIENT = 28
    VERTICAL = 29
    VISIBLE = 30
    MANAGES_DESCENDANTS = 31
    INDETERMINATE = 32
    REQUIRED = 33
    TRUNCATED = 34
    ANIMATED = 35
    INVALID_ENTRY = 36
    SUPPORTS_AUTOCOMPLETION = 37
    SELECTABLE_TEXT = 38
    IS_DEFAULT = 39
    VISITED = 40
    CHECKABLE = 41
    HAS_POPUP = 42
    READ_ONLY = 43


def bit(state: State) -> int:
    return 1 << int(state)


def state_mask(words: list[int] | tuple[int, ...]) -> int:
    """The two 32-bit words AT-SPI sends, as one mask."""
    lo = words[0] & 0xFFFFFFFF if words else 0
    hi = words[1] & 0xFFFFFFFF if len(words) > 1 else 0
    return lo | (hi << 32)


def state_names(mask: int) -> frozenset[str]:
    """Every state in a mask, by its lower-case AT-SPI name ("focused", "read_only")."""
    return frozenset(s.name.lower() for s in State if s and mask & (1 << int(s)))


# Interfaces, as a bit mask for cheap checks; names are the AT-SPI short names.
class Iface(enum.IntFlag):
    ACCESSIBLE = 1
    ACTION = 2
    COMPONENT = 4
    TEXT = 8
    EDITABLE_TEXT = 16
    VALUE = 32
    SELECTION = 64
    TABLE = 128
    TABLE_CELL = 256
    DOCUMENT = 512
    HYPERTEXT = 1024
    HYPERLINK = 2048
    IMAGE = 4096
    COLLECTION = 8192
    APPLICATION = 16384


IFACE_BY_NAME: Final[dict[str, int]] = {
    "org.a11y.atspi.Accessible": int(Iface.ACCESSIBLE),
    "org.a11y.atspi.Action": int(Iface.ACTION),
    "org.a11y.atspi.Component": int(Iface.COMPONENT),
    "org.a11y.atspi.Text": int(Iface.TEXT),
    "org.a11y.atspi.EditableText": int(Iface.EDITABLE_TEXT),
    "org.a11y.atspi.Value": int(Iface.VALUE),
    "org.a11y.atspi.Selection": int(Iface.SELECTION),
    "org.a11y.atspi.Table": int(Iface.TABLE),
    "org.a11y.atspi.TableCell": int(Iface.TABLE_CELL),
    "org.a11y.atspi.Document": int(Iface.DOCUMENT),
    "org.a11y.atspi.Hypertext": int(Iface.HYPERTEXT),
    "org.a11y.atspi.Hyperlink": int(Iface.HYPERLINK),
    "org.a11y.atspi.Image": int(Iface.IMAGE),
    "org.a11y.atspi.Collection": int(Iface.COLLECTION),
    "org.a11y.atspi.Application": int(Iface.APPLICATION),
}


_IFACE_MASKS: dict[tuple[str, ...], int] = {}


def iface_mask(names: list[str] | tuple[str, ...]) -> int:
    key = tuple(names)
    m = _IFACE_MASKS.get(key)
    if m is None:
        m = 0
        for n in key:
            m |= IFACE_BY_NAME.get(n, 0)
        if len(_IFACE_MASKS) < 4096:
            _IFACE_MASKS[key] = m
    return m


def iface_names(mask: int) -> frozenset[str]:
    """Short interface names ("Action", "EditableText") present in a mask."""
    return frozenset(name.rsplit(".", 1)[1] for name, flag in IFACE_BY_NAME.items() if mask & flag)


# Action names that say nothing beyond "this is clickable" (default click-like names,
# checked in this order when a caller asks for "the" click) ...
CLICK_ACTIONS: Final[tuple[str, ...]] = ("click", "press", "activate", "jump", "open", "toggle")
# ... and names that are not a usable action on their own (toolkit plumbing).
NOISE_ACTIONS: Final[frozenset[str]] = frozenset(
    {"", "doDefault", "clickAncestor", "showContextMenu", "scrollToMakeVisible",
     "scrollToPoint", "setSequentialFocusNavigationStartingPoint"}
)  # fmt: skip
#: An item's own action that selects it without activating it (Chromium's list box options:
#: the verb of ``<option>`` and ARIA ``option``), compared case-insensitively and exactly.
SELECT_ACTIONS: Final[tuple[str, ...]] = ("select",)
#: An item's own action that activates it, as a double click would (GTK cells and rows:
#: "Activate"), compared case-insensitively and exactly, in this order.
ACTIVATE_ACTIONS: Final[tuple[str, ...]] = ("activate", "open")
SECONDARY_ACTIONS: Final[tuple[str, ...]] = (
    "menu", "showmenu", "showMenu", "popup", "menu.popup", "showContextMenu", "context menu",
)  # fmt: skip


def is_noise_action(name: str) -> bool:
    """Toolkit plumbing: Chromium's doDefault/clickAncestor, GTK4's "clipboard.copy"-style
    widget actions (a dotted GAction name) are not something a user would click."""
    return name in NOISE_ACTIONS or ("." in name and " " not in name)


MAX_ACTIONS_SHOWN: Final = 20  # actions kept per element (architecture.md: ≤ 20)
