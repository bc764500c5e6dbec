"""What a new-user trial of the dashboard found, each pinned down: through the real app on
a real SQLite file (Starlette's test client, as a browser on this machine), with rows written
as the kernel writes them — no desktop needed — and one real browser for the sessions list
that follows the desktop live.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.oversight import settings_form as sf
from deskpilot.oversight.confirmations_view import ConfirmationsView, split_summary
from deskpilot.oversight.sessions_view import session_summary
from deskpilot.oversight.timeline_view import (
    ActionCard,
    RefusedCard,
    StateCard,
    TimelineFolder,
    check_text,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import Decision, EventType, RiskLevel, SessionState
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository, ActionRow
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.settings import Settings, SettingsModel
from deskpilot.web.app import create_app
from deskpilot.web.context import DashboardContext

LOCAL = ("127.0.0.1", 50123)
SUMMARY = 'click on button "Don\'t Save" in mousepad — L2 (destructive_control_in_dialog)'


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Database]:
    db = Database(tmp_path / "trial.sqlite3")
    yield db
    db.close()


@pytest.fixture
def client(store: Database) -> Iterator[TestClient]:
    ctx = DashboardContext(db=store)
    ctx.bind("http://testserver", frozenset({"testserver"}))
    with TestClient(create_app(ctx), base_url="http://testserver", client=LOCAL) as c:
        c.ctx = ctx  # type: ignore[attr-defined]
        assert c.get(f"/login?token={ctx.access.new_login()}").status_code == 200
        yield c


def _csrf(client: TestClient) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/live/stats").text)
    if found is None:
        found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/errors").text)
    assert found is not None
    return found.group(1)


def _session_with_a_click(store: Database) -> tuple[str, str]:
    """A session whose action ``a1`` (a click in mousepad's window, frame f1) waits for a
    confirmation: (session id, confirmation id)."""
    sessions = SessionManager(store)
    sid = sessions.create("trial-agent", "atomic").id
    sessions.transition(sid, SessionState.OBSERVING)
    sessions.record(
        sid,
        EventType.OBSERVATION_CREATED,
        payload={"frameId": "f1", "app": "mousepad", "windowId": "0x1a00003", "elementCount": 9},
    )
    ActionRepository(store).insert(
        ActionRow(
            "a1",
            sid,
            "click",
            "h",
            "f1",
            "t1",
            RiskLevel.L2,
            Decision.REQUIRE_APPROVAL,
            "confirmation_required",
            "requested",
            target_kind="element",
        )
    )
    repo = Confirmations(store, SessionManager(store)).repo
    repo.create(
        "cf_0000000000c1", sid, "a1", "click", RiskLevel.L2, "confirmation_required", SUMMARY, 60
    )
    return sid, "cf_0000000000c1"


# ------------------------------------------------------------------ confirmations


def test_the_confirmations_page_says_what_asks_and_names_the_setting_by_its_label(
    store: Database, client: TestClient
) -> None:
    sid, cid = _session_with_a_click(store)
    page = client.get("/confirmations").text
    intro = re.search(r'<p class="muted" id="confirmations-intro">(.*?)</p>', page, re.S)
    assert intro is not None
    text = intro.group(1)
    assert "only app launches and shell commands rated L3 or higher" in text, text
    assert "“Ask me before actions rated above”" in text and "“never ask”" in text, text
    assert 'href="/settings"' in text
    assert "requireConfirmationAbove" not in page  # never the internal key, anywhere
    # where: the app and window of the observation the click was made against
    row = re.search(rf'<tr id="cf-{cid}".*?</tr>', page, re.S)
    assert row is not None
    assert "mousepad · window 0x1a00003" in row.group(0), row.group(0)
    assert "no window" not in row.group(0)
    # the risk once (its own column), the session whole and a link
    assert "— L2" not in row.group(0)
    assert f'<a href="/sessions/{sid}" title="{sid}">{sid}</a>' in row.group(0)
    assert "rated above “Ask me before actions rated above” (never ask)" in row.group(0)

    Settings.update(store, require_confirmation_above="L1")
    page = client.get("/confirmations").text
    assert "any other action rated above “Ask me before actions rated above”" in page
    assert "“L1 — ask for L2 and above”" in page
    client.cookies.set("dp_lang", "zh")
    zh = client.get("/confirmations").text
    client.cookies.delete("dp_lang")
    assert "requireConfirmationAbove" not in zh and "以下风险等级以上的操作需要我确认" in zh


def test_where_for_a_bound_window_a_command_and_the_notification(store: Database) -> None:
    sid, cid = _session_with_a_click(store)
    view = ConfirmationsView(store)
    SessionRepository(store).set_target(sid, TargetSpec(window_id="0x1a00003"))
    row = view.repo.get(cid)
    assert row is not None
    assert view.where(row, "en") == "mousepad · window 0x1a00003"
    assert view.where(row, "zh") == "mousepad · 窗口 0x1a00003"
    note = view.card(row, "en").to_json()
    assert note["summary"] == 'click on button "Don\'t Save" in mousepad'
    assert note["signals"] == "destructive_control_in_dialog"
    assert note["sessionUrl"] == f"/sessions/{sid}"
    view.repo.create(
        "cf_0000000000c2",
        sid,
        "a2",
        "bash",
        RiskLevel.L3,
        "shell_confirmation_required",
        "bash: rm -rf x — L3 (recursive)",
        60,
    )
    bash = view.repo.get("cf_0000000000c2")
    assert bash is not None
    assert view.where(bash, "en") == "no window: a command or an app launch"
    assert split_summary("type_text in gedit") == ("type_text in gedit", "")


def test_an_answer_without_javascript_is_redirected_back_with_its_outcome(
    store: Database, client: TestClient
) -> None:
    _, cid = _session_with_a_click(store)
    form = {"csrf": _csrf(client), "next": "/confirmations"}
    headers = {"Origin": "http://testserver"}
    first = client.post(
        f"/confirmations/{cid}/approve", data=form, headers=headers, follow_redirects=False
    )
    assert first.status_code == 303
    assert first.headers["location"] == f"/confirmations?answered={cid}"
    assert "Approved: that action runs once." in client.get(first.headers["location"]).text
    # a second post (a reload, a stale tab) is refused, and still lands on a GET page
    again = client.post(
        f"/confirmations/{cid}/deny", data=form, headers=headers, follow_redirects=False
    )
    assert again.status_code == 303
    assert again.headers["location"] == f"/confirmations?refused={cid}&status=approved"
    shown = client.get(again.headers["location"]).text
    assert "already answered (approved)" in shown
    unknown = client.post(
        "/confirmations/cf_00000000dead/deny", data=form, headers=headers, follow_redirects=False
    )
    assert unknown.status_code == 303 and "status=unknown" in unknown.headers["location"]
    assert (
        "There is no confirmation cf_00000000dead." in client.get(unknown.headers["location"]).text
    )
    # another site as next: back to the page itself
    sid = ConfirmationsView(store).repo.get(cid)
    assert sid is not None
    repo = ConfirmationsView(store).repo
    repo.create("cf_0000000000c3", sid.session_id, "a3", "click", RiskLevel.L2, "r", "s", 60)
    repo.create("cf_0000000000c4", sid.session_id, "a4", "click", RiskLevel.L2, "r", "s", 60)
    elsewhere = client.post(
        "/confirmations/cf_0000000000c3/deny",
        data={**form, "next": "//evil.example/x"},
        headers=headers,
        follow_redirects=False,
    )
    assert elsewhere.status_code == 303
    assert elsewhere.headers["location"] == "/confirmations?answered=cf_0000000000c3"
    # fetch keeps its JSON answer
    as_json = client.post(
        "/confirmations/cf_0000000000c4/deny",
        headers={**headers, "X-CSRF-Token": form["csrf"], "Accept": "application/json"},
    )
    assert as_json.status_code == 200 and as_json.json()["status"] == "denied"


# ------------------------------------------------------------------ errors, login, language


def test_error_pages_are_headed_for_what_happened(client: TestClient) -> None:
    missing = client.get("/sessions/cs_nosuchsession")
    assert missing.status_code == 404
    assert '<h1 id="denied-title">Not found</h1>' in missing.text
    assert "Not allowed" not in missing.text
    bad = client.get("/sessions?filter=bogus")
    assert bad.status_code == 400
    assert '<h1 id="denied-title">Not understood</h1>' in bad.text
    assert "Not allowed" not in bad.text


def test_a_spent_login_link_in_a_logged_in_browser_goes_on(client: TestClient) -> None:
    ctx: DashboardContext = client.ctx  # type: ignore[attr-defined]
    token = ctx.access.new_login()
    assert client.get(f"/login?token={token}").status_code == 200  # a second login: fine
    again = client.get(f"/login?token={token}", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == "/live"
    client.cookies.clear()
    spent = client.get(f"/login?token={token}", follow_redirects=False)
    assert spent.status_code == 403
    assert spent.headers["content-type"].startswith("text/html")
    assert 'id="login-message"' in spent.text and "already used or has expired" in spent.text
    assert "<nav" not in spent.text and "/static/app.css" in spent.text


def test_the_language_switch_comes_back_to_the_same_view(client: TestClient) -> None:
    page = client.get("/errors?code=kill_switch_engaged").text
    assert 'name="next" value="/errors?code=kill_switch_engaged"' in page
    switched = client.post(
        "/language",
        data={"csrf": _csrf(client), "lang": "zh", "next": "/errors?code=kill_switch_engaged"},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert switched.status_code == 303
    assert switched.headers["location"] == "/errors?code=kill_switch_engaged"


def test_the_favicon_is_served_without_a_login(store: Database) -> None:
    ctx = DashboardContext(db=store)
    ctx.bind("http://testserver", frozenset({"testserver"}))
    with TestClient(create_app(ctx), base_url="http://testserver", client=LOCAL) as c:
        icon = c.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/png"
        assert icon.content.startswith(b"\x89PNG")
        svg = c.get("/static/favicon.svg")
        assert svg.status_code == 200 and b"<svg" in svg.content
        assert c.get("/live").status_code == 401  # the rest still needs the login


# ------------------------------------------------------------------ settings


def test_the_vault_quota_is_a_whole_number_of_mib_within_bounds(store: Database) -> None:
    current = SettingsModel()
    quota = next(c for c in sf.controls() if c.field == "vault_quota_bytes")
    assert quota.maximum == 16 * 1024 * 1024  # 16 TiB, in MiB

    def read(raw: str) -> sf.Outcome:
        return sf.read_form({quota.name: [raw]}, current)

    huge = read("99999999999999999999999")
    assert huge.problems[quota.name].key == "settings.error.mib"  # too many digits
    over = read(str(16 * 1024 * 1024 + 1))
    assert over.problems[quota.name].key == "settings.error.range"
    assert read("1.5").problems[quota.name].key == "settings.error.mib"
    assert read("1e3").problems[quota.name].key == "settings.error.mib"
    assert read("8").problems[quota.name].key == "settings.error.quota_min"
    top = read(str(16 * 1024 * 1024))
    assert top.ok and top.changes["vault_quota_bytes"] == 16 * 1024**4  # exact, no float
    with pytest.raises(DeskpilotError):
        Settings.update(store, vault_quota_bytes=2**63)  # the model's own bound


# ------------------------------------------------------------------ sessions and timeline


def test_the_target_is_one_thing_after_a_change_of_window(store: Database) -> None:
    sessions = SessionManager(store)
    sid = sessions.create("trial-target", "atomic").id
    sessions.transition(sid, SessionState.OBSERVING)
    sessions.record(
        sid,
        EventType.OBSERVATION_CREATED,
        payload={"frameId": "f0", "app": "gnome-calculator", "windowId": "0x1600003"},
    )
    assert session_summary(store, sid).target == "gnome-calculator · window 0x1600003"
    SessionRepository(store).set_target(sid, TargetSpec(window_id="0x200004"))
    assert session_summary(store, sid).target == "window 0x200004"  # not the old window too
    sessions.record(
        sid,
        EventType.OBSERVATION_CREATED,
        payload={"frameId": "f2", "app": "mousepad", "windowId": "0x200004"},
    )
    assert session_summary(store, sid).target == "window 0x200004 · mousepad"
    assert session_summary(store, sid, locale="zh").target == "窗口 0x200004 · mousepad"


def test_the_timeline_says_who_what_and_where(store: Database, client: TestClient) -> None:
    sid, cid = _session_with_a_click(store)
    sessions = SessionManager(store)
    actions = ActionRepository(store)
    record = sessions.record
    requested = {
        "kind": "click",
        "risk": "L2",
        "decision": "require_approval",
        "reason": "confirmation_required",
        "targetKind": "element",
    }
    record(sid, EventType.ACTION_REQUESTED, action_id="a1", payload=requested)
    record(
        sid,
        EventType.APPROVAL_REQUESTED,
        action_id="a1",
        payload={"confirmationId": cid, "risk": "L2", "summary": SUMMARY},
    )
    record(
        sid,
        EventType.APPROVAL_RESOLVED,
        action_id="a1",
        payload={"confirmationId": cid, "outcome": "approved", "by": "dashboard"},
    )
    actions.finish(
        "a1",
        "executed",
        outcome={
            "method": "semantic",
            "target_bounds": {"x": 400, "y": 300, "width": 90, "height": 30},
        },
    )
    record(sid, EventType.ACTION_EXECUTED, action_id="a1", payload={"kind": "click"})
    # a positional click, no confirmation: where the host aimed
    actions.insert(
        ActionRow(
            "a2",
            sid,
            "click",
            "h",
            "f1",
            "t1",
            RiskLevel.L1,
            Decision.ALLOW,
            "within_task_scope",
            "requested",
            target_kind="coordinates",
        )
    )
    record(
        sid,
        EventType.ACTION_REQUESTED,
        action_id="a2",
        payload={**requested, "risk": "L1", "decision": "allow", "targetKind": "coordinates"},
    )
    actions.finish(
        "a2",
        "executed",
        outcome={
            "method": "synthetic",
            "target_bounds": {"x": 12, "y": 34, "width": 1, "height": 1},
        },
    )
    record(sid, EventType.ACTION_EXECUTED, action_id="a2", payload={"kind": "click"})
    record(sid, EventType.SESSION_PAUSED, payload={"by": "agent", "takeover": True})
    record(sid, EventType.SESSION_RESUMED, payload={"by": "person", "handBack": True})
    record(sid, EventType.SESSION_PAUSED, payload={"by": "person", "takeover": True})
    record(sid, EventType.SESSION_RESUMED, payload={"by": "agent"})
    record(sid, EventType.SESSION_PAUSED, payload={"by": "dashboard"})
    record(sid, EventType.TARGET_BOUND, payload={"target": None, "reason": "bound_window_closed"})
    refused = {"kind": "click", "code": "handoff_required", "reason": "taken_over", "count": 3}
    record(sid, EventType.ACTION_REFUSED, payload=refused)
    record(sid, EventType.ACTION_REFUSED, payload={**refused, "count": 2})

    cards = TimelineFolder(store, sid, "en").load()
    acts = [c for c in cards if isinstance(c, ActionCard)]
    assert (
        acts[0].target == 'button "Don\'t Save"' and acts[0].where == "mousepad · window 0x1a00003"
    )
    assert acts[1].target == "at (12, 34)" and acts[1].where == "mousepad · window 0x1a00003"
    runs = [c for c in cards if isinstance(c, RefusedCard)]
    assert len(runs) == 1 and runs[0].count == 5 and runs[0].error_text  # one run, ×5
    assert [c.event for c in cards if isinstance(c, StateCard)][-1] == "target_bound"

    page = html.unescape(client.get(f"/sessions/{sid}").text)
    timeline = page[page.index('id="timeline"') :]
    for words in (
        'button "Don\'t Save"',
        "in mousepad · window 0x1a00003",
        "The agent handed the desktop to the person",
        "Handed back by the person",
        "Taken over by the person",
        "Resumed by the agent",
        "Paused by the dashboard",
        "The bound window closed; the session follows the focused window",
        "×5",
        "handoff_required",
        'Confirmation asked (L2): click on button "Don\'t Save" in mousepad',
        "approved by the dashboard",
    ):
        assert words in timeline, words
    assert "Window changed to ?" not in timeline and "— L2" not in timeline
    client.cookies.set("dp_lang", "zh")
    zh = client.get(f"/sessions/{sid}").text
    assert "由用户接管" in zh and "由智能体继续" in zh
    assert "person" not in zh[zh.index('id="timeline"') :].replace("data-", "")


def test_checks_are_said_in_words() -> None:
    spec = {
        "kind": "accessibility",
        "assertion": "exists",
        "selector": {"role": "textField", "notStates": ["readonly"]},
    }
    assert check_text(spec) == "a textField that is not readonly exists"
    assert "[" not in check_text(spec, "zh") and "notStates" not in check_text(spec, "zh")
    assert (
        check_text({"kind": "file", "assertion": "contains", "path": "/tmp/a", "text": "ok"})
        == "file /tmp/a contains “ok”"
    )
    assert (
        check_text(
            {"kind": "application_state", "assertion": "running", "app": "gedit", "expected": False}
        )
        == "not so: gedit is running"
    )


def test_a_gone_window_is_said_in_words() -> None:
    from deskpilot.web.pages.sessions import _failure_text

    exc = DeskpilotError(ErrorCode.TARGET_NOT_FOUND, "no window 0x5 on this display")
    text = _failure_text(exc, "Change window", "en", "0x5")
    assert text.startswith("Change window did not work: window 0x5 is not there any more")


# ------------------------------------------------------------------ the sessions list, live


@pytest.mark.chromium
def test_the_sessions_list_follows_new_sessions_and_states(ui_server: Any, logged_in: Any) -> None:
    db = Database()
    try:
        page = logged_in
        page.goto(f"{ui_server.base_url}/sessions")
        sessions = SessionManager(db)
        sid = sessions.create("trial-live-list", "atomic").id
        page.locator(f"#row-{sid}").wait_for(timeout=5000)  # a new session appears
        badge = page.locator(f"#row-{sid} .badge")
        sessions.transition(sid, SessionState.OBSERVING)
        deadline = time.monotonic() + 5
        while badge.get_attribute("data-state") != "observing" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert badge.get_attribute("data-state") == "observing"
        sessions.transition(sid, SessionState.CANCELED)
        page.wait_for_function(
            f"() => document.querySelector('#row-{sid}').classList.contains('ended')",
            timeout=5000,
        )
    finally:
        db.close()
