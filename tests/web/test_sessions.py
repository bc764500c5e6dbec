"""The sessions list and a session's timeline, in a real browser against a real dashboard.

The session is real: an in-process deskpilot runtime (session_kit.InProcessAgent, on its own
loop thread) observes gnome-calculator on the private desktop, clicks 7 × 6 = and stores a
snapshot; the dashboard (``deskpilot ui``, a subprocess on the same data dir) reads it from
the database and the vault. Chromium (Playwright, Debian's binary) reads the pages.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.oversight.previews import DashboardPreviews, browser_key
from deskpilot.oversight.sessions_view import list_sessions, parse_filter, parse_page
from deskpilot.oversight.timeline_view import ActionCard, TimelineFolder
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.timeline import TimelineRepository

from .session_kit import InProcessAgent, LoopThread
from .uikit import UiServer, shot, start_ui

pytestmark = [pytest.mark.desktop, pytest.mark.chromium]

PREVIEW_SRC = re.compile(r"^/snapshot/(snap_[A-Za-z0-9_-]+)/preview\?cap=[A-Za-z0-9_-]{43,128}$")


@dataclass
class Acted:
    agent: InProcessAgent
    app: App
    session_id: str
    snapshots: list[str]


@pytest.fixture(scope="module")
def acted(dp_desktop: Any) -> Iterator[Acted]:
    """gnome-calculator, and a runtime that computed 7 × 6 on it and stored two snapshots."""
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = launch_accessible(["gnome-calculator"])
    loop = LoopThread()
    agent = InProcessAgent(loop)
    try:
        state = agent.call("get_app_state", {"app": app.pid})
        assert not state.is_error, state.text
        for pattern in (r'"7 7"', r'"× ×"', r'"6 6"', r'"= ="'):
            clicked = agent.call(
                "click", {"state_id": state.state_id(), "element_id": state.element(pattern)}
            )
            assert not clicked.is_error, clicked.text
            state = clicked
        snapshots = []
        for _ in range(2):
            snap = agent.call("capture_app_snapshot", {"app": app.pid})
            assert not snap.is_error, snap.text
            found = re.search(r'"snapshotId": "(snap_\w+)"', snap.text)
            assert found, snap.text
            snapshots.append(found.group(1))
        yield Acted(agent, app, agent.session_id(), snapshots)
    finally:
        agent.close()
        loop.close()
        app.stop()


@pytest.fixture(scope="module")
def db() -> Iterator[Database]:
    database = Database()
    yield database
    database.close()


def _wait(predicate: Any, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# ------------------------------------------------------------------ the list


def test_the_list_shows_the_session_with_state_budget_and_target(
    acted: Acted, ui_server: UiServer, logged_in: Any, db: Database
) -> None:
    page = logged_in
    row = SessionRepository(db).get(acted.session_id)
    assert row is not None and row.steps == 4, row
    page.goto(f"{ui_server.base_url}/sessions")
    tr = page.locator(f"#row-{acted.session_id}")
    assert tr.count() == 1
    assert tr.locator(".mode").inner_text() == "atomic"
    assert tr.locator(".badge").get_attribute("data-state") == row.state.value == "observing"
    # the atomic contract: 2,000 steps, 12 h
    assert "4 of 2000 steps" in tr.locator(".budget").inner_text()
    assert "of 12 h 00 min" in tr.locator(".budget").inner_text()
    assert "gnome-calculator" in tr.locator(".target").inner_text()
    assert tr.locator(".when").nth(1).inner_text() == "running"
    shot(page, "sessions-list")

    page.goto(f"{ui_server.base_url}/sessions?filter=ended")
    assert page.locator(f"#row-{acted.session_id}").count() == 0
    page.goto(f"{ui_server.base_url}/sessions?filter=live")
    assert page.locator(f"#row-{acted.session_id}").count() == 1
    assert page.locator("#filter-live").get_attribute("class") == "active"

    bad = page.goto(f"{ui_server.base_url}/sessions?filter=yesterday")
    assert bad is not None and bad.status == 400
    assert "unknown sessions filter 'yesterday'" in page.locator("#denied-message").inner_text()
    bad = page.goto(f"{ui_server.base_url}/sessions?page=-2")
    assert bad is not None and bad.status == 400
    missing = page.goto(f"{ui_server.base_url}/sessions/cs_does_not_exist")
    assert missing is not None and missing.status == 404
    assert "There is no session cs_does_not_exist" in page.locator("#denied-message").inner_text()


def test_the_list_is_newest_first_and_paged(acted: Acted, db: Database) -> None:
    everything = list_sessions(db, per_page=200)
    starts = [s.started_at for s in everything.items]
    assert starts == sorted(starts, reverse=True)
    one = list_sessions(db, per_page=1)
    assert one.pages == one.total == everything.total and len(one.items) == 1
    assert one.items[0].id == everything.items[0].id
    last = list_sessions(db, per_page=1, page=10_000)  # past the end: the last page
    assert last.page == last.pages and last.items[0].id == everything.items[-1].id
    with pytest.raises(DeskpilotError) as bad:
        parse_filter("running")
    assert bad.value.code is ErrorCode.INVALID_REQUEST
    with pytest.raises(DeskpilotError):
        parse_page("1e3")
    assert parse_page(None) == 1 and parse_filter("ended") == "ended"


# ------------------------------------------------------------------ the timeline


def test_each_action_is_one_card_and_observations_are_hidden_until_asked(
    acted: Acted, ui_server: UiServer, logged_in: Any, db: Database
) -> None:
    page = logged_in
    ledger = ActionRepository(db).list(acted.session_id)
    events = TimelineRepository(db).list(acted.session_id, limit=10_000)
    requested = [e for e in events if e.type is EventType.ACTION_REQUESTED]
    observations = [e for e in events if e.type is EventType.OBSERVATION_CREATED]
    assert len(ledger) == len(requested) == 4 and observations

    page.goto(f"{ui_server.base_url}/sessions/{acted.session_id}")
    cards = page.locator("#timeline li.card.action")
    assert cards.count() == 4  # requested + executed: one line each, not two
    for i, action in enumerate(ledger):
        card = cards.nth(i)
        assert card.get_attribute("data-action") == action.id
        assert card.get_attribute("data-status") == "executed"
        assert card.locator(".action-kind").inner_text() == "click"
        assert card.locator(".risk").inner_text() == action.risk_level.label
        assert action.decision.value == "allow"
        assert f"policy: allowed ({action.reason})" in card.inner_text()
        assert "took" in card.inner_text()
    assert page.locator("#session-badge").get_attribute("data-state") == "observing"
    assert page.locator("#timeline li.card.state[data-event='started']").count() == 1

    obs = page.locator("#timeline li.card.observation")
    assert obs.count() == 0  # hidden by default: not even sent with the page
    assert f"({len(observations)})" in page.locator("#observation-count").inner_text()
    page.locator("#show-observations").check()
    _wait(lambda: obs.count() == len(observations), what="the observations")
    assert all(obs.nth(i).is_visible() for i in range(obs.count()))
    assert "gnome-calculator" in obs.first.inner_text()
    # in time order among the actions: the first observation comes before the first click
    first_obs = float(obs.first.get_attribute("data-pos") or 0)
    assert first_obs < float(cards.first.get_attribute("data-pos") or 0)
    shot(page, "session-timeline-observations")
    page.locator("#show-observations").uncheck()
    assert not obs.first.is_visible()
    shot(page, "session-timeline")
    page.goto(f"{ui_server.base_url}/sessions/{acted.session_id}?observations=1")
    assert page.locator("#show-observations").is_checked()
    assert page.locator("#timeline li.card.observation").count() == len(observations)


def test_the_folder_matches_the_ledger(acted: Acted, db: Database) -> None:
    cards = TimelineFolder(db, acted.session_id).load()
    actions = [c for c in cards if isinstance(c, ActionCard)]
    ledger = ActionRepository(db).list(acted.session_id)
    assert [c.action_id for c in actions] == [r.id for r in ledger]
    assert all(c.status == r.status for c, r in zip(actions, ledger, strict=True))
    positions = [c.pos for c in cards]
    assert positions == sorted(positions)


def test_the_badge_is_the_state_not_the_last_event_and_updates_live(
    acted: Acted, ui_server: UiServer, logged_in: Any, db: Database
) -> None:
    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{acted.session_id}")
    before = page.locator("#timeline li.card.action").count()
    badge = page.locator("#session-badge")
    assert badge.get_attribute("data-state") == "observing"

    paused = acted.agent.call("pause", {})
    assert not paused.is_error, paused.text
    # no reload: the stream replaces the head and adds the pause's card
    _wait(lambda: badge.get_attribute("data-state") == "paused", what="the paused badge")
    assert badge.inner_text() == "paused"
    page.locator("#timeline li.card.state[data-event='paused']").wait_for()
    # the agent observes while paused: the newest event is an observation now, and the
    # badge is still the session's state
    seen = acted.agent.call("get_app_state", {"app": acted.app.pid})
    assert not seen.is_error, seen.text
    last = TimelineRepository(db).last(acted.session_id)
    assert last is not None and last.type is EventType.OBSERVATION_CREATED
    page.reload()
    assert page.locator("#session-badge").get_attribute("data-state") == "paused"
    page.goto(f"{ui_server.base_url}/sessions")
    row_badge = page.locator(f"#row-{acted.session_id} .badge")
    assert row_badge.get_attribute("data-state") == "paused"
    shot(page, "sessions-list-paused")

    page.goto(f"{ui_server.base_url}/sessions/{acted.session_id}")
    badge = page.locator("#session-badge")
    resumed = acted.agent.call("resume", {})
    assert not resumed.is_error, resumed.text
    _wait(lambda: badge.get_attribute("data-state") == "observing", what="the resumed badge")
    # a new action appears as one new card, live
    state = acted.agent.call("get_app_state", {"app": acted.app.pid})
    clicked = acted.agent.call(
        "click", {"state_id": state.state_id(), "element_id": state.element(r'"Clear Display')}
    )
    assert not clicked.is_error, clicked.text
    cards = page.locator("#timeline li.card.action")
    _wait(lambda: cards.count() == before + 1, what="the new action's card")
    newest = cards.nth(before)
    _wait(lambda: newest.get_attribute("data-status") == "executed", what="its terminal event")
    assert "4 of 2000" not in page.locator("#session-steps").inner_text()
    assert "5 of 2000 steps" in page.locator("#session-steps").inner_text()
    shot(page, "session-live")


def test_the_session_pages_in_chinese(acted: Acted, ui_server: UiServer, logged_in: Any) -> None:
    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{acted.session_id}")
    page.locator("#lang-switch").click()
    page.wait_for_url(f"**/sessions/{acted.session_id}")
    try:
        assert page.locator("html").get_attribute("lang") == "zh-CN"
        assert page.locator("h1").inner_text().startswith(f"会话 {acted.session_id}")
        assert page.locator("#session-mode").inner_text() == "原子"
        assert page.locator("#control-pause").inner_text() == "暂停"
        assert page.locator("#control-takeover").inner_text() == "接管"
        assert "显示观察记录" in page.locator("#observation-count").inner_text()
        assert "已执行" in page.locator("#timeline li.card.action").first.inner_text()
        shot(page, "session-zh")
        page.goto(f"{ui_server.base_url}/sessions")
        assert page.locator("h1").inner_text() == "会话"
        assert page.locator(f"#row-{acted.session_id} .mode").inner_text() == "原子"
    finally:
        page.locator("#lang-switch").click()
        page.wait_for_load_state()
    assert page.locator("html").get_attribute("lang") == "en"


# ------------------------------------------------------------------ snapshot previews


def test_a_snapshot_preview_loads_through_a_token_and_dies_with_its_snapshot(
    acted: Acted, ui_server: UiServer, logged_in: Any, browser: Any
) -> None:
    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{acted.session_id}")
    images = page.locator("#timeline li.card.snapshot img.preview")
    assert images.count() == 2
    img = page.locator(f"#timeline li.card.snapshot[data-snapshot='{acted.snapshots[0]}'] img")
    src = img.get_attribute("src")
    assert src is not None and PREVIEW_SRC.match(src), src
    assert PREVIEW_SRC.match(src).group(1) == acted.snapshots[0]  # type: ignore[union-attr]
    img.scroll_into_view_if_needed()
    _wait(lambda: img.evaluate("i => i.complete && i.naturalWidth") == 365, what="the image")
    shot(page, "session-snapshot")

    ok = page.request.get(ui_server.base_url + src)
    assert ok.status == 200 and ok.headers["content-type"] == "image/png"
    assert ok.body()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ok.headers["cache-control"] == "private, no-store"
    # one character off, or a browser that is not logged in: nothing
    forged = src[:-1] + ("A" if src[-1] != "A" else "B")
    assert page.request.get(ui_server.base_url + forged).status == 404
    stranger = browser.new_context()
    try:
        assert stranger.request.get(ui_server.base_url + src).status == 401
    finally:
        stranger.close()
    # the vault deletes the snapshot (its retention, or a person): the link is dead at once
    from deskpilot.vault.service import SnapshotService
    from deskpilot.vault.store import Vault

    database = Database()
    try:
        assert SnapshotService(database, Vault.open()).delete(acted.snapshots[0])
    finally:
        database.close()
    assert page.request.get(ui_server.base_url + src).status == 404


def test_preview_links_expire(acted: Acted, browser: Any) -> None:
    server = start_ui(env={"DESKPILOT_UI_PREVIEW_TTL_S": "2"})
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        page.goto(server.login_url)
        page.goto(f"{server.base_url}/sessions/{acted.session_id}")
        img = page.locator(f"#timeline li.card.snapshot[data-snapshot='{acted.snapshots[1]}'] img")
        src = img.get_attribute("src")
        assert src is not None and PREVIEW_SRC.match(src), src
        _wait(lambda: img.evaluate("i => i.complete && i.naturalWidth") > 0, what="the image")
        assert page.request.get(server.base_url + src).status == 200
        time.sleep(2.3)
        assert page.request.get(server.base_url + src).status == 404
        page.reload()  # a new page gets new, working links
        fresh = page.locator(
            f"#timeline li.card.snapshot[data-snapshot='{acted.snapshots[1]}'] img"
        ).get_attribute("src")
        assert fresh is not None and fresh != src
        assert page.request.get(server.base_url + fresh).status == 200
    finally:
        context.close()
        server.stop()


def test_a_token_works_only_for_the_browser_it_was_issued_to(acted: Acted, db: Database) -> None:
    from deskpilot.store.snapshots import SnapshotRepository

    row = SnapshotRepository(db).get(acted.snapshots[1])
    assert row is not None
    previews = DashboardPreviews(db, ttl_s=60)
    mine, theirs = browser_key("cookie-of-browser-a"), browser_key("cookie-of-browser-b")
    issued = previews.issue(row, mine)
    assert issued is not None
    path, expires = issued
    assert expires > time.time() + 50
    raw_path, query = path.split("?", 1)
    host = "127.0.0.1:9"
    assert previews.serve("GET", host, raw_path, query, theirs).status == 404
    answer = previews.serve("GET", host, raw_path, query, mine)
    assert answer.status == 200 and answer.content_type == "image/png"
    assert previews.serve("POST", host, raw_path, query, mine).status == 405
    assert previews.revoke_browser(mine) == 1
    assert previews.serve("GET", host, raw_path, query, mine).status == 404
    with pytest.raises(DeskpilotError):
        DashboardPreviews(db, ttl_s=0.5)  # below the vault's 1 s minimum: refused


# ------------------------------------------------------------------ the folding rules


def test_folding_rules_on_rows_written_as_the_kernel_writes_them(db: Database) -> None:
    """The paths a calculator session does not take — a confirmation, a policy denial, a
    failure, an action's own check, a hand-off, a window change, a stop — written through the
    store's repositories in the kernel's shapes (kernel/broker/records.py), then folded."""
    from deskpilot.kernel.session_manager import SessionManager
    from deskpilot.kernel.task_records import TaskRecords
    from deskpilot.oversight.timeline_view import (
        ApprovalCard,
        StateCard,
        VerificationCard,
    )
    from deskpilot.protocol.session import CancelReason, Decision, RiskLevel, SessionState
    from deskpilot.store.ledger import ActionRow

    sessions = SessionManager(db)
    actions = ActionRepository(db)
    row = sessions.create("fold-test", "atomic")
    sid = row.id
    sessions.transition(sid, SessionState.OBSERVING)

    def request(aid: str, risk: RiskLevel, decision: Decision, reason: str) -> None:
        actions.insert(
            ActionRow(aid, sid, "press_key", "h", None, None, risk, decision, reason, "requested")
        )
        payload = {
            "kind": "press_key",
            "risk": risk.label,
            "decision": decision.value,
            "reason": reason,
        }
        sessions.record(sid, EventType.ACTION_REQUESTED, action_id=aid, payload=payload)

    request("a1", RiskLevel.L3, Decision.REQUIRE_APPROVAL, "high_impact")
    sessions.record(
        sid,
        EventType.APPROVAL_REQUESTED,
        action_id="a1",
        payload={
            "confirmationId": "cf_1",
            "risk": "L3",
            "reason": "high_impact",
            "summary": "press_key in gedit — L3 (high_impact)",
            "expiresAt": time.time() + 60,
        },
    )
    sessions.record(
        sid,
        EventType.APPROVAL_RESOLVED,
        action_id="a1",
        payload={"confirmationId": "cf_1", "outcome": "approved", "by": "person"},
    )
    actions.finish("a1", "executed", outcome={"method": "xtest"})
    sessions.record(
        sid,
        EventType.ACTION_EXECUTED,
        action_id="a1",
        payload={"kind": "press_key", "method": "xtest", "risk": "L3"},
    )
    TaskRecords(db, sessions).record_verification(
        sid,
        {
            "spec": {
                "kind": "accessibility",
                "assertion": "exists",
                "selector": {"role": "dialog"},
            },
            "passed": False,
            "reason": "not_found",
        },
        action_id="a1",
        source="expect",
    )
    request("a2", RiskLevel.L4, Decision.DENY, "forbidden_action")
    actions.finish("a2", "blocked", error_code="action_blocked")
    sessions.record(
        sid,
        EventType.ACTION_BLOCKED,
        action_id="a2",
        payload={"kind": "press_key", "reason": "forbidden_action"},
    )
    request("a3", RiskLevel.L1, Decision.ALLOW, "within_task_scope")
    actions.finish("a3", "noop", outcome={"method": "xtest"})
    sessions.record(
        sid,
        EventType.ACTION_EXECUTED,
        action_id="a3",
        payload={"kind": "press_key", "method": "xtest", "risk": "L1"},
    )
    request("a4", RiskLevel.L1, Decision.ALLOW, "within_task_scope")
    actions.finish("a4", "failed", error_code="stale_frame")
    sessions.record(
        sid,
        EventType.ACTION_FAILED,
        action_id="a4",
        payload={"code": "stale_frame", "retryable": True},
    )
    request("a5", RiskLevel.L1, Decision.ALLOW, "within_task_scope")  # still in flight
    sessions.transition(sid, SessionState.HANDOFF_REQUIRED, payload={"reason": "physical_escape"})
    sessions.transition(
        sid, SessionState.PAUSED, paused_by="person", payload={"by": "person", "takeover": False}
    )
    sessions.record(sid, EventType.TARGET_BOUND, payload={"target": {"windowId": "0x2a00007"}})
    TaskRecords(db, sessions).record_verification(
        sid,
        {
            "spec": {"kind": "visual", "assertion": "text_present", "text": "Saved"},
            "passed": None,
            "reason": "unsupported_evidence",
        },
    )
    sessions.transition(sid, SessionState.CANCELED, cancel_reason=CancelReason.USER_STOP)

    folder = TimelineFolder(db, sid, "en")
    cards = folder.load()
    by_action = {c.action_id: c for c in cards if isinstance(c, ActionCard)}
    assert list(by_action) == ["a1", "a2", "a3", "a4", "a5"]  # one card each
    a1, a2, a3, a4, a5 = (by_action[k] for k in ("a1", "a2", "a3", "a4", "a5"))
    assert (a1.status, a1.risk, a1.decision, a1.confirmation) == (
        "executed",
        "L3",
        "require_approval",
        "cf_1",
    )
    assert [(c.check, c.passed) for c in a1.checks] == [("a dialog exists", False)]
    assert (a2.status, a2.reason, a2.error_code) == (
        "blocked",
        "forbidden_action",
        "action_blocked",
    )
    assert a2.error_text and a2.error_link == "/errors#action_blocked"
    assert a3.status == "noop"  # executed, but the ledger says it changed nothing
    assert a4.status == "failed" and a4.error_code == "stale_frame" and a4.error_next
    assert a5.status == "pending" and a5.duration_s is None
    (approval,) = [c for c in cards if isinstance(c, ApprovalCard)]
    assert (approval.outcome, approval.by, approval.risk) == ("approved", "person", "L3")
    (check,) = [c for c in cards if isinstance(c, VerificationCard)]
    assert check.passed is None and check.check == "the screen shows “Saved”"
    states = [(c.event, c.reason or c.detail or c.by) for c in cards if isinstance(c, StateCard)]
    assert states == [
        ("started", ""),
        ("handoff", "physical_escape"),
        ("paused", "person"),
        ("target_bound", "window 0x2a00007"),
        ("canceled", "user_stop"),
    ]
    assert [c.pos for c in cards] == sorted(c.pos for c in cards)

    # incrementally: a folder that saw the first events only gets the rest as changed cards
    partial = TimelineFolder(db, sid, "en")
    first_terminal = next(
        e.seq for e in TimelineRepository(db).list(sid) if e.type is EventType.ACTION_EXECUTED
    )
    partial.load_until(first_terminal - 1)
    pending = {c.action_id: c.status for c in partial.cards() if isinstance(c, ActionCard)}
    assert pending == {"a1": "pending"}
    changed = partial.poll()
    assert {c.id for c in changed} >= {"act-a1", "act-a2", "act-a5"}
    assert [c.status for c in partial.cards() if isinstance(c, ActionCard)] == [
        "executed",
        "blocked",
        "noop",
        "failed",
        "pending",
    ]
