"""The accessibility client the host uses: list apps and frames, snapshot a tree, act."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from typing import Any, Final

from dbus_fast import Variant
from dbus_fast.aio import MessageBus

from deskpilot.host.atspi import collect
from deskpilot.host.atspi.action_conns import ActionConns
from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_ACTION,
    I_APPLICATION,
    I_COMPONENT,
    I_DOCUMENT,
    I_EDITABLE_TEXT,
    I_PROPERTIES,
    I_SELECTION,
    I_TABLE,
    I_TEXT,
    I_VALUE,
    REGISTRY,
    ROOT_PATH,
    AtspiCallError,
    Conn,
    a11y_address,
    connect_session,
    enable_accessibility,
)
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.combo import ComboParts, combo_of_option, read_combo
from deskpilot.host.atspi.events import EventWatcher
from deskpilot.host.atspi.model import (
    AppInfo,
    ElementRef,
    FrameInfo,
    NodeRef,
    OpKind,
    SemanticOp,
    SemanticResult,
    TreeSnapshot,
)
from deskpilot.host.atspi.render import RenderOptions, clean_name, is_hidden, render
from deskpilot.host.atspi.selection import ActFn, deselect_other_children, deselect_other_rows
from deskpilot.host.atspi.vocab import (
    ALWAYS_SHOWN_ROLES,
    CLICK_ACTIONS,
    DOCUMENT_ROLES,
    FRAME_ROLES,
    MAX_ACTIONS_SHOWN,
    R_PASSWORD_TEXT,
    SECONDARY_ACTIONS,
    Iface,
    State,
    bit,
    iface_names,
    is_noise_action,
    rendered_role,
    role_name,
    state_mask,
    state_names,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect, Truncation

COLD_START_RETRIES: Final = (0.1, 0.2, 0.3)  # seconds; bounded (≤ 0.6 s in all)
SNAPSHOT_TIMEOUT_S: Final = 10.0
CALL_TIMEOUT_S: Final = 5.0
ENRICH_FACTOR: Final = 3  # read details for at most max_elements × this many candidates
#: how far up select_child looks for a container with Selection (cell → row → grid → …)
SELECT_ANCESTOR_LEVELS: Final = 4

_UNSUPPORTED_ERRORS: Final = frozenset(
    {
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownProperty",
        "org.freedesktop.DBus.Error.NotSupported",
        "org.freedesktop.DBus.Error.InvalidArgs",
        "org.freedesktop.DBus.Error.PropertyReadOnly",
    }
)
_B_VISIBLE_ANY: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_B_FOCUSED: Final = bit(State.FOCUSED)
_STILL_RUNNING: Final = "the app has not returned from it yet (possibly a modal dialog)"


class AtspiClient:
    """One connection to the accessibility bus (plus direct sockets to apps that offer them).

    Not thread-safe; use from one event loop.
    """

    def __init__(self, session: MessageBus, a11y: MessageBus) -> None:
        self._session = session
        self._a11y = Conn(a11y)
        self._direct: dict[str, Conn | None] = {}
        # state-changing calls go on their own sockets (modal dialogs: see action_conns)
        self._actions = ActionConns(self._a11y)
        self._pids: dict[str, int] = {}
        self._apps: dict[str, AppInfo] = {}
        self._strategy: dict[str, str] = {}
        self._events = EventWatcher(a11y)
        self._events_ready: asyncio.Task[None] | None = None
        self._watchers: set[asyncio.Future[None]] = set()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def connect(cls, session_address: str | None = None) -> AtspiClient:
        """Find the accessibility bus through the session bus and switch accessibility on."""
        try:
            session = await connect_session(session_address)
        except Exception as exc:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE, f"no D-Bus session bus: {exc}"
            ) from exc
        try:
            with contextlib.suppress(Exception):
                await enable_accessibility(session)
            address = await a11y_address(session)
            a11y = await MessageBus(bus_address=address).connect()
        except Exception as exc:
            session.disconnect()
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE, f"no accessibility bus (org.a11y.Bus): {exc}"
            ) from exc
        client = cls(session, a11y)
        # Registering for events also makes atk-bridge apps activate their Cache
        # (Cache.GetItems answers UnknownMethod before any listener exists).
        client._events_ready = asyncio.ensure_future(client._events.start())
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(client._events_ready), 2.0)
        return client

    async def close(self) -> None:
        if self._events_ready is not None and not self._events_ready.done():
            self._events_ready.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._actions.close(), 3.0)
        for conn in self._direct.values():
            if conn is not None:
                conn.close()
        self._direct.clear()
        for w in self._watchers:
            w.cancel()
        self._watchers.clear()
        self._a11y.close()
        with contextlib.suppress(Exception):
            self._session.disconnect()

    async def __aenter__(self) -> AtspiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ apps and frames

    async def applications(self) -> list[AppInfo]:
        body = await self._a11y.call(REGISTRY, ROOT_PATH, I_ACCESSIBLE, "GetChildren")
        refs = [(str(b), str(p)) for b, p in body[0]]
        infos = await asyncio.gather(*(self._app_info(b, p) for b, p in refs))
        return [i for i in infos if i is not None]

    async def _app_info(self, bus: str, path: str) -> AppInfo | None:
        if bus in self._apps:
            return self._apps[bus]
        res = await self._a11y.batch(
            [
                (bus, path, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")),
                (bus, path, I_PROPERTIES, "Get", "ss", (I_APPLICATION, "ToolkitName")),
                (bus, path, I_PROPERTIES, "Get", "ss", (I_APPLICATION, "Version")),
            ]
        )
        if isinstance(res[0], AtspiCallError):
            return None
        pid = await self._pid(bus)
        if pid is None:
            return None

        def val(r: Any) -> str | None:
            return None if isinstance(r, AtspiCallError) else str(r[0].value)

        info = AppInfo(
            name=val(res[0]) or "",
            pid=pid,
            bus_name=bus,
            path=path,
            toolkit=val(res[1]),
            toolkit_version=val(res[2]),
        )
        self._apps[bus] = info
        return info

    async def _pid(self, bus: str) -> int | None:
        if bus in self._pids:
            return self._pids[bus]
        try:
            body = await self._a11y.call(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetConnectionUnixProcessID",
                "s",
                (bus,),
            )
        except AtspiCallError:
            return None
        pid = int(body[0])
        self._pids[bus] = pid
        return pid

    async def frames(self, pid: int | None = None) -> list[FrameInfo]:
        """Top-level frames/windows/dialogs of every app (or of one process)."""
        apps = await self.applications()
        if pid is not None:
            apps = [a for a in apps if a.pid == pid]
        per_app = await asyncio.gather(*(self._frames_of(a) for a in apps))
        return [f for fs in per_app for f in fs]

    async def _frames_of(self, app: AppInfo) -> list[FrameInfo]:
        try:
            body = await self._a11y.call(app.bus_name, app.path, I_ACCESSIBLE, "GetChildren")
        except AtspiCallError:
            return []
        refs = [(str(b) or app.bus_name, str(p)) for b, p in body[0]]
        calls: list[Any] = []
        for b, p in refs:
            calls += [
                (b, p, I_ACCESSIBLE, "GetRole", "", ()),
                (b, p, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")),
                (b, p, I_ACCESSIBLE, "GetState", "", ()),
                (b, p, I_COMPONENT, "GetExtents", "u", (0,)),
            ]
        res = await self._a11y.batch(calls)
        out: list[FrameInfo] = []
        for k, (b, p) in enumerate(refs):
            role, name, st, ext = res[4 * k : 4 * k + 4]
            if isinstance(role, AtspiCallError) or int(role[0]) not in FRAME_ROLES:
                continue
            extents = None
            if not isinstance(ext, AtspiCallError):
                x, y, w, h = ext[0]
                extents = Rect(x=int(x), y=int(y), width=int(w), height=int(h))
            out.append(
                FrameInfo(
                    ref=NodeRef(b, p),
                    pid=app.pid,
                    app_name=app.name,
                    title="" if isinstance(name, AtspiCallError) else str(name[0].value),
                    role=rendered_role(int(role[0])),
                    atspi_role=role_name(int(role[0])),
                    extents=extents,
                    states=state_names(0 if isinstance(st, AtspiCallError) else state_mask(st[0])),
                )
            )
        return out

    # ------------------------------------------------------------------ connections

    async def _conn_for(self, bus: str) -> Conn:
        """The app's direct socket when it offers one, else the bus."""
        if bus in self._direct:
            conn = self._direct[bus]
            if conn is None:
                return self._a11y
            if conn.connected:
                return conn
            del self._direct[bus]
        direct: Conn | None = None
        try:
            body = await self._a11y.call(bus, ROOT_PATH, I_APPLICATION, "GetApplicationBusAddress")
            address = str(body[0])
            if address:
                bus_ = await asyncio.wait_for(MessageBus(bus_address=address).connect(), 2.0)
                direct = Conn(bus_, direct=True)
                # the app exiting ends this connection with EOFError: expected, not an error
                self._watchers.add(
                    asyncio.ensure_future(_quietly(bus_.wait_for_disconnect()))  # type: ignore[no-untyped-call]
                )
        except AtspiCallError as exc:
            if exc.gone:
                raise
        except Exception:
            direct = None
        self._direct[bus] = direct
        return direct or self._a11y

    # ------------------------------------------------------------------ snapshot

    async def snapshot(
        self,
        root: NodeRef,
        *,
        max_elements: int = 2000,
        text_budget: int = 48_000,
        origin: tuple[int, int] | None = None,
        max_children: int = 500,
    ) -> TreeSnapshot:
        """Read and render the subtree under ``root`` (usually a frame from :meth:`frames`).

        ``origin``: when given (the captured window's top-left in screen coordinates),
        ``sensitive_regions`` are relative to it, matching the screenshot; element extents
        stay in screen coordinates.
        """
        try:
            async with asyncio.timeout(SNAPSHOT_TIMEOUT_S):
                return await self._snapshot(root, max_elements, text_budget, origin, max_children)
        except TimeoutError as exc:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                "the application did not answer accessibility calls in time",
                retryable=True,
            ) from exc
        except AtspiCallError as exc:
            if exc.gone:
                raise DeskpilotError(
                    ErrorCode.TARGET_NOT_FOUND, "the window's accessible object is gone"
                ) from exc
            raise DeskpilotError(ErrorCode.INTERNAL_ERROR, f"AT-SPI: {exc.name}") from exc

    async def _snapshot(
        self,
        root: NodeRef,
        max_elements: int,
        text_budget: int,
        origin: tuple[int, int] | None,
        max_children: int,
    ) -> TreeSnapshot:
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        bus = root.bus_name
        conn = await self._conn_for(bus)
        info = await self._app_info(bus, ROOT_PATH)
        pid = info.pid if info else await self._pid(bus)
        limit = max(max_elements * 8, 4000)
        nodes, strategy = await self._read(conn, root, limit, max_children)
        for delay in COLD_START_RETRIES:
            if len(nodes) > 1 or (
                nodes and nodes[0].child_count == 0 and nodes[0].role not in FRAME_ROLES
            ):
                break
            await asyncio.sleep(delay)
            nodes, strategy = await self._read(conn, root, limit, max_children)
        if not nodes:
            raise AtspiCallError("org.freedesktop.DBus.Error.UnknownObject", root.path)
        timings["read"] = (time.perf_counter() - t0) * 1000
        t1 = time.perf_counter()
        todo = _detail_candidates(nodes, max_elements * ENRICH_FACTOR)
        blank_names = bool(info and info.toolkit and info.toolkit.lower().startswith("chrom"))
        await collect.enrich(conn, nodes, todo, blank_names)
        timings["detail"] = (time.perf_counter() - t1) * 1000
        t2 = time.perf_counter()
        gtk4 = bool(info and info.toolkit == "GTK" and (info.toolkit_version or "").startswith("4"))
        opts = RenderOptions(
            max_elements=max_elements,
            text_budget=text_budget,
            max_children=max_children,
            gtk4_names=gtk4,
        )
        out = render(nodes, opts)
        timings["render"] = (time.perf_counter() - t2) * 1000
        t3 = time.perf_counter()
        # interfaces for shown elements the strategy did not provide, extents of secure ones
        shown = [ni for ni, _ in out.elements.values()]
        # (only where an agent acts: other elements get theirs when perform needs them)
        unknown = [
            ni
            for ni in shown
            if nodes[ni].ifaces == collect.UNKNOWN
            and (
                nodes[ni].role in ALWAYS_SHOWN_ROLES
                or nodes[ni].states & _B_FOCUSED
                or nodes[ni].actions
            )
        ]
        secure = [out.elements[i][0] for i in out.secure_ids]
        await asyncio.gather(
            collect.read_interfaces(conn, nodes, unknown) if unknown else _noop(),
            collect.read_extents(conn, nodes, secure) if secure else _noop(),
        )
        url = await self._document_url(conn, nodes, shown)
        timings["finish"] = (time.perf_counter() - t3) * 1000
        elements: dict[int, ElementRef] = {}
        for eid, (ni, parent_id) in out.elements.items():
            n = nodes[ni]
            elements[eid] = ElementRef(
                id=eid,
                ref=NodeRef(n.bus, n.path),
                pid=pid or 0,
                role=rendered_role(n.role),
                atspi_role=n.role,
                name=clean_name(n, gtk4),
                states=_states(n.states),
                interfaces=_ifaces(max(n.ifaces, 0)),
                actions=n.actions or (),
                extents=_rect(n.extents),
                secure=n.role == R_PASSWORD_TEXT,
                parent_id=parent_id,
                index_in_parent=n.index if n.index >= 0 else None,
            )
        regions: list[Rect] = []
        for ni in secure:
            e = nodes[ni].extents
            if e is not None:
                ox, oy = origin or (0, 0)
                regions.append(Rect(x=e[0] - ox, y=e[1] - oy, width=e[2], height=e[3]))
        truncation = Truncation(
            omitted_elements=out.omitted,
            elided_children=out.elided,
            noise_dropped=out.noise,
            element_cap_hit=out.cap_hit,
            text_budget_hit=out.budget_hit,
        )
        timings["total"] = (time.perf_counter() - t0) * 1000
        return TreeSnapshot(
            text=out.text,
            tree_version=tree_version(out.text, out.element_count),
            element_count=out.element_count,
            elements=elements,
            truncation=truncation,
            sensitive_regions=regions,
            url=url,
            focused_id=out.focused_id,
            root=root,
            pid=pid,
            strategy=strategy,
            node_count=len(nodes),
            timings_ms=timings,
        )

    async def _read(
        self, conn: Conn, root: NodeRef, limit: int, max_children: int
    ) -> tuple[list[RawNode], str]:
        """Cache when it covers the subtree; else Collection (atk-bridge); else a walk.

        What a cache misses is read per subtree: GTK4 exports objects lazily (a walk of the
        missing part exports them, so the next snapshot is served from the cache alone);
        atk-bridge leaves MANAGES_DESCENDANTS children out of it and, in Chromium, most of
        the web content: an app whose cache missed a subtree and that has Collection is read
        with Collection from then on.
        """
        bus = root.bus_name
        strategy = self._strategy.get(bus)
        info = self._apps.get(bus)
        if strategy is None and info and (info.toolkit or "").lower().startswith("chrom"):
            strategy = "collection"  # its cache never holds the web content
        if strategy is None or strategy == "cache":
            items = await collect.read_cache(conn, bus)
            if items is None:
                strategy = self._strategy[bus] = "nocache"
            else:
                nodes, incomplete = collect.from_cache(items, root.path, limit)
                if nodes and not incomplete:
                    self._strategy[bus] = "cache"
                    return nodes, "cache"
                if nodes and await collect.has_collection(conn, bus, root.path):
                    # atk-bridge: the cache holds only part of the tree; Collection has it all
                    strategy = self._strategy[bus] = "collection"
                elif nodes and len(incomplete) <= 64:
                    self._strategy[bus] = "cache"
                    subs = await asyncio.gather(
                        *(
                            collect.read_walk(conn, bus, nodes[i].path, limit, max_children)
                            for i in incomplete
                        )
                    )
                    return collect.graft(nodes, dict(zip(incomplete, subs, strict=True))), "cache"
        if strategy == "collection" or await collect.has_collection(conn, bus, root.path):
            self._strategy[bus] = "collection"
            try:
                return await collect.read_collection(conn, bus, root.path, limit), "collection"
            except AtspiCallError as exc:
                if exc.gone:
                    raise
        return await collect.read_walk(conn, bus, root.path, limit, max_children), "walk"

    async def _document_url(self, conn: Conn, nodes: list[RawNode], shown: list[int]) -> str | None:
        for ni in shown:
            n = nodes[ni]
            if n.role in DOCUMENT_ROLES:
                try:
                    body = await conn.call(n.bus, n.path, I_DOCUMENT, "GetAttributes")
                except AtspiCallError:
                    return None
                attrs = body[0]
                for key in ("DocURL", "URI", "URL", "docurl", "uri"):
                    if attrs.get(key):
                        return str(attrs[key])
                return None
        return None

    async def character_count(self, element: ElementRef) -> int | None:
        """How many characters the element's text has (None without a Text interface)."""
        conn = await self._conn_for(element.bus_name)
        try:
            body = await conn.call(
                element.bus_name,
                element.path,
                I_PROPERTIES,
                "Get",
                "ss",
                (I_TEXT, "CharacterCount"),
            )
        except AtspiCallError:
            return None
        value = body[0].value if hasattr(body[0], "value") else body[0]
        return int(value)

    async def extents(self, element: ElementRef) -> Rect | None:
        """The element's current screen extents (None when it has no Component)."""
        conn = await self._conn_for(element.bus_name)
        try:
            body = await conn.call(
                element.bus_name, element.path, I_COMPONENT, "GetExtents", "u", (0,)
            )
        except AtspiCallError:
            return None
        x, y, w, h = body[0]
        return Rect(x=int(x), y=int(y), width=int(w), height=int(h))

    # ------------------------------------------------------------------ staleness

    async def still_valid(self, element: ElementRef) -> bool:
        """The object still exists, is not defunct, and its bus name still belongs to its pid.

        The two questions go out at once (the app answers one, the bus daemon the other)."""
        self._pids.pop(element.bus_name, None)
        state, pid = await asyncio.gather(
            self._a11y.call(element.bus_name, element.path, I_ACCESSIBLE, "GetState"),
            self._pid(element.bus_name),
            return_exceptions=True,
        )
        if isinstance(state, BaseException):
            if isinstance(state, AtspiCallError):
                return False
            raise state
        if isinstance(pid, BaseException):
            raise pid
        if state_mask(state[0]) & bit(State.DEFUNCT):
            return False
        return pid is not None and pid == element.pid

    # ------------------------------------------------------------------ actions

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
        if self._events_ready is not None:
            with contextlib.suppress(Exception):
                await self._events_ready
        return await self._events.wait_quiet(
            bus_name,
            time.monotonic() if since is None else since,
            first_ms=first_ms,
            quiet_ms=quiet_ms,
            max_ms=max_ms,
        )

    async def events_ready(self) -> None:
        if self._events_ready is not None:
            with contextlib.suppress(Exception):
                await self._events_ready

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
        if self._events_ready is not None and settle:
            with contextlib.suppress(Exception):
                await self._events_ready
        t0 = time.perf_counter()
        since = time.monotonic()
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                conn = await self._conn_for(element.bus_name)
                detail = await self._do(conn, element, op)
        except TimeoutError as exc:
            raise DeskpilotError(
                ErrorCode.ACTION_TIMEOUT, f"{op.kind.value}: the app did not answer"
            ) from exc
        except AtspiCallError as exc:
            if exc.gone:
                raise DeskpilotError(
                    ErrorCode.STALE_TREE, "the element no longer exists", retryable=True
                ) from exc
            if exc.name in _UNSUPPORTED_ERRORS:
                raise _unsupported(op, element, exc.name) from exc
            raise DeskpilotError(ErrorCode.ACTION_FAILED, f"{op.kind.value}: {exc.name}") from exc
        settled: bool | None = None
        if settle:
            settled = await self.settle(element.bus_name, since, max_ms=settle_max_ms)
        return SemanticResult(
            kind=op.kind,
            detail=detail,
            settled=settled,
            duration_ms=(time.perf_counter() - t0) * 1000,
        )

    async def combo_parts(self, element: ElementRef) -> ComboParts | None:
        """The combo box ``element`` as it is now (options, popup state); see atspi/combo."""
        conn = await self._conn_for(element.bus_name)
        return await read_combo(conn, element.ref)

    async def combo_of_option(self, element: ElementRef) -> ComboParts | None:
        """The combo box whose popup list ``element`` is an option of, read now; None for
        an item of anything else."""
        conn = await self._conn_for(element.bus_name)
        combo = await combo_of_option(conn, element.ref)
        return None if combo is None else await read_combo(conn, combo)

    async def _interfaces(self, conn: Conn, element: ElementRef) -> frozenset[str]:
        if element.interfaces:
            return element.interfaces
        body = await conn.call(element.bus_name, element.path, I_ACCESSIBLE, "GetInterfaces")
        return frozenset(str(n).rsplit(".", 1)[-1] for n in body[0])

    async def action_names(self, element: ElementRef) -> tuple[str, ...]:
        """All action names of the element, read now (blank names resolved one by one)."""
        conn = await self._conn_for(element.bus_name)
        return await self._action_names(conn, element)

    async def _action_names(self, conn: Conn, element: ElementRef) -> tuple[str, ...]:
        body = await conn.call(element.bus_name, element.path, I_ACTION, "GetActions")
        names = [str(a[0]) for a in body[0][:MAX_ACTIONS_SHOWN]]
        blank = [i for i, n in enumerate(names) if not n]
        if blank:
            res = await conn.batch(
                [(element.bus_name, element.path, I_ACTION, "GetName", "i", (i,)) for i in blank]
            )
            for i, r in zip(blank, res, strict=True):
                if not isinstance(r, AtspiCallError):
                    names[i] = str(r[0])
        return tuple(names)

    async def _do(self, conn: Conn, el: ElementRef, op: SemanticOp) -> str:
        b, p = el.bus_name, el.path
        ifaces = await self._interfaces(conn, el)
        kind = op.kind
        if kind in (OpKind.INVOKE, OpKind.SECONDARY):
            if "Action" not in ifaces:
                raise _unsupported(op, el, "no Action interface")
            names = await self._action_names(conn, el)
            index = _pick_action(names, op)
            if index is None:
                raise _unsupported(op, el, "no matching action", available=list(names))
            body = await self._act(conn, el, I_ACTION, "DoAction", "i", (index,))
            if body is None:
                return f"action {names[index]!r}; {_STILL_RUNNING}"
            if not body[0]:
                raise _unsupported(op, el, f"DoAction({names[index]!r}) returned false")
            return f"action {names[index]!r}"
        if kind in (OpKind.SET_TEXT, OpKind.INSERT_TEXT) or (
            kind == OpKind.SET_VALUE and not _numeric(op.value)
        ):
            text = op.text if kind != OpKind.SET_VALUE else str(op.value)
            if text is None:
                raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"{kind.value} needs text")
            if "EditableText" not in ifaces or (el.secure and kind == OpKind.SET_VALUE):
                raise _unsupported(op, el, "no EditableText interface")
            if kind == OpKind.INSERT_TEXT:
                pos = await self._caret_or_end(conn, el)
                body = await self._act(
                    conn, el, I_EDITABLE_TEXT, "InsertText", "isi", (pos, text, len(text.encode()))
                )
                detail = "EditableText.InsertText"
            else:
                body = await self._act(conn, el, I_EDITABLE_TEXT, "SetTextContents", "s", (text,))
                detail = "EditableText.SetTextContents"
            if body is None:
                return f"{detail}; {_STILL_RUNNING}"
            if not body[0]:
                raise _unsupported(op, el, f"{detail} returned false")
            return detail
        if kind == OpKind.SET_VALUE:
            if "Value" not in ifaces:
                raise _unsupported(op, el, "no Value interface")
            assert op.value is not None
            body = await self._act(
                conn,
                el,
                I_PROPERTIES,
                "Set",
                "ssv",
                (I_VALUE, "CurrentValue", Variant("d", float(op.value))),
            )
            return (
                "Value.CurrentValue"
                if body is not None
                else f"Value.CurrentValue; {_STILL_RUNNING}"
            )
        if kind == OpKind.SELECT_TEXT:
            if "Text" not in ifaces:
                raise _unsupported(op, el, "no Text interface")
            start, end = op.start or 0, op.end if op.end is not None else 0
            n_sel = await conn.call(b, p, I_TEXT, "GetNSelections")
            if int(n_sel[0]) > 0:
                body = await self._act(conn, el, I_TEXT, "SetSelection", "iii", (0, start, end))
            else:
                body = await self._act(conn, el, I_TEXT, "AddSelection", "ii", (start, end))
            if body is None:
                return f"Text selection; {_STILL_RUNNING}"
            if not body[0]:
                raise _unsupported(op, el, "selection refused")
            return "Text selection"
        if kind == OpKind.GRAB_FOCUS:
            if "Component" not in ifaces:
                raise _unsupported(op, el, "no Component interface")
            body = await self._act(conn, el, I_COMPONENT, "GrabFocus")
            if body is None:
                return f"Component.GrabFocus; {_STILL_RUNNING}"
            if not body[0]:
                raise _unsupported(op, el, "GrabFocus returned false")
            return "Component.GrabFocus"
        if kind == OpKind.SCROLL_TO:
            if "Component" not in ifaces:
                raise _unsupported(op, el, "no Component interface")
            await self._act(conn, el, I_COMPONENT, "ScrollTo", "u", (6,))  # ANYWHERE
            return "Component.ScrollTo"
        if kind == OpKind.SELECT_CHILD:
            return await self._select_child(conn, el, op)
        if kind == OpKind.CHOOSE_OPTION:
            if "Selection" not in ifaces or op.index is None:
                raise _unsupported(op, el, "no Selection interface")
            body = await self._act(conn, el, I_SELECTION, "SelectChild", "i", (op.index,))
            if body is not None and not body[0]:
                raise _unsupported(op, el, "SelectChild returned false")
            done = "Selection.SelectChild on the combo box"
            return done if body is not None else f"{done}; {_STILL_RUNNING}"
        raise _unsupported(op, el, "unknown operation")

    async def _act(
        self,
        conn: Conn,
        el: ElementRef,
        iface: str,
        member: str,
        signature: str = "",
        body: tuple[Any, ...] = (),
        *,
        path: tuple[str, str] | None = None,
    ) -> list[Any] | None:
        """A state-changing call, on an action connection (never ``conn``, which reads trees,
        when the app offers private sockets). None: delivered, and the app has not returned
        from it within ``ACTION_REPLY_WAIT_S`` — it counts as dispatched."""
        b, p = path if path is not None else (el.bus_name, el.path)
        return await self._actions.call(b, el.pid, conn, p, iface, member, signature, body)

    async def _select_child(self, conn: Conn, el: ElementRef, op: SemanticOp) -> str:
        """Select the element through the nearest ancestor that implements Selection.

        A table cell whose parent is a Table is selected as GTK selects it on a click: the
        table selects the cell's row (``Table.AddRowSelection``; a GTK3 tree view refuses
        ``SelectChild`` on its cells). Otherwise the container selects its child on the path
        to the element (the row of a cell, say). Raises UNSUPPORTED_ACTION when no ancestor
        within ``SELECT_ANCESTOR_LEVELS`` has Selection, or the container refuses."""
        b, p = el.bus_name, el.path
        for level in range(SELECT_ANCESTOR_LEVELS):
            props = await conn.get_all(b, p, I_ACCESSIBLE)
            parent = props.get("Parent")
            if not parent or parent[1] in ("/org/a11y/atspi/null", ROOT_PATH):
                break
            idx = await conn.call(b, p, I_ACCESSIBLE, "GetIndexInParent")
            pb, pp = (str(parent[0]) or b), str(parent[1])
            ifs = (await conn.call(pb, pp, I_ACCESSIBLE, "GetInterfaces"))[0]
            index = int(idx[0])
            if level == 0 and I_TABLE in ifs and el.role == "cell":
                done = await self._select_row_of_cell(conn, el, (pb, pp), index)
                if done is not None:
                    return done
            if I_SELECTION in ifs:
                cleared = await deselect_other_children(
                    conn, self._act_on(conn, el), (pb, pp), index
                )
                body = await self._act(
                    conn, el, I_SELECTION, "SelectChild", "i", (index,), path=(pb, pp)
                )
                done = (
                    "Selection.ClearSelection, SelectChild" if cleared else "Selection.SelectChild"
                )
                if body is None:
                    return f"{done}; {_STILL_RUNNING}"
                if not body[0]:
                    raise _unsupported(op, el, "SelectChild returned false")
                return done
            b, p = pb, pp
        raise _unsupported(op, el, "no ancestor with a Selection interface")

    async def _select_row_of_cell(
        self, conn: Conn, el: ElementRef, table: tuple[str, str], index: int
    ) -> str | None:
        """The table selects the row of its child cell ``index``; None when it will not (the
        caller tries the table's Selection next)."""
        tb, tp = table
        row = int((await conn.call(tb, tp, I_TABLE, "GetRowAtIndex", "i", (index,)))[0])
        if row < 0:
            return None
        try:
            selected = bool((await conn.call(tb, tp, I_TABLE, "IsRowSelected", "i", (row,)))[0])
        except AtspiCallError as exc:
            if exc.gone:
                raise
            selected = False
        removed = await deselect_other_rows(conn, self._act_on(conn, el), table, row)
        also = f" (and removed {removed} other selected rows)" if removed else ""
        if selected:
            # GTK3 answers AddRowSelection with false for a row that is already selected
            return f"Table: the row was already selected{also}"
        ok = await self._act(conn, el, I_TABLE, "AddRowSelection", "i", (row,), path=table)
        if ok is None:
            return f"Table.AddRowSelection{also}; {_STILL_RUNNING}"
        return f"Table.AddRowSelection{also}" if ok[0] else None

    def _act_on(self, conn: Conn, el: ElementRef) -> ActFn:
        """``_act`` for calls on another object of ``el``'s app (its container)."""

        async def act(
            path: tuple[str, str], iface: str, member: str, sig: str, body: tuple[Any, ...]
        ) -> list[Any] | None:
            return await self._act(conn, el, iface, member, sig, body, path=path)

        return act

    async def _caret_or_end(self, conn: Conn, el: ElementRef) -> int:
        """Where typing would land: the caret of a focused field, else the end of the text
        (an unfocused field's caret is wherever it was last left)."""
        props = await conn.get_all(el.bus_name, el.path, I_TEXT)
        end = int(props.get("CharacterCount", 0))
        caret = int(props.get("CaretOffset", -1))
        state = await conn.call(el.bus_name, el.path, I_ACCESSIBLE, "GetState")
        focused = bool(state_mask(state[0]) & _B_FOCUSED)
        return caret if focused and 0 <= caret <= end else end


# ---------------------------------------------------------------------------- helpers


def tree_version(text: str, element_count: int) -> str:
    """Content hash of the rendered text and the element count: same UI, same version."""
    h = hashlib.sha256()
    h.update(f"{element_count}\n".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


def _detail_candidates(nodes: list[RawNode], cap: int) -> list[int]:
    hidden = [False] * len(nodes)
    out: list[int] = []
    for i, n in enumerate(nodes):
        p = n.parent
        if p >= 0 and (hidden[p] or is_hidden(n, nodes[p])):
            hidden[i] = True
            continue
        if collect.needs_detail(n, i == 0):
            out.append(i)
            if len(out) >= cap:
                break
    return out


_STATE_CACHE: dict[int, frozenset[str]] = {}
_IFACE_CACHE: dict[int, frozenset[str]] = {}


def _states(mask: int) -> frozenset[str]:
    s = _STATE_CACHE.get(mask)
    if s is None:
        s = _STATE_CACHE[mask] = state_names(mask)
    return s


def _ifaces(mask: int) -> frozenset[str]:
    s = _IFACE_CACHE.get(mask)
    if s is None:
        s = _IFACE_CACHE[mask] = iface_names(mask)
    return s


def _rect(e: tuple[int, int, int, int] | None) -> Rect | None:
    return None if e is None else Rect(x=e[0], y=e[1], width=e[2], height=e[3])


def _numeric(v: float | str | None) -> bool:
    if isinstance(v, int | float):
        return True
    try:
        float(str(v))
    except (TypeError, ValueError):
        return False
    return True


def _pick_action(names: tuple[str, ...], op: SemanticOp) -> int | None:
    lowered = [n.lower() for n in names]
    if op.kind == OpKind.SECONDARY:
        for want in SECONDARY_ACTIONS:
            if want.lower() in lowered:
                return lowered.index(want.lower())
        return None
    if op.action:
        if op.action in names:
            return names.index(op.action)
        if op.action.lower() in lowered:
            return lowered.index(op.action.lower())
        # the tree shortens long action names with "…": a unique prefix names one action
        prefix = op.action.rstrip("…").rstrip(".").strip().lower()
        if len(prefix) >= 3:
            matches = [i for i, n in enumerate(lowered) if n.startswith(prefix)]
            if len(matches) == 1:
                return matches[0]
        return None
    for want in CLICK_ACTIONS:
        if want in lowered:
            return lowered.index(want)
    usable = [i for i, n in enumerate(names) if not is_noise_action(n)]
    if len(usable) == 1:
        return usable[0]
    for fallback in ("clickancestor", "dodefault"):
        if fallback in lowered:
            return lowered.index(fallback)
    return None


def _unsupported(
    op: SemanticOp, el: ElementRef, why: str, *, available: list[str] | None = None
) -> DeskpilotError:
    details: dict[str, Any] = {"op": op.kind.value, "role": el.role, "reason": why}
    if available is not None:
        details["actions"] = available[:MAX_ACTIONS_SHOWN]
    return DeskpilotError(
        ErrorCode.UNSUPPORTED_ACTION,
        f"{op.kind.value} is not available semantically on this {el.role}: {why}",
        details=details,
    )


async def _noop() -> None:
    return None


async def _quietly(aw: Any) -> None:
    with contextlib.suppress(BaseException):
        await aw


__all__ = ["AtspiClient", "Iface", "tree_version"]
