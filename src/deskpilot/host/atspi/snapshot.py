"""A tree snapshot in four timed steps: read, details, render, finish.

Reading every node's every property would cost a round trip per property per node, so the
steps narrow down as they go (docs/host-tree.md, "How the tree is read"): the *read* gets the
shape of the whole tree, *details* are read only for nodes that can be shown, *render* decides
what is shown, and *finish* reads the little that only shown elements need (interfaces the
strategy did not give, extents of secure fields, the document's URL). Each step's time is in
``TreeSnapshot.timings_ms``.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Final

from deskpilot.host.atspi import collect
from deskpilot.host.atspi.apps import Applications
from deskpilot.host.atspi.bus import I_DOCUMENT, ROOT_PATH, AtspiCallError, Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.connections import Connections
from deskpilot.host.atspi.model import AppInfo, ElementRef, NodeRef, TreeSnapshot
from deskpilot.host.atspi.render import Rendered, RenderOptions, clean_name, is_hidden, render
from deskpilot.host.atspi.tree_read import TreeReader
from deskpilot.host.atspi.vocab import (
    ALWAYS_SHOWN_ROLES,
    DOCUMENT_ROLES,
    FRAME_ROLES,
    R_PASSWORD_TEXT,
    State,
    bit,
    iface_names,
    rendered_role,
    state_names,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect, Truncation

COLD_START_RETRIES: Final = (0.1, 0.2, 0.3)  # seconds; bounded (≤ 0.6 s in all)
SNAPSHOT_TIMEOUT_S: Final = 10.0
ENRICH_FACTOR: Final = 3  # read details for at most max_elements × this many candidates

_B_FOCUSED: Final = bit(State.FOCUSED)


class Snapshots:
    """Takes snapshots over the app's connection, with what is known of the app."""

    def __init__(self, connections: Connections, apps: Applications, reader: TreeReader) -> None:
        self._connections = connections
        self._apps = apps
        self._reader = reader

    async def snapshot(
        self,
        root: NodeRef,
        *,
        max_elements: int,
        text_budget: int,
        origin: tuple[int, int] | None,
        max_children: int,
    ) -> TreeSnapshot:
        """The subtree under ``root``, bounded in time; AT-SPI errors become DeskpilotError."""
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
        conn = await self._connections.conn_for(root.bus_name)
        info = await self._apps.info(root.bus_name, ROOT_PATH)
        pid = info.pid if info else await self._apps.pid(root.bus_name)
        nodes, strategy = await self._read(conn, root, max(max_elements * 8, 4000), max_children)
        timings["read"] = _ms_since(t0)
        t1 = time.perf_counter()
        await _read_details(conn, nodes, info, max_elements)
        timings["detail"] = _ms_since(t1)
        t2 = time.perf_counter()
        gtk4 = bool(info and info.toolkit == "GTK" and (info.toolkit_version or "").startswith("4"))
        opts = RenderOptions(
            max_elements=max_elements,
            text_budget=text_budget,
            max_children=max_children,
            gtk4_names=gtk4,
        )
        out = render(nodes, opts)
        timings["render"] = _ms_since(t2)
        t3 = time.perf_counter()
        secure, url = await _finish(conn, nodes, out)
        timings["finish"] = _ms_since(t3)
        elements = _elements(nodes, out, pid or 0, gtk4)
        regions = _sensitive_regions(nodes, secure, origin)
        truncation = _truncation(out)
        timings["total"] = _ms_since(t0)
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
        """The tree's nodes, read again (``COLD_START_RETRIES``) while an app that has just
        started shows only its root; raises UnknownObject when there is not even that."""
        nodes, strategy = await self._reader.read(conn, root, limit, max_children)
        for delay in COLD_START_RETRIES:
            if len(nodes) > 1 or (
                nodes and nodes[0].child_count == 0 and nodes[0].role not in FRAME_ROLES
            ):
                break
            await asyncio.sleep(delay)
            nodes, strategy = await self._reader.read(conn, root, limit, max_children)
        if not nodes:
            raise AtspiCallError("org.freedesktop.DBus.Error.UnknownObject", root.path)
        return nodes, strategy


# ---------------------------------------------------------------------------- the steps


async def _read_details(
    conn: Conn, nodes: list[RawNode], info: AppInfo | None, max_elements: int
) -> None:
    """Actions, values, labels… of the nodes that can be shown, at most
    ``max_elements × ENRICH_FACTOR`` of them (see ``collect.enrich``; Chromium answers
    ``GetActions`` with blank action names)."""
    todo = _detail_candidates(nodes, max_elements * ENRICH_FACTOR)
    blank_names = bool(info and info.toolkit and info.toolkit.lower().startswith("chrom"))
    await collect.enrich(conn, nodes, todo, blank_names)


async def _finish(conn: Conn, nodes: list[RawNode], out: Rendered) -> tuple[list[int], str | None]:
    """Interfaces of shown elements the strategy did not provide, extents of secure ones, and
    the document's URL. Returns the secure elements' node indexes and the URL."""
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
    return secure, await _document_url(conn, nodes, shown)


def _elements(nodes: list[RawNode], out: Rendered, pid: int, gtk4: bool) -> dict[int, ElementRef]:
    """The shown elements by id, as the host keeps them to act on later."""
    elements: dict[int, ElementRef] = {}
    for eid, (ni, parent_id) in out.elements.items():
        n = nodes[ni]
        elements[eid] = ElementRef(
            id=eid,
            ref=NodeRef(n.bus, n.path),
            pid=pid,
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
    return elements


def _sensitive_regions(
    nodes: list[RawNode], secure: list[int], origin: tuple[int, int] | None
) -> list[Rect]:
    """The secure elements' bounds, relative to ``origin`` (the screenshot's top-left)."""
    regions: list[Rect] = []
    for ni in secure:
        e = nodes[ni].extents
        if e is not None:
            ox, oy = origin or (0, 0)
            regions.append(Rect(x=e[0] - ox, y=e[1] - oy, width=e[2], height=e[3]))
    return regions


def _truncation(out: Rendered) -> Truncation:
    return Truncation(
        omitted_elements=out.omitted,
        elided_children=out.elided,
        noise_dropped=out.noise,
        element_cap_hit=out.cap_hit,
        text_budget_hit=out.budget_hit,
    )


async def _document_url(conn: Conn, nodes: list[RawNode], shown: list[int]) -> str | None:
    """The URL of the first shown document (a web page); None when there is none."""
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


def _ms_since(t: float) -> float:
    return (time.perf_counter() - t) * 1000


async def _noop() -> None:
    return None
