"""A deadline on every tree read: partial trees marked where they are cut, a stopped app answered
from its last complete tree, element actions refused on either, other apps unaffected.

The apps are real (mousepad, gnome-calculator, a zenity dialog, Chromium) and so is the host
process; an app "freezes" by SIGSTOP, exactly what a debugger or a hung main loop does to its
accessibility answers.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from host_harness import HostProcess, act, line_id, observe, observe_until, wait_for

from deskpilot.desktop import apps
from deskpilot.host.accessibility import SILENT_PROBE_S
from deskpilot.host.atspi import AtspiClient, FrameInfo, collect
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.model import NodeRef, TreeSnapshot
from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit
from deskpilot.host.last_trees import LastTrees
from deskpilot.host.observer import tree_deadline_s
from deskpilot.host.settings import TREE_DEADLINE_ENV, SettingError
from deskpilot.host.window_list import APP_NAME_TIMEOUT_S
from deskpilot.hostclient.config import HostConfig
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    MAX_TREE_DEADLINE_MS,
    AppIdentity,
    ObservationBody,
    Observe,
    Rect,
    TreeRead,
    Truncation,
    WindowInfo,
)
from deskpilot.runtime.refusals import refused_before_dispatch, safe_error
from deskpilot.runtime.state_reuse import reuse_refusals
from deskpilot.runtime.state_view import tree_read_lines
from deskpilot.runtime.verification.text import tree_view
from desktop_kit import Stopped, app_fixture, page_fixture, running

#: what a stopped app's observe may take beyond its deadline: the screenshot, the window list,
#: the frame around the read (measured ≈ 60 ms here; a loaded CI machine gets room)
SLACK_S = 0.8
DEFAULT_DEADLINE_S = 1.5
_VISIBLE = bit(State.VISIBLE) | bit(State.SHOWING)


# ------------------------------------------------------------------------------ pure parts


def _node(role: str, name: str, parent: int, depth: int, unread: int = 0) -> RawNode:
    n = RawNode("b", f"/n{name}", parent=parent, depth=depth, role=ROLE_NUMBER[role], name=name)
    n.states = _VISIBLE
    n.unread = unread
    return n


def _tree(nodes: list[RawNode]) -> list[RawNode]:
    for i, n in enumerate(nodes):
        if n.parent >= 0:
            nodes[n.parent].children.append(i)
    return nodes


def test_unread_children_are_one_marker_line_where_they_would_be() -> None:
    nodes = _tree(
        [
            _node("frame", "Win", -1, 0),
            _node("panel", "Left", 0, 1, unread=3),  # children not read: a marker below it
            _node("push button", "OK", 0, 1),
            _node("filler", "", 0, 1, unread=2),  # unnamed, nothing read below: kept for it
        ]
    )
    out = render(nodes)
    lines = out.text.splitlines()
    assert lines[0].startswith('- window "Win"'), out.text
    assert lines[1].startswith('  - group "Left"'), out.text
    assert lines[2] == "    - … [unread: 3 children — deadline]", out.text
    assert lines[3].startswith('  - button "OK"'), out.text
    assert lines[4] == "  - … [unread: 2 children — deadline]", out.text  # the filler flattened
    assert out.unread == 2
    assert out.element_count == 3  # markers are lines, not elements
    one = render(_tree([_node("frame", "Win", -1, 0, unread=1)]))
    assert one.text.splitlines()[1] == "  - … [unread: 1 child — deadline]", one.text
    full = render(_tree([_node("frame", "Win", -1, 0), _node("push button", "OK", 0, 1)]))
    assert "[unread" not in full.text and full.unread == 0


def test_the_deadline_comes_from_the_request_else_the_env_and_never_passes_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TREE_DEADLINE_ENV, raising=False)
    assert tree_deadline_s(Observe(id=1)) == DEFAULT_DEADLINE_S
    monkeypatch.setenv(TREE_DEADLINE_ENV, "250")
    assert tree_deadline_s(Observe(id=1)) == 0.25
    assert tree_deadline_s(Observe(id=1, tree_deadline_ms=40)) == 0.04
    monkeypatch.setenv(TREE_DEADLINE_ENV, "999999")
    assert tree_deadline_s(Observe(id=1)) == MAX_TREE_DEADLINE_MS / 1000
    # not a number is no longer read as the default: the host refuses to start with it
    # (tests/host/test_settings.py, tests/hostclient/test_client.py)
    monkeypatch.setenv(TREE_DEADLINE_ENV, "soon")
    with pytest.raises(SettingError, match=TREE_DEADLINE_ENV):
        tree_deadline_s(Observe(id=1))
    with pytest.raises(ValueError):
        Observe(id=1, tree_deadline_ms=MAX_TREE_DEADLINE_MS + 1)
    with pytest.raises(ValueError):
        Observe(id=1, tree_deadline_ms=0)
    # the read's answer must come well before the host client gives up on the request
    config = HostConfig()
    assert config.request_timeout_s > MAX_TREE_DEADLINE_MS / 1000 + SLACK_S * 4
    # an action with observeAfter may read twice (a dialog it opened is read again)
    assert (
        config.action_grace_s + config.post_action_observe_s > 2 * MAX_TREE_DEADLINE_MS / 1000 + 4
    )


def _snap(text: str, partial: str | None = None) -> TreeSnapshot:
    return TreeSnapshot(
        text=text,
        tree_version=text,
        element_count=1,
        elements={},
        truncation=Truncation(),
        sensitive_regions=[],
        url=None,
        focused_id=None,
        partial=partial,
    )


def test_last_trees_keep_complete_reads_of_the_same_process_for_a_bounded_number_of_windows() -> (
    None
):
    frame = FrameInfo(NodeRef("b", "/f"), 7, "app", "t", "window", "frame", None, frozenset())
    trees = LastTrees(max_windows=2)
    trees.remember(1, 7, _snap("one"), frame)
    trees.remember(1, 7, _snap("cut", partial="deadline"), frame)  # never stands for a read
    known = trees.last(1, 7)
    assert known is not None and known.snapshot.text == "one" and known.age_ms() >= 0
    assert trees.last(1, 8) is None  # the X id reused by another process
    trees.remember(4, None, _snap("no pid"), frame)
    assert trees.last(4, None) is None  # a window of unknown process matches nothing
    trees.remember(2, 7, _snap("two"), frame)
    trees.remember(3, 7, _snap("three"), frame)
    assert len(trees) == 2 and trees.last(1, 7) is None  # the oldest went first


def _observation(tree_read: TreeRead) -> ObservationBody:
    return ObservationBody(
        frame_id="f-1",
        tree_version="v",
        app=AppIdentity(pid=7),
        window=WindowInfo(window_id="0x1", bounds=Rect(x=0, y=0, width=10, height=10)),
        tree='- window "W" [1]\n  - button "OK" [2]',
        element_count=2,
        tree_read=tree_read,
    )


def test_a_partial_or_stale_tree_proves_no_absence_and_is_no_reusable_state() -> None:
    complete = _observation(TreeRead())
    assert tree_view(complete).complete
    assert "tree_partial" not in reuse_refusals(complete.app, complete, b"png")
    for read, reason in (
        (TreeRead(partial="deadline", unread_subtrees=1), "tree_partial"),
        (TreeRead(stale_age_ms=2500.0), "tree_stale"),
    ):
        obs = _observation(read)
        assert not read.reusable
        assert not tree_view(obs).complete  # "no such button" cannot be concluded from it
        assert reason in reuse_refusals(obs.app, obs, b"png")  # the next stateId is not it


def test_the_agent_is_told_why_an_element_of_a_partial_tree_was_refused() -> None:
    exc = DeskpilotError(ErrorCode.TREE_PARTIAL, "host text, never echoed")
    code, message, _, _ = safe_error(exc)
    assert code is ErrorCode.TREE_PARTIAL
    assert "partial or stale" in message and "point of the state's screenshot" in message
    assert refused_before_dispatch(exc)  # nothing reached the desktop


# ------------------------------------------------------------------------------ real apps


calculator = app_fixture("calculator", ["gnome-calculator"])
mousepad = app_fixture("mousepad", ["mousepad"])


def _timed_observe(
    host: HostProcess, target: dict[str, Any], session: str, **extra: Any
) -> tuple[dict[str, Any], bytes | None, float]:
    t0 = time.monotonic()
    obs, png = observe(host, target, session=session, **extra)
    return obs, png, time.monotonic() - t0


def _visible_window(host: HostProcess, pid: int) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        windows = host.call({"type": "list_windows"})["windows"]
        return next((w for w in windows if w["app"].get("pid") == pid and w["visible"]), None)

    found: dict[str, Any] = wait_for(find, timeout=20)
    return found


@pytest.mark.desktop
def test_a_stopped_app_answers_in_time_with_its_last_tree_and_others_stay_fast(
    host: HostProcess, mousepad: apps.App, calculator: apps.App
) -> None:
    target, calc = {"pid": mousepad.pid}, {"pid": calculator.pid}
    fresh = observe_until(host, target, r"- textField", "frozen")
    assert fresh["treeRead"].get("staleAgeMs") is None and fresh["treeRead"].get("partial") is None
    assert fresh["treeRead"].get("deadlineMs") == DEFAULT_DEADLINE_S * 1000
    observe_until(host, calc, r'button "7', "calc")
    with Stopped(mousepad.pid):
        time.sleep(0.3)
        obs, png, took = _timed_observe(host, target, "frozen")
        read = obs["treeRead"]
        assert took < DEFAULT_DEADLINE_S + SLACK_S, took
        assert read.get("staleAgeMs") is not None and read.get("staleAgeMs") >= 300, read
        assert read["source"] == "accessibility" and read.get("partial") is None
        assert obs["tree"] == fresh["tree"] and obs["treeVersion"] == fresh["treeVersion"]
        assert obs["treeVersion"] != "t-none"
        assert png is not None  # the screenshot is read now, not remembered
        # known silent now: the next looks wait SILENT_PROBE_S for it, not the deadline
        for _ in range(2):
            again, _, again_took = _timed_observe(host, target, "frozen")
            assert again_took < SILENT_PROBE_S + SLACK_S, again_took
            assert again["treeRead"]["staleAgeMs"] > read["staleAgeMs"], again["treeRead"]
            assert again["treeVersion"] == fresh["treeVersion"]
            obs = again
        # the listing names it as it was known, says it is silent, and names the others
        listing, listed_in = _timed_list(host)
        assert listed_in < APP_NAME_TIMEOUT_S + SLACK_S, listed_in
        frozen = _window_of(listing, mousepad.pid)
        assert frozen["app"].get("name") == "mousepad" and frozen.get("appUnresponsiveMs"), frozen
        assert _window_of(listing, calculator.pid)["app"].get("name") == "gnome-calculator"
        assert _window_of(listing, calculator.pid).get("appUnresponsiveMs") is None
        # meanwhile the calculator answers as fast as ever, read now
        for _ in range(3):
            other, _, calc_took = _timed_observe(host, calc, "calc")
            assert calc_took < 1.0, calc_took
            assert other["treeRead"].get("staleAgeMs") is None and 'button "7' in other["tree"]
        # the stale tree's element ids are refused; a point of its screenshot is not
        refused = act(host, obs, {"kind": "click", "elementId": 1}, session="frozen")
        assert refused["type"] == "error" and refused["code"] == "tree_partial", refused
        assert "observe again" in refused["message"]
        obs, _, _ = _timed_observe(host, target, "frozen")
        raised = act(host, obs, {"kind": "focus_window"}, session="frozen")  # over the calculator
        assert raised["type"] == "action_result", (raised, host.stderr_text()[-3000:])
        obs, _, _ = _timed_observe(host, target, "frozen")
        assert obs["treeRead"].get("staleAgeMs") is not None
        clicked = act(host, obs, {"kind": "click", "point": {"x": 0.5, "y": 0.7}}, session="frozen")
        assert clicked["type"] == "action_result" and clicked["dispatched"] is True, clicked
    # running again: read now, complete, the same window
    back = wait_for(
        lambda: (
            (o := observe(host, target, session="frozen")[0])["treeRead"].get("staleAgeMs") is None
            and o
        ),
        timeout=10,
    )
    assert back["treeRead"].get("partial") is None and back["treeVersion"] != "t-none"
    assert back["tree"].splitlines()[0] == fresh["tree"].splitlines()[0]


@pytest.mark.desktop
def test_a_stopped_app_never_read_is_unavailable_within_the_deadline(
    host: HostProcess, calculator: apps.App
) -> None:
    with running(["zenity", "--info", "--text", "Frozen before any look"]) as dialog:
        _visible_window(host, dialog.pid)
        with Stopped(dialog.pid):
            time.sleep(0.2)
            obs, png, took = _timed_observe(host, {"pid": dialog.pid}, "never")
            assert took < DEFAULT_DEADLINE_S + SLACK_S, took
            assert obs["truncation"]["treeUnavailable"] is True, obs
            assert obs["treeRead"]["source"] == "none" and obs["tree"] == ""
            assert png is not None
            other, _, calc_took = _timed_observe(host, {"pid": calculator.pid}, "calc2")
            assert calc_took < 1.0 and 'button "7' in other["tree"]
            # known silent now (the read left it a question): the next look is quick
            obs, _, took = _timed_observe(host, {"pid": dialog.pid}, "never")
            assert took < SILENT_PROBE_S + SLACK_S, took
            assert obs["truncation"]["treeUnavailable"] is True, obs
        # running again: its answer ends the silence, and the next look reads it now
        back = wait_for(
            lambda: (o := observe(host, {"pid": dialog.pid}, session="never")[0])["tree"] and o,
            timeout=5,
        )
        assert back["treeRead"].get("staleAgeMs") is None and "Frozen before" in back["tree"]


def _timed_list(host: HostProcess) -> tuple[list[dict[str, Any]], float]:
    t0 = time.monotonic()
    response = host.call({"type": "list_windows"})
    assert response["type"] == "windows", response
    windows: list[dict[str, Any]] = response["windows"]
    return windows, time.monotonic() - t0


def _window_of(windows: list[dict[str, Any]], pid: int) -> dict[str, Any]:
    found = [w for w in windows if w["app"].get("pid") == pid and w["visible"]]
    assert found, windows
    return found[0]


@pytest.mark.desktop
def test_a_stopped_app_never_asked_is_listed_in_time_and_the_others_keep_their_names(
    host: HostProcess, calculator: apps.App
) -> None:
    observe_until(host, {"pid": calculator.pid}, r'button "7', "listing")
    with running(["zenity", "--info", "--text", "Listed while frozen"]) as dialog:
        with HostProcess() as scout:  # finds the window: this test's host never asks the app
            _visible_window(scout, dialog.pid)
        with Stopped(dialog.pid):
            time.sleep(0.2)
            listing, took = _timed_list(host)
            # one wait for the app's answer, then what is known: no name (never asked)
            assert took < APP_NAME_TIMEOUT_S + SLACK_S, took
            frozen = _window_of(listing, dialog.pid)
            assert frozen["app"].get("name") is None, frozen
            assert frozen["appUnresponsiveMs"] >= APP_NAME_TIMEOUT_S * 1000 * 0.9, frozen
            calc = _window_of(listing, calculator.pid)
            assert calc["app"].get("name") == "gnome-calculator", calc  # not dropped with it
            assert calc.get("appUnresponsiveMs") is None
            # the question stays asked: the next listings do not wait for it again
            silent = frozen["appUnresponsiveMs"]
            for _ in range(3):
                listing, took = _timed_list(host)
                assert took < APP_NAME_TIMEOUT_S * 0.8, took
                again = _window_of(listing, dialog.pid)["appUnresponsiveMs"]
                assert again > silent, (again, silent)
                silent = again
            # a look once the listing's question is a deadline old: the app had its time to
            # answer, so the read does not wait a whole deadline more
            time.sleep(DEFAULT_DEADLINE_S - APP_NAME_TIMEOUT_S)
            obs, _, took = _timed_observe(host, {"pid": dialog.pid}, "listed")
            assert took < SILENT_PROBE_S + SLACK_S, took
            assert obs["truncation"]["treeUnavailable"] is True, obs
        # running again: its answer names it, and it is no longer silent
        named = wait_for(
            lambda: (
                (w := _window_of(_timed_list(host)[0], dialog.pid))["app"].get("name") == "zenity"
                and w.get("appUnresponsiveMs") is None
                and w
            ),
            timeout=10,
        )
        assert named["app"]["pid"] == dialog.pid


@pytest.mark.desktop
def test_a_stopped_app_does_not_put_anothers_action_back_on_the_600_ms_rule(
    calculator: apps.App,
) -> None:
    """The wait after a semantic action learns the acting app's toolkit from that app alone:
    asking every app (as it did) waited for a stopped one, gave up, and fell back to the
    600 ms rule (``first_event``) for the calculator."""
    with running(["zenity", "--info", "--text", "Frozen beside"]) as dialog:
        with HostProcess() as scout:
            _visible_window(scout, dialog.pid)
        with Stopped(dialog.pid), HostProcess() as fresh:  # knows no toolkit yet
            bounds = []
            for _ in range(2):  # "=" on an empty display changes nothing
                obs = observe_until(fresh, {"pid": calculator.pid}, r'button "= =', "eq")
                element = line_id(obs["tree"], r'button "= ="')
                result = act(fresh, obs, {"kind": "click", "elementId": element}, session="eq")
                assert result["type"] == "action_result" and result["method"] == "semantic"
                bounds.append(result["waitBound"])
            assert "first_event" not in bounds and "toolkit_gtk" in bounds, bounds


# ------------------------------------------------------------------------------ Chromium

BIG_PAGE_ITEMS = 600  # ≈ 2,400 nodes, a 30k-character tree (inside the text budget)


BIG_PAGE = (
    "<!doctype html><html><head><title>Deadline page</title></head><body>"
    "<h1>Deadline page</h1><ul>"
    + "".join(f"<li><button>R{i}</button> t{i}</li>" for i in range(BIG_PAGE_ITEMS))
    + "</ul><p>Last line</p></body></html>"
)
big_page = page_fixture("big_page", BIG_PAGE)


@pytest.mark.desktop
@pytest.mark.chromium
def test_a_low_deadline_gives_a_partial_tree_marked_and_refused_for_elements(
    host: HostProcess, big_page: apps.App
) -> None:
    target = {"pid": big_page.pid}

    # a generous deadline for the first full read: a loaded machine takes seconds for it
    def loaded() -> dict[str, Any] | None:
        request = {"type": "observe", "target": target, "sessionId": "page"}
        response = host.call({**request, "includeScreenshot": False, "treeDeadlineMs": 5000})
        ok = response["type"] == "observation" and "Last line" in response["tree"]
        return response if ok else None  # (the window may not be there yet)

    full: dict[str, Any] = wait_for(loaded, timeout=60, interval=0.3)
    assert full["treeRead"].get("partial") is None, (full["treeRead"], full["timingsMs"])
    assert "[unread" not in full["tree"]
    partial: dict[str, Any] | None = None
    # a fresh read of this page takes Chromium ≥ 100 ms: these deadlines cut it, unless the
    # root itself misses one on a loaded machine (the last complete tree, stale, then)
    for k, deadline_ms in enumerate((20, 40, 80, 20, 40, 80, 160, 10, 5)):
        # (no screenshot: grabbing it holds the host's loop for longer than these deadlines)
        obs, png, took = _timed_observe(
            host,
            target,
            "page",
            treeDeadlineMs=deadline_ms,
            includeScreenshot=False,
            textBudget=40_000 + k,  # a read the host's tree cache has not kept: read anew
        )
        read = obs["treeRead"]
        assert read.get("deadlineMs") == deadline_ms
        assert took < deadline_ms / 1000 + SLACK_S, took
        assert png is None
        if read.get("partial") is None:
            assert "[unread" not in obs["tree"]  # complete in time (or stale): unmarked
        if read.get("partial") is not None:
            partial = obs
            break
    assert partial is not None, "no read of the big page was cut with the root read"
    read = partial["treeRead"]
    assert read.get("partial") == "deadline"
    markers = [ln for ln in partial["tree"].splitlines() if "[unread: " in ln]
    assert len(markers) == read["unreadSubtrees"] >= 1, partial["tree"][:2000]
    assert partial["treeVersion"] != full["treeVersion"]
    refused = act(host, partial, {"kind": "click", "elementId": 1}, session="page")
    assert refused["type"] == "error" and refused["code"] == "tree_partial", refused
    obs, _, _ = _timed_observe(host, target, "page", treeDeadlineMs=deadline_ms)
    clicked = act(host, obs, {"kind": "click", "point": {"x": 0.5, "y": 0.9}}, session="page")
    assert clicked["type"] == "action_result" and clicked["dispatched"] is True, clicked
    # the default deadline reads it all again (from the tree cache's kept read, if unchanged)
    again = wait_for(
        lambda: (o := observe(host, target, "page")[0])["treeRead"].get("partial") is None and o,
        timeout=20,
        interval=0.3,
    )
    assert "Last line" in again["tree"] and "[unread" not in again["tree"]


async def _page_frame(client: AtspiClient, pid: int) -> FrameInfo:
    end = time.monotonic() + 45
    while time.monotonic() < end:
        for f in await client.frames(pid=pid):
            if f.title.startswith("Deadline page"):
                return f
        await asyncio.sleep(0.2)
    raise AssertionError("the Chromium window did not appear")


@pytest.mark.desktop
@pytest.mark.chromium
async def test_a_walk_stops_at_its_deadline_level_by_level(big_page: apps.App) -> None:
    async with await AtspiClient.connect() as client:
        frame = await _page_frame(client, big_page.pid)
        bus = frame.ref.bus_name
        conn = await client._conn_for(bus)
        whole = await collect.read_walk(conn, bus, frame.ref.path, 100_000, 500)
        assert not any(n.unread for n in whole)
        loop = asyncio.get_running_loop()
        cut = await collect.read_walk(
            conn, bus, frame.ref.path, 100_000, 500, deadline=loop.time() + 0.015
        )
        assert 1 <= len(cut) < len(whole)
        unread = [n for n in cut if n.unread]
        assert unread, "a 15 ms walk of the big page read it all"
        # every parent left with unread children had none of them read
        assert all(not n.children for n in unread)
        text = render(cut).text
        assert "— deadline]" in text
        with pytest.raises(TimeoutError):  # not even the root by then: the app "does not answer"
            await collect.read_walk(conn, bus, frame.ref.path, 100, 500, deadline=loop.time())


@pytest.mark.desktop
async def test_values_cut_by_the_deadline_are_said_in_the_header(
    mousepad: apps.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shape of the tree read in time but not its values (the details step cut): no
    marker line can show a missing value, so the header says values may be missing."""
    from deskpilot.host.atspi import snapshot as snapshot_module

    real = snapshot_module._read_details

    async def late(*args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(3.0)  # an app answering its shape, then busy
        await real(*args, **kwargs)

    async with await AtspiClient.connect() as client:
        frames: list[FrameInfo] = []
        end = time.monotonic() + 20
        while not frames and time.monotonic() < end:
            frames = await client.frames(pid=mousepad.pid)
            await asyncio.sleep(0.1)
        assert frames, "mousepad showed no frame"
        whole = await client.snapshot(frames[0].ref, max_elements=500, text_budget=20_000)
        assert whole.partial is None and not whole.details_unread
        monkeypatch.setattr(snapshot_module, "_read_details", late)
        client2 = await AtspiClient.connect()  # no cached tree: a full read
        async with client2:
            loop = asyncio.get_running_loop()
            cut = await client2.snapshot(
                frames[0].ref, max_elements=500, text_budget=20_000, deadline=loop.time() + 0.6
            )
    assert cut.partial == "deadline" and cut.details_unread and cut.unread_subtrees == 0
    read = TreeRead(partial=cut.partial, details_unread=cut.details_unread)
    obs = _observation(read)
    header = "\n".join(tree_read_lines(obs))
    assert "0 subtrees unread" in header and "were not read in time" in header, header
    assert "were not read" not in "\n".join(tree_read_lines(_observation(TreeRead(partial="x"))))
