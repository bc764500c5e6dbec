"""Wire models for the host protocol (version 1).

Every JSON request is ``{"id": <int|string>, "type": "<request name>", ...fields}``; every
response carries the same ``id`` and its own ``type``. Field names on the wire are camelCase;
Python code uses snake_case (both spellings are accepted on input). Unknown fields are
rejected (``extra="forbid"``), so a typo never silently becomes a default.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from deskpilot.protocol.errors import ErrorCode

PROTOCOL_VERSION = 1

RequestId = int | str


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=False,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON-ready dict as sent on the wire (camelCase, no None fields)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# ------------------------------------------------------------------ shared shapes


class PermissionState(enum.StrEnum):
    GRANTED = "granted"
    DENIED = "denied"
    NOT_DETERMINED = "not_determined"
    RESTRICTED = "restricted"
    UNSUPPORTED = "unsupported"


class Rect(WireModel):
    x: int
    y: int
    width: int
    height: int


class Point(WireModel):
    """A point in normalised window coordinates: (0, 0) top-left, (1, 1) bottom-right."""

    x: float = Field(ge=0.0, le=1.0)
    y: float = Field(ge=0.0, le=1.0)


class AppIdentity(WireModel):
    pid: int | None = None
    name: str | None = None  # accessibility name of the application node
    executable: str | None = None  # lower-cased basename of /proc/PID/exe
    wm_class: str | None = None
    desktop_id: str | None = None


class WindowInfo(WireModel):
    window_id: str  # X11 window id as "0x…" hex
    title: str = ""
    bounds: Rect
    visible: bool = True
    minimized: bool = False
    focused: bool = False
    app: AppIdentity = Field(default_factory=AppIdentity)
    #: the window this one is a dialog of (ICCCM WM_TRANSIENT_FOR), "0x…" hex
    transient_for: str | None = None
    #: True when the window says it is modal (``_NET_WM_STATE_MODAL``): while it is shown,
    #: the window it is a dialog of takes no input of its own (its toolkit sends the keys to
    #: the dialog, or drops them); None otherwise
    modal: bool | None = None
    #: only in ``list_windows``: the window's app has left the host's accessibility question
    #: unanswered for this many ms (stopped, deadlocked, stuck in a long handler), so
    #: ``app.name`` is what it was last known as (absent if never) and an observe of it
    #: answers by its deadline from its last complete tree, stale; None: the app answered
    #: (or has no accessibility tree)
    app_unresponsive_ms: float | None = None
    #: only in ``list_windows``: the host's last read of this window's tree did not finish
    #: within its deadline of this many ms (the app answers, but too slowly for all of its
    #: tree), so that observation was partial; None: the last read was complete (or none)
    tree_deadline_missed_ms: float | None = None


class TargetSpec(WireModel):
    """What to observe. Empty = the foreground (focused) window."""

    window_id: str | None = None
    pid: int | None = None
    app: str | None = None


ImageFormat = Literal["png", "jpeg"]


class ImageDescriptor(WireModel):
    """Describes the binary frame that directly follows the JSON frame."""

    #: "png" unless the request asked a ``capture_window`` for "jpeg" (the live view)
    format: ImageFormat = "png"
    width: int
    height: int
    byte_length: int


class Truncation(WireModel):
    omitted_elements: int = 0  # dropped by the text budget or the element cap
    elided_children: int = 0  # children of huge containers shown only as a count
    noise_dropped: int = 0
    element_cap_hit: bool = False
    text_budget_hit: bool = False
    #: the app is on the accessibility bus but its tree could not be read (it did not answer
    #: in time, say, busy in a modal loop): the empty tree is missing, not "no elements"
    tree_unavailable: bool = False


#: the longest deadline an observe's tree read may be given (ms): the host client waits 20 s
#: for any answer (hostclient/config.py ``request_timeout_s``; an action's answer, with up to
#: two post-action reads, gets its 14 s grace + 6 s), and the reads must end well before that
MAX_TREE_DEADLINE_MS: Final = 5_000


class TreeRead(WireModel):
    """How the observation's tree was read: from where, how much of it, and how old it is.

    The header an agent reads says each of these in words (runtime/state_view.py); a tree
    that is not complete and current (``partial``, ``stale_age_ms``) is never a state whose
    element ids can be acted on, though its screenshot's coordinates can.
    """

    #: ``accessibility``: the AT-SPI tree; ``visual``: an outline built by OCR from the
    #: screenshot because the window exposes no tree (element ids stand for points of the
    #: image; no sensitive regions are known); ``none``: no tree at all
    source: Literal["accessibility", "visual", "none"] = "accessibility"
    #: the host's event-driven cache: ``hit`` (nothing changed since the last read),
    #: ``patched`` (only what events marked dirty was read again), ``full`` (a full walk),
    #: ``off`` (not used: see ``cache_note``)
    cache: Literal["hit", "patched", "full", "off"] = "full"
    #: why the cache could not be trusted for this read, in words (the app emits no events,
    #: the event queue overflowed, the bus reconnected …); None when there is nothing to say
    cache_note: str | None = None
    #: why the tree is incomplete (``deadline``: the read's deadline passed); None: complete
    partial: str | None = None
    #: subtrees left unread, each marked in the tree text where it would have been
    unread_subtrees: int = 0
    #: some shown elements lack their value, states or actions (the deadline came before
    #: they were read): missing, not empty, and no line of the tree marks them
    details_unread: bool = False
    #: the app did not answer within the deadline, so this is the last tree read of it, this
    #: many ms old; None: read now
    stale_age_ms: float | None = None
    #: the deadline this read had, in ms
    deadline_ms: float | None = None

    @property
    def reusable(self) -> bool:
        """May element ids of this tree be acted on? Only a complete, current tree's."""
        return self.partial is None and self.stale_age_ms is None


class Backends(WireModel):
    screen: Literal["x11", "xdg_portal", "none"] = "none"
    accessibility: Literal["at_spi", "none"] = "none"
    input: Literal["xtest", "xdg_remote_desktop", "none"] = "none"


class Permissions(WireModel):
    screen: PermissionState = PermissionState.NOT_DETERMINED
    accessibility: PermissionState = PermissionState.NOT_DETERMINED
    input: PermissionState = PermissionState.NOT_DETERMINED


# ------------------------------------------------------------------ actions


class MouseButton(enum.StrEnum):
    LEFT = "left"
    RIGHT = "right"
    MIDDLE = "middle"


class ScrollDirection(enum.StrEnum):
    UP = "up"
    DOWN = "down"
    LEFT = "left"
    RIGHT = "right"


class _Action(WireModel):
    duration_ms: int | None = Field(default=None, ge=0, le=170_000)


#: keys a click may be made with held down (a ctrl-click adds an item to a selection)
ClickModifier = Literal["ctrl", "shift", "alt", "super"]


class ClickAction(_Action):
    kind: Literal["click"] = "click"
    element_id: int | None = Field(default=None, ge=1)
    point: Point | None = None
    button: MouseButton = MouseButton.LEFT
    count: int = Field(default=1, ge=1, le=3)
    #: held down for the click (each at most once): it is then a real pointer click at the
    #: element's centre, as a person's ctrl-click or shift-click is (host/pointer_actions.py)
    modifiers: list[ClickModifier] = Field(default_factory=list, max_length=4)

    @field_validator("modifiers")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("each modifier at most once")
        return value


class TypeTextAction(_Action):
    kind: Literal["type_text"] = "type_text"
    text: str = Field(min_length=1, max_length=100_000)
    element_id: int | None = Field(default=None, ge=1)


class PasteTextAction(_Action):
    kind: Literal["paste_text"] = "paste_text"
    text: str = Field(min_length=1, max_length=1_000_000)
    element_id: int | None = Field(default=None, ge=1)


class SetValueAction(_Action):
    kind: Literal["set_value"] = "set_value"
    element_id: int = Field(ge=1)
    value: str | float


class InvokeElementAction(_Action):
    kind: Literal["invoke_element"] = "invoke_element"
    element_id: int = Field(ge=1)
    action: str | None = Field(default=None, max_length=200)


class PressKeyAction(_Action):
    kind: Literal["press_key"] = "press_key"
    # each entry is one chord, e.g. "ctrl+s", "Return", "shift+Tab"; pressed in order
    keys: list[str] = Field(min_length=1, max_length=64)


class ScrollAction(_Action):
    kind: Literal["scroll"] = "scroll"
    element_id: int | None = Field(default=None, ge=1)
    point: Point | None = None
    direction: ScrollDirection
    amount: int = Field(default=3, ge=1, le=100)


class DragAction(_Action):
    kind: Literal["drag"] = "drag"
    start: Point
    end: Point


class SelectTextAction(_Action):
    kind: Literal["select_text"] = "select_text"
    element_id: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class FocusWindowAction(_Action):
    kind: Literal["focus_window"] = "focus_window"


class SecondaryAction(_Action):
    kind: Literal["perform_secondary_action"] = "perform_secondary_action"
    element_id: int = Field(ge=1)


Action = Annotated[
    ClickAction
    | TypeTextAction
    | PasteTextAction
    | SetValueAction
    | InvokeElementAction
    | PressKeyAction
    | ScrollAction
    | DragAction
    | SelectTextAction
    | FocusWindowAction
    | SecondaryAction,
    Field(discriminator="kind"),
]

ACTION_KINDS: tuple[str, ...] = (
    "click",
    "type_text",
    "paste_text",
    "set_value",
    "invoke_element",
    "press_key",
    "scroll",
    "drag",
    "select_text",
    "focus_window",
    "perform_secondary_action",
)

# ------------------------------------------------------------------ requests


class _Request(WireModel):
    id: RequestId
    protocol_version: int | None = None  # when present it must equal PROTOCOL_VERSION


class GetCapabilities(_Request):
    type: Literal["get_capabilities"] = "get_capabilities"


class RequestPermissions(_Request):
    type: Literal["request_permissions"] = "request_permissions"


class ListWindows(_Request):
    type: Literal["list_windows"] = "list_windows"


class CaptureWindow(_Request):
    """One picture of a window (or, with ``screen``, of the whole screen).

    The fields after ``session_id`` are the live view's (docs/host.md, "Capture"); left at
    their defaults the request and its answer are what they always were: a PNG of the window
    and a result without ``rect``, ``pointer``, ``windows`` or ``withheld``.
    """

    type: Literal["capture_window"] = "capture_window"
    target: TargetSpec = Field(default_factory=TargetSpec)
    session_id: str | None = None
    #: the whole screen instead of one window; ``target`` must then be empty
    screen: bool = False
    #: "jpeg" costs ≈ 3 ms for a 1280×800 frame where PNG costs 8–30 ms (benchmarks)
    format: ImageFormat = "png"
    #: JPEG quality (only with format "jpeg"; default 80)
    quality: int | None = Field(default=None, ge=30, le=95)
    #: answer with the pointer's position (XQueryPointer)
    include_pointer: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> CaptureWindow:
        if self.screen and (
            self.target.window_id is not None
            or self.target.pid is not None
            or self.target.app is not None
        ):
            raise PydanticCustomError("screen_with_target", "a screen capture takes no target")
        if self.quality is not None and self.format != "jpeg":
            raise PydanticCustomError("quality_without_jpeg", "quality is for format jpeg only")
        return self

    @property
    def extended(self) -> bool:
        """Asked for any of the live view's options (the answer then carries its fields)."""
        return self.screen or self.format != "png" or self.include_pointer


class Observe(_Request):
    type: Literal["observe"] = "observe"
    target: TargetSpec = Field(default_factory=TargetSpec)
    session_id: str | None = None
    include_screenshot: bool = True
    max_elements: int | None = Field(default=None, ge=1, le=100_000)
    text_budget: int | None = Field(default=None, ge=256, le=48_000)
    #: the tree read's deadline in ms (default 1,500, or ``DESKPILOT_TREE_DEADLINE_MS``): what
    #: is read by then is the tree, marked partial (``TreeRead``); at most
    #: ``MAX_TREE_DEADLINE_MS``, well inside the host client's request timeout
    tree_deadline_ms: int | None = Field(default=None, ge=1, le=MAX_TREE_DEADLINE_MS)


class ExecuteAction(_Request):
    type: Literal["execute_action"] = "execute_action"
    session_id: str | None = None
    frame_id: str
    tree_version: str
    action: Action
    settle_ms: int | None = Field(default=None, ge=0, le=5_000)
    #: answer with the settled post-action observation (tree + screenshot) in the result,
    #: which then binds like an ``observe`` would: saves a round trip, and lets the host read
    #: the tree while it is still confirming that the app went quiet
    observe_after: bool = False


class CancelSession(_Request):
    type: Literal["cancel_session"] = "cancel_session"
    session_id: str


class Ping(_Request):
    type: Literal["ping"] = "ping"


Request = Annotated[
    GetCapabilities
    | RequestPermissions
    | ListWindows
    | CaptureWindow
    | Observe
    | ExecuteAction
    | CancelSession
    | Ping,
    Field(discriminator="type"),
]
REQUEST_ADAPTER: TypeAdapter[Request] = TypeAdapter(Request)
REQUEST_TYPES: tuple[str, ...] = (
    "get_capabilities",
    "request_permissions",
    "list_windows",
    "capture_window",
    "observe",
    "execute_action",
    "cancel_session",
    "ping",
)

# ------------------------------------------------------------------ responses


class _Response(WireModel):
    id: RequestId | None


class Capabilities(_Response):
    type: Literal["capabilities"] = "capabilities"
    protocol_version: int = PROTOCOL_VERSION
    host_version: str
    available: bool
    platform: Literal["linux"] = "linux"
    session_type: Literal["x11", "wayland", "unknown"] = "unknown"
    backends: Backends = Field(default_factory=Backends)
    permissions: Permissions = Field(default_factory=Permissions)
    unavailable_reason: str | None = None
    features: dict[str, bool] = Field(default_factory=dict)
    limits: dict[str, int] = Field(default_factory=dict)


class Windows(_Response):
    type: Literal["windows"] = "windows"
    windows: list[WindowInfo]
    ewmh: bool = False


class PointerPosition(WireModel):
    """Where the pointer is, in screen pixels (the root window's coordinates)."""

    x: int
    y: int


class CaptureResult(_Response):
    type: Literal["capture_result"] = "capture_result"
    #: the captured window; None for a screen capture
    window: WindowInfo | None = None
    image: ImageDescriptor
    capture_ms: float | None = None
    # -- only in the answer to an extended request (CaptureWindow.extended)
    #: where the picture is on screen (screen pixels): the window's on-screen part, or the
    #: whole screen
    rect: Rect | None = None
    pointer: PointerPosition | None = None
    #: the visible top-level windows the picture shows part of, topmost first, without their
    #: AT-SPI names: the live view refreshes their sensitive regions
    windows: list[WindowInfo] | None = None
    #: screen rectangles the host painted out before encoding: windows of apps that are
    #: never captured (protocol/privacy.py)
    withheld: list[Rect] | None = None


class OpaqueArea(WireModel):
    """A widget of the window that draws content it does not expose to accessibility
    (Thunar's icon view: its files are only pixels): the element it is shown under and where
    it is, in window coordinates. The kernel lists the text it shows under that element
    (kernel/opaque_text.py)."""

    element_id: int = Field(ge=1)
    rect: Rect


class ObservationBody(WireModel):
    """The observation proper; also embedded in an action result as its post-action state."""

    frame_id: str
    tree_version: str
    app: AppIdentity
    window: WindowInfo
    foreground_app: AppIdentity | None = None
    foreground_window: WindowInfo | None = None
    tree: str
    element_count: int
    truncation: Truncation = Field(default_factory=Truncation)
    tree_read: TreeRead = Field(default_factory=TreeRead)
    sensitive_regions: list[Rect] = Field(default_factory=list)
    #: the parts of the window other top-level windows lie over, in the same window
    #: coordinates as ``sensitive_regions``: the screenshot shows those windows' pixels there,
    #: and a point there is refused (``covered_point``); empty when nothing covers it
    covered_regions: list[Rect] = Field(default_factory=list)
    #: the mapped popups (menus, drop-down lists, tooltips: override-redirect windows) that
    #: lie over the window, in the same window coordinates, topmost first, clipped to the
    #: window: the screenshot shows their pixels there, and a visual (OCR) tree reads each as
    #: a section of its own rather than as the window's text (kernel/visual_tree.py)
    popup_regions: list[Rect] = Field(default_factory=list)
    #: widgets whose content only their pixels show, each under its element (topmost
    #: last); empty for most windows
    opaque_regions: list[OpaqueArea] = Field(default_factory=list)
    url: str | None = None  # a browser document's URL when the tree exposes it
    image: ImageDescriptor | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)


class Observation(_Response, ObservationBody):
    type: Literal["observation"] = "observation"


#: what ended an action's wait for the UI to settle (``ActionResult.wait_bound``)
WaitBound = Literal["event", "toolkit_gtk", "toolkit_none", "first_event", "pixels", "budget"]


class SelectedText(WireModel):
    """What an element has selected after ``select_text``, read back from it: characters
    ``start`` to ``end`` (end excluded) and at most the first 100 of them. Its text is
    never logged: the ledger keeps the range only (kernel/broker/records.py)."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str = Field(default="", max_length=101)


class ActionResult(_Response):
    type: Literal["action_result"] = "action_result"
    dispatched: bool
    method: Literal["semantic", "synthetic", "mixed", "none"]
    kind: str
    detail: str | None = None  # e.g. the AT-SPI action name used; never typed text
    settled: bool | None = None
    duration_ms: float | None = None
    #: the toolkit's delay: after a semantic action, ms from the app answering the call to its
    #: first accessibility event (GTK buttons: ≈ 250, their activate animation); None when
    #: the action was not semantic or the app reported no reaction (host/settle.py)
    toolkit_delay_ms: float | None = None
    #: what ended the wait for the UI to settle (host/settle.py): "event" (the app's events
    #: came, then none for 50 ms), "toolkit_gtk" (no event by the end of GTK 4's 250 ms
    #: activation and a 100 ms follow-up, and the app answered a later call), "toolkit_none"
    #: (a toolkit that reacts at once — GTK 3, Chromium — showed no reaction within its short
    #: window), "first_event" (another toolkit: no event within 600 ms of the call), "pixels"
    #: (no tree: the pixels held still), "budget" (``settleMs`` ran out first); None when
    #: there was no wait (no accessibility, ``settleMs`` 0)
    wait_bound: WaitBound | None = None
    observation: ObservationBody | None = None  # complete post-action state, when carried
    #: the desktop's top-level windows at that moment (only with ``observation``), so the
    #: caller sees a dialog or window the action opened without listing them again
    windows: list[WindowInfo] | None = None
    #: a click on a list, table or tree item: "select" (a single click selects it, it does
    #: not activate it), "activate" (count 2) or "toggle" (a single click on a check box
    #: cell flips it, as a person's does); None for every other action
    item_click: Literal["select", "activate", "toggle"] | None = None
    #: where the action aimed, in screen pixels: the element's extents in the tree the action
    #: was checked against, or a 1×1 rectangle at a positional action's point (a drag's
    #: start); None for keys and window focus. The ledger keeps it with the outcome, so the
    #: dashboard's live view can outline what the agent acted on
    target_bounds: Rect | None = None
    #: what the host saw of the action's effect where it checks one (text typed into a
    #: field: the field's text read back afterwards): "confirmed" (the effect is there),
    #: "unconfirmed" (it could not be seen: ``effect_note`` says why); None when nothing
    #: was checked. An agent is never told an effect it was not shown
    effect: Literal["confirmed", "unconfirmed"] | None = None
    #: why the effect is unconfirmed, in words for the agent; never the typed text
    effect_note: str | None = None
    #: ``select_text``: the selection the element has afterwards, read back (None: it has
    #: none, or it could not be read)
    selected: SelectedText | None = None


class Ack(_Response):
    type: Literal["ack"] = "ack"
    session_id: str | None = None


class Pong(_Response):
    type: Literal["pong"] = "pong"
    host_version: str | None = None
    pid: int | None = None


class ErrorResponse(_Response):
    type: Literal["error"] = "error"
    code: ErrorCode
    message: str
    retryable: bool = False
    details: dict[str, Any] | None = None


Response = Annotated[
    Capabilities
    | Windows
    | CaptureResult
    | Observation
    | ActionResult
    | Ack
    | Pong
    | ErrorResponse,
    Field(discriminator="type"),
]
RESPONSE_ADAPTER: TypeAdapter[Response] = TypeAdapter(Response)
RESPONSE_TYPES: tuple[str, ...] = (
    "capabilities",
    "windows",
    "capture_result",
    "observation",
    "action_result",
    "ack",
    "pong",
    "error",
)


# A response of these types is directly followed by a binary frame when it carries an image.
def carries_binary(response: dict[str, Any]) -> bool:
    t = response.get("type")
    if t == "capture_result":
        return True
    if t == "observation":
        return response.get("image") is not None
    if t == "action_result":
        obs = response.get("observation")
        return isinstance(obs, dict) and obs.get("image") is not None
    return False
