"""The accessibility client the host uses: list apps and frames, snapshot a tree, act.

``AtspiClient`` is the one object the host holds (its API: the package docstring and
docs/host-tree.md); it only composes the parts, each of which holds one thing:

* ``connections`` — the buses and each app's direct socket;
* ``apps`` — what is known of each app (name, toolkit, pid); ``frames`` — its top-level frames;
* ``tree_read`` — how each app's tree is read; ``snapshot`` — the steps of a snapshot;
  ``tree_cache`` — the trees kept between snapshots, and what the apps' events say of them;
* ``element_reads`` — what one element has now; ``operations`` — acting on it, over the
  action connections; ``app_events`` — the apps' events and settling.

The parts never import this module.
"""

from __future__ import annotations

from dbus_fast.aio import MessageBus

from deskpilot.host import settings
from deskpilot.host.atspi.app_events import AppEvents
from deskpilot.host.atspi.apps import Applications, AppStatus
from deskpilot.host.atspi.bus import ROOT_PATH, Conn
from deskpilot.host.atspi.combo import ComboParts
from deskpilot.host.atspi.connections import Connections, open_buses
from deskpilot.host.atspi.element_reads import ElementReads
from deskpilot.host.atspi.events import PageLoad
from deskpilot.host.atspi.frames import FrameLookup
from deskpilot.host.atspi.model import (
    AppInfo,
    ElementRef,
    FieldText,
    FrameInfo,
    NodeRef,
    SemanticOp,
    SemanticResult,
    TreeSnapshot,
)
from deskpilot.host.atspi.operations import Operations
from deskpilot.host.atspi.sheet_reads import CellNow
from deskpilot.host.atspi.snapshot import Snapshots, tree_version
from deskpilot.host.atspi.tree_cache import NOTE_SWITCHED_OFF, TreeCache
from deskpilot.host.atspi.tree_read import TreeReader
from deskpilot.host.atspi.vocab import Iface
from deskpilot.protocol.wire import Rect


class AtspiClient:
    """One connection to the accessibility bus (plus direct sockets to apps that offer them).

    Not thread-safe; use from one event loop.
    """

    def __init__(self, session: MessageBus, a11y: MessageBus) -> None:
        self._connections = Connections(session, a11y)
        self._a11y: Conn = self._connections.bus
        self._apps = Applications(self._a11y)
        self._frames = FrameLookup(self._a11y, self._apps)
        self._events = AppEvents(a11y)
        #: the kept trees and what events say of them (atspi/tree_cache.py); off with
        #: DESKPILOT_TREE_CACHE=0 (a switch for diagnosis: host/settings.py)
        self.tree_cache = TreeCache(self._events)
        self.tree_cache.enabled = settings.tree_cache_on()
        if not self.tree_cache.enabled:
            self.tree_cache.disabled_note = NOTE_SWITCHED_OFF
        self._snapshots = Snapshots(
            self._connections, self._apps, TreeReader(self._apps), self.tree_cache
        )
        self._reads = ElementReads(self._connections)
        self._ops = Operations(self._connections, self._events)

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def connect(cls, session_address: str | None = None) -> AtspiClient:
        """Find the accessibility bus through the session bus and switch accessibility on."""
        session, a11y = await open_buses(session_address)
        client = cls(session, a11y)
        # Registering for events also makes atk-bridge apps activate their Cache
        # (Cache.GetItems answers UnknownMethod before any listener exists).
        await client._events.start(wait_s=2.0)
        return client

    async def close(self) -> None:
        self._events.stop()
        await self._ops.close()
        self._connections.close()

    async def __aenter__(self) -> AtspiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _conn_for(self, bus: str) -> Conn:
        """The app's direct socket when it offers one, else the bus (tests read over it)."""
        return await self._connections.conn_for(bus)

    # ------------------------------------------------------------------ apps and frames

    async def applications(self) -> list[AppInfo]:
        return await self._apps.applications()

    async def application(self, bus_name: str) -> AppInfo | None:
        """One app's name, toolkit and pid (asked once, then remembered); None when it does
        not answer with them. Asks only that app: another app that is stopped costs nothing."""
        return await self._apps.info(bus_name, ROOT_PATH)

    async def app_statuses(self, wait_s: float) -> list[AppStatus]:
        """Every app on the bus as far as it answers within ``wait_s`` (see apps.py)."""
        return await self._apps.statuses(wait_s)

    def ask(self, pid: int | None, bus_name: str | None, since: float) -> None:
        """Leave a question open to an app that did not answer a read begun at ``since``
        (loop time) by its deadline (apps.py)."""
        self._apps.ask(pid, bus_name, since)

    async def still_silent(
        self, pid: int | None, bus_name: str | None, deadline_s: float, probe_s: float
    ) -> float | None:
        """How long (ms) the app has been silent, when it still does not answer in time;
        None when it answers (apps.py ``still_silent``)."""
        return await self._apps.still_silent(pid, bus_name, deadline_s, probe_s)

    async def frames(self, pid: int | None = None) -> list[FrameInfo]:
        """Top-level frames/windows/dialogs of every app (or of one process)."""
        return await self._frames.frames(pid)

    async def announced_frames(self, frame: FrameInfo) -> list[FrameInfo]:
        """The objects of ``frame``'s app that said they became showing or hidden (its kept
        events), as frames, other than ``frame``: Qt's popup menus are no children of their
        application, and this is how they can be found (host/popups.py)."""
        bus = frame.ref.bus_name
        paths = [p for p in self._events.shown_paths(bus) if p != frame.ref.path]
        app = await self._apps.info(bus, ROOT_PATH) if paths else None
        if app is None:
            return []
        return await self._frames.describe(app, [(bus, p) for p in paths])

    async def answering_frames(self, wait_s: float) -> list[FrameInfo]:
        """The top-level frames of the apps that answer within ``wait_s``."""
        return await self._frames.answering(wait_s)

    # ------------------------------------------------------------------ snapshot

    async def snapshot(
        self,
        root: NodeRef,
        *,
        max_elements: int = 2000,
        text_budget: int = 48_000,
        origin: tuple[int, int] | None = None,
        max_children: int = 500,
        deadline: float | None = None,
        after_action: bool = False,
    ) -> TreeSnapshot:
        """Read and render the subtree under ``root`` (usually a frame from :meth:`frames`).

        ``origin``: when given (the captured window's top-left in screen coordinates),
        ``sensitive_regions`` are relative to it, matching the screenshot; element extents
        stay in screen coordinates.

        ``deadline`` (``loop.time()``): what is read by then is the snapshot, marked
        ``partial`` when it is not all (see :mod:`.snapshot`); TimeoutError-backed
        ENVIRONMENT_UNAVAILABLE when not even the root answered.

        ``after_action``: the read that shows an action's effect (see ``TreeCache.plan``).
        """
        return await self._snapshots.snapshot(
            root,
            max_elements=max_elements,
            text_budget=text_budget,
            origin=origin,
            max_children=max_children,
            deadline=deadline,
            after_action=after_action,
        )

    # ------------------------------------------------------------------ one element, read now

    async def character_count(self, element: ElementRef) -> int | None:
        """How many characters the element's text has (None without a Text interface)."""
        return await self._reads.character_count(element)

    async def extents(self, element: ElementRef) -> Rect | None:
        """The element's current screen extents (None when it has no Component)."""
        return await self._reads.extents(element)

    async def link_target(self, element: ElementRef) -> str | None:
        """Where a link leads (``Hyperlink.GetURI(0)``); None when it has no Hyperlink."""
        return await self._reads.link_target(element)

    async def field_text(self, element: ElementRef, probe: int) -> FieldText:
        """The text field's text as it is now, for checking what typing did (see
        ``FieldText``); raises AtspiCallError when it has no Text or is gone."""
        return await self._reads.field_text(element, probe)

    async def value_now(self, element: ElementRef) -> str | float | None:
        """The element's text, else its number, read now (see ``ElementReads.value_now``)."""
        return await self._reads.value_now(element)

    async def selection(self, element: ElementRef) -> tuple[int, int, str] | None:
        """The element's selected range and (bounded) text now; None: nothing selected."""
        return await self._reads.selection(element)

    async def action_names(self, element: ElementRef) -> tuple[str, ...]:
        """All action names of the element, read now (blank names resolved one by one)."""
        return await self._reads.action_names(element)

    async def combo_parts(self, element: ElementRef) -> ComboParts | None:
        """The combo box ``element`` as it is now (options, popup state); see atspi/combo."""
        return await self._reads.combo_parts(element, await self._detached(element))

    async def combo_of_option(self, element: ElementRef) -> ComboParts | None:
        """The combo box whose popup list ``element`` is an option of, read now; None for
        an item of anything else."""
        return await self._reads.combo_of_option(element, await self._detached(element))

    async def _detached(self, element: ElementRef) -> bool:
        """Whether the element's app keeps a combo box's open list apart (Firefox)."""
        info = await self._apps.info(element.bus_name, ROOT_PATH)
        return info is not None and info.gecko

    async def live(self, element: ElementRef) -> ElementRef | None:
        """The element with the object that stands for it now (a sheet cell is a new object
        each time: atspi/cells.py); None when it is gone."""
        return await self._reads.live(element)

    async def cell(self, element: ElementRef) -> CellNow | None:
        """A sheet cell as it is now; None for other elements or when it is gone."""
        return await self._reads.cell(element)

    async def still_valid(self, element: ElementRef) -> bool:
        """The object still exists, is not defunct, and its bus name still belongs to its pid."""
        return await self._apps.still_valid(element)

    # ------------------------------------------------------------------ events

    async def settle(
        self,
        bus_name: str,
        since: float | None = None,
        *,
        first_ms: float = 600.0,
        quiet_ms: float = 50.0,
        max_ms: float = 1500.0,
    ) -> bool:
        """Wait until the app's accessibility events went quiet (see :mod:`.events`).

        ``since`` is a ``time.monotonic()`` taken just before the action.
        """
        return await self._events.settle(
            bus_name, since, first_ms=first_ms, quiet_ms=quiet_ms, max_ms=max_ms
        )

    async def events_ready(self) -> None:
        await self._events.ready()

    def last_event(self, bus_name: str) -> float:
        """When (monotonic) ``bus_name``'s last accessibility event arrived; 0.0 if never."""
        return self._events.last_event(bus_name)

    def went_quiet(self, bus_name: str, since: float, now: float, *, quiet_s: float) -> bool:
        """The settle rule of :mod:`.events`, with the given quiet interval."""
        return self._events.went_quiet(bus_name, since, now, quiet_s=quiet_s)

    def first_event_after(self, bus_name: str, since: float) -> float | None:
        """When ``bus_name``'s first accessibility event after ``since`` arrived; None if none."""
        return self._events.first_event_after(bus_name, since)

    async def next_event(self, bus_name: str, timeout: float) -> bool:
        """Wait up to ``timeout`` s for ``bus_name``'s next event (True if one came)."""
        return await self._events.next_event(bus_name, timeout)

    def page_load(self, bus_name: str, since: float) -> PageLoad:
        """What ``bus_name``'s events said of page loads since ``since`` (monotonic)."""
        return self._events.page_load(bus_name, since)

    # ------------------------------------------------------------------ actions

    async def perform(
        self,
        element: ElementRef,
        op: SemanticOp,
        *,
        settle: bool = True,
        settle_max_ms: float = 1500.0,
    ) -> SemanticResult:
        """Do ``op`` through AT-SPI. Raises DeskpilotError(UNSUPPORTED_ACTION) when the element
        cannot do it semantically (the caller falls back to synthetic input), STALE_TREE when
        the element is gone, ACTION_FAILED when the app refused."""
        return await self._ops.perform(element, op, settle=settle, settle_max_ms=settle_max_ms)


__all__ = ["AtspiClient", "Iface", "tree_version"]
