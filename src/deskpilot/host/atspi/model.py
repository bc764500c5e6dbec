"""The values the accessibility side hands to the host: apps, frames, snapshots, elements.

Plain frozen dataclasses (not pydantic): a snapshot of a big page holds thousands of them and
they never cross the wire as such; the host turns what it needs into ``deskpilot.protocol``
models (``Rect``, ``Truncation``, ``AppIdentity``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal

from deskpilot.protocol.wire import Rect, Truncation


@dataclass(frozen=True, slots=True)
class NodeRef:
    """An accessible object: the owning connection's unique bus name and its object path."""

    bus_name: str
    path: str


@dataclass(frozen=True, slots=True)
class AppInfo:
    name: str
    pid: int
    bus_name: str
    path: str
    toolkit: str | None = None  # "GTK", "Chromium", "Qt", … (Application.ToolkitName)
    toolkit_version: str | None = None

    @property
    def kit(self) -> str:
        """The toolkit's name in lower case ("gtk", "chromium", "qt"); "" when it gives none."""
        return (self.toolkit or "").lower()

    @property
    def chromium(self) -> bool:
        """Chromium (or Chrome, Electron): its tree changes shape without events."""
        return self.kit.startswith("chrom")

    @property
    def gecko(self) -> bool:
        """Firefox (Gecko): what it says over AT-SPI differs in ways atspi/gecko.py lists."""
        return self.kit == "gecko"

    @property
    def libreoffice(self) -> bool:
        """LibreOffice (its process is soffice.bin; its accessible name "soffice")."""
        return self.name.lower() in ("soffice", "soffice.bin", "libreoffice")

    @property
    def gtk2(self) -> bool:
        """GTK 2 (GIMP 2.10), whose bridge is gail: it says "GAIL" for its toolkit."""
        return self.kit == "gail"


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """A top-level frame/window/dialog node of an application."""

    ref: NodeRef
    pid: int
    app_name: str
    title: str
    role: str  # rendered vocabulary: window, dialog, alert
    atspi_role: str
    extents: Rect | None  # screen coordinates
    states: frozenset[str]  # AT-SPI state names: active, showing, visible, iconified, modal …

    @property
    def active(self) -> bool:
        return "active" in self.states

    @property
    def iconified(self) -> bool:
        return "iconified" in self.states


@dataclass(frozen=True, slots=True)
class ElementRef:
    """One rendered element line: what the dispatcher needs to act on it later."""

    id: int
    ref: NodeRef
    pid: int
    role: str  # rendered vocabulary
    atspi_role: int
    name: str
    states: frozenset[str]  # AT-SPI state names
    interfaces: frozenset[str]  # short AT-SPI interface names: Action, Text, EditableText …
    actions: tuple[str, ...]  # ≤ 20 action names, index = AT-SPI action index ("" = unnamed)
    extents: Rect | None  # screen coordinates; None when not fetched (see AtspiClient.extents)
    secure: bool = False  # password/secure field: value never read, bounds are sensitive
    parent_id: int | None = None  # id of the nearest rendered ancestor
    index_in_parent: int | None = None  # AT-SPI index among its parent's children
    #: where the popup it is in lies on screen, for an element of a popup shown with the
    #: window (a context menu: atspi/popup_sections.py); None for the window's own. It is
    #: acted on only while that popup is still open (the menu may have closed since)
    popup_at: Rect | None = None
    #: what names this element from one read to the next when its object path does not: a
    #: sheet's cell is built anew by the app for each read, so it is its table's path and
    #: its address. None: the object path names it (atspi/element_ids.py)
    identity: tuple[str, ...] | None = None
    #: how far the app's own coordinates of this element are from the screen's (LibreOffice's
    #: VCL area placed under a GTK menu bar it does not count: atspi/vcl_shift.py); its
    #: extents read to aim at it are moved by it. None: none
    shift: tuple[int, int] | None = None

    @property
    def bus_name(self) -> str:
        return self.ref.bus_name

    @property
    def path(self) -> str:
        return self.ref.path


@dataclass(frozen=True, slots=True)
class FieldText:
    """A text field's text as read at one moment, to tell whether typing landed in it.

    ``text`` is None for a secure field (its text is never read: the count has to do) and
    for one longer than the host holds for the check; ``before_caret`` is then what stands
    before the caret (as many characters as the check asked for), where typed text ends up.
    """

    count: int
    caret: int
    text: str | None
    before_caret: str | None = None
    #: the field had the keyboard focus (its caret is where typing lands)
    focused: bool = False
    #: its first selected range (start, end), which typing replaces; None when none
    selection: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class OpaqueRegion:
    """A widget that draws content it does not expose (Thunar's icon view: atspi/opaque.py):
    the element it is shown under, its node in the read (its extents are read again with the
    tree), and where it is on screen."""

    element_id: int
    node: int
    rect: Rect


@dataclass(frozen=True, slots=True)
class TreeSnapshot:
    text: str
    tree_version: str
    element_count: int
    elements: dict[int, ElementRef]
    truncation: Truncation
    sensitive_regions: list[Rect]
    url: str | None
    focused_id: int | None
    root: NodeRef | None = None
    pid: int | None = None
    strategy: str = ""  # how the tree was read: cache, collection, walk (diagnostics)
    node_count: int = 0  # accessible nodes read (before filtering)
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: why the tree is incomplete (``deadline``: the read's deadline passed before all of it
    #: was read); None: complete. A partial tree is never acted on by element id.
    partial: str | None = None
    #: unread subtrees, each a ``[unread: …]`` marker line in ``text``
    unread_subtrees: int = 0
    #: the deadline cut the details or finish step: some shown elements lack their value,
    #: states or actions (missing, not empty) — a cut no marker line can show
    details_unread: bool = False
    #: the host's tree cache (atspi/tree_cache.py): ``hit`` (served as kept), ``patched``
    #: (nodes events marked dirty read again), ``full`` (read in full), ``off`` (not used)
    cache_state: Literal["hit", "patched", "full", "off"] = "full"
    #: why the cache could not be trusted for this read, in words; None: nothing to say
    cache_note: str | None = None
    #: the window's title as its root node names it, read with the tree (the observation's
    #: header says it: an X title can lag behind the app); "" when the root has no name
    title: str = ""
    #: widgets whose content only their pixels show (atspi/opaque.py)
    opaque: tuple[OpaqueRegion, ...] = ()


class OpKind(enum.StrEnum):
    INVOKE = "invoke"  # Action.DoAction by name, or the default click-like action
    SET_TEXT = "set_text"  # EditableText.SetTextContents
    INSERT_TEXT = "insert_text"  # EditableText.InsertText at the caret (or the end)
    SET_VALUE = "set_value"  # Value.CurrentValue (numbers) or EditableText (strings)
    SELECT_TEXT = "select_text"  # Text.SetSelection / AddSelection
    GRAB_FOCUS = "grab_focus"  # Component.GrabFocus
    SELECT_CHILD = "select_child"  # parent's Selection.SelectChild(index in parent)
    SECONDARY = "secondary"  # a second named action such as "menu" (else unsupported)
    SCROLL_TO = "scroll_to"  # Component.ScrollTo (anywhere)
    CHOOSE_OPTION = "choose_option"  # the element's own Selection.SelectChild(index)
    CLEAR_SELECTION = "clear_selection"  # the element's own Selection.ClearSelection
    SET_CARET = "set_caret"  # Text.SetCaretOffset(start)


@dataclass(frozen=True, slots=True)
class SemanticOp:
    kind: OpKind
    action: str | None = None  # INVOKE: an action name; None = the default click-like one
    text: str | None = None  # SET_TEXT / INSERT_TEXT
    value: float | str | None = None  # SET_VALUE
    start: int | None = None  # SELECT_TEXT
    end: int | None = None
    index: int | None = None  # CHOOSE_OPTION: the option's index among the combo's options

    @classmethod
    def invoke(cls, action: str | None = None) -> SemanticOp:
        return cls(OpKind.INVOKE, action=action)


@dataclass(frozen=True, slots=True)
class SemanticResult:
    kind: OpKind
    detail: str  # what was done, e.g. 'action "Click"' — never typed text
    settled: bool | None = None  # None: settling not requested
    duration_ms: float = 0.0
