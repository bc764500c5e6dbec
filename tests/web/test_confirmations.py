"""Approve and deny a confirmation in a real browser: real pending confirmations from a real
agent-side kernel in another process (a governed ``bash`` command rated L3, ``rm -rf``, which
always waits for the person), a real ``deskpilot ui`` process, Chromium through Playwright.

* the notification appears on any page (the live view here) within about a second, with
  the one-time summary (what, where, risk, why) and the expiry counting down;
* Approve lets that one command run once (the directory is gone, the ledger row executed
  with this approval); a second answer, from a stale tab, is refused in words;
* Deny, on the confirmations page whose list follows the state live: the agent gets
  ``approval_denied`` and nothing ran;
* an answer after the expiry is refused as expired.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.session import RiskLevel, TaskContract
from deskpilot.store.confirmations import ConfirmationRepository, ConfirmationRow
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.settings import Settings
from deskpilot.web.app import create_app
from deskpilot.web.context import DashboardContext

from .uikit import UiServer, shot

pytestmark = [pytest.mark.desktop, pytest.mark.chromium]

#: the agent's side: a real kernel (real host backend) in its own process runs one governed
#: command and prints what the agent got back, as JSON lines
AGENT = r"""
import asyncio, json, sys
from deskpilot.agent.shell import governed_bash
from deskpilot.hostclient.backend import HostBackend
from deskpilot.kernel import Kernel
from deskpilot.protocol.errors import DeskpilotError

async def main(cwd: str, command: str) -> None:
    kernel = Kernel(HostBackend(heartbeat=False))
    kernel.client_session_began("web-confirmations-agent")
    try:
        sid = await kernel.open_session("web-confirmations-agent")
        print(json.dumps({"session": sid}), flush=True)
        try:
            out = await governed_bash(kernel, sid, command, cwd=cwd, timeout_s=20)
            print(json.dumps({"ok": True, "exit": out.exit_code, "risk": out.risk,
                              "action": out.action_id}), flush=True)
        except DeskpilotError as exc:
            print(json.dumps({"ok": False, "code": exc.code.value, "details": exc.details}),
                  flush=True)
    finally:
        await kernel.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


class Agent:
    """One governed command in another process; ``result()`` is what the agent was told."""

    def __init__(self, cwd: Path, command: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AGENT, str(cwd), command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()  # the session, once the kernel opened it
        assert first.startswith("{"), first + (self.proc.stderr.read() if self.proc.stderr else "")
        self.session = str(json.loads(first)["session"])

    def result(self, timeout_s: float = 30.0) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout_s)
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert len(lines) == 1, f"agent said {out!r}; stderr: {err[-2000:]}"
        return dict(lines[0])

    def close(self, db: Database) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)
        # a killed agent cannot expire its own wait: do it, so no other test sees it
        ConfirmationRepository(db).expire_session(self.session)


@pytest.fixture
def agents(db: Database) -> Iterator[Any]:
    made: list[Agent] = []

    def start(cwd: Path, command: str) -> Agent:
        agent = Agent(cwd, command)
        made.append(agent)
        return agent

    yield start
    for agent in made:
        agent.close(db)


@pytest.fixture(scope="module")
def db() -> Database:
    return Database()


@pytest.fixture
def page(dp_desktop: Any, ui_server: UiServer, logged_in: Any, db: Database) -> Iterator[Any]:
    """The logged-in page on the live view (the desktop comes first, a session fixture, so
    the ui process inherits its display)."""
    Settings.reset(db, "confirmationTimeoutSeconds")
    logged_in.goto(ui_server.base_url + "/live")
    yield logged_in
    Settings.reset(db, "confirmationTimeoutSeconds")


def _pending(db: Database, agent: Agent, timeout_s: float = 20.0) -> ConfirmationRow:
    """The confirmation the agent's command waits for, as soon as it is stored."""
    sessions = Confirmations(db, SessionManager(db))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = [r for r in sessions.pending() if r.session_id == agent.session]
        if rows:
            assert len(rows) == 1, rows
            return rows[0]
        time.sleep(0.02)
    raise AssertionError("the agent's command never asked for a confirmation")


def _post_json(page: Any, ui: UiServer, path: str) -> Any:
    csrf = page.get_attribute('meta[name="csrf-token"]', "content")
    return page.request.post(
        ui.base_url + path,
        headers={"Origin": ui.base_url, "X-CSRF-Token": csrf, "Accept": "application/json"},
    )


def _stale_tab(browser: Any, page: Any, ui: UiServer) -> Any:
    """Another tab of the same browser session, with scripting off: it shows what it showed
    when it loaded, like a tab left open while the person answered elsewhere."""
    context = browser.new_context(java_script_enabled=False, locale="en-US")
    context.add_cookies(page.context.cookies())
    stale = context.new_page()
    stale.goto(ui.base_url + "/confirmations")
    return stale


def test_approve_from_the_notification_runs_the_command_once(
    page: Any, ui_server: UiServer, browser: Any, db: Database, agents: Any, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    (scratch / "deep").mkdir(parents=True)
    (scratch / "deep" / "file.txt").write_text("x")
    assert page.locator("#notifications .note.confirmation").count() == 0

    agent = agents(tmp_path, "rm -rf scratch")
    row = _pending(db, agent)
    note = page.locator(f"#note-{row.id}")
    note.wait_for(state="visible", timeout=5000)
    shown_after_s = time.time() - row.created_at
    print(f"notification visible {shown_after_s * 1000:.0f} ms after the confirmation was stored")
    assert shown_after_s < 1.5, shown_after_s
    # the one-time summary: what, where, risk, why, and the expiry counting down
    text = note.inner_text()
    assert "rm -rf scratch" in text and "(L3)" in text, text
    assert "no window: a command or an app launch" in text, text
    assert "a command rated L3 or higher always asks you" in text, text
    assert "— L3" not in text, text  # the risk is said once, not again from the summary
    session_link = note.locator("a.session")
    assert session_link.get_attribute("href") == f"/sessions/{row.session_id}"
    assert row.session_id in session_link.inner_text()  # the whole id, not cut
    countdown = note.locator(".countdown")
    first = int(countdown.inner_text().split()[0])
    assert 100 <= first <= 120, first  # the default confirmationTimeoutSeconds is 120
    page.wait_for_function(
        "([id, first]) => parseInt(document.querySelector(`#note-${id} .countdown`)"
        ".textContent) <= first - 2",
        arg=[row.id, first],
        timeout=6000,
    )
    shot(page, "confirmation-notification")

    stale = _stale_tab(browser, page, ui_server)
    assert stale.locator(f"#cf-{row.id}").count() == 1

    note.locator("button.approve").click()
    note.locator(".result").wait_for(state="visible", timeout=5000)
    assert "Approved: that action runs once." in note.locator(".result").inner_text()
    result = agent.result()
    assert result["ok"] is True and result["exit"] == 0 and result["risk"] == "L3", result
    assert not scratch.exists()
    answered = Confirmations(db, SessionManager(db)).repo.get(row.id)
    assert answered is not None and answered.status == "consumed"
    assert answered.resolved_by == "dashboard"
    action = ActionRepository(db).get(result["action"])
    assert action is not None and action.status == "executed" and action.approval_id == row.id

    # a second answer is refused, in words: from the stale tab's form, and over fetch
    stale.locator(f"#cf-{row.id} button.deny").click()
    refusal = stale.locator("#answer-message")
    assert "already answered (approved and run)" in refusal.inner_text()
    assert "error" in (refusal.get_attribute("class") or "")
    shot(stale, "confirmation-second-answer-refused")
    stale.context.close()
    again = _post_json(page, ui_server, f"/confirmations/{row.id}/approve")
    assert again.status == 409
    assert again.json()["status"] == "consumed" and "answered once" in again.json()["message"]
    still = Confirmations(db, SessionManager(db)).repo.get(row.id)
    assert still is not None and still.status == "consumed"
    # the note leaves on its own once its outcome was read
    note.wait_for(state="detached", timeout=8000)


def test_deny_on_the_confirmations_page_refuses_the_command(
    page: Any, ui_server: UiServer, db: Database, agents: Any, tmp_path: Path
) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file.txt").write_text("x")
    page.goto(ui_server.base_url + "/confirmations")
    page.locator("#none-pending").wait_for(state="visible")

    agent = agents(tmp_path, "rm -rf keep")
    row = _pending(db, agent)
    line = page.locator(f"#cf-{row.id}")
    line.wait_for(state="visible", timeout=5000)  # no reload: the list follows the state
    shown_after_s = time.time() - row.created_at
    print(f"pending row visible {shown_after_s * 1000:.0f} ms after it was stored")
    assert shown_after_s < 2.0, shown_after_s
    assert page.locator("#notifications .note.confirmation").count() == 0  # the list is it
    assert "rm -rf keep" in line.locator(".what").inner_text()
    assert line.locator(".badge.risk").inner_text() == "L3"
    assert "always asks you" in line.locator(".why").inner_text()
    shot(page, "confirmations-pending")

    line.locator("button.deny").click()
    message = page.locator("#answer-message")
    message.wait_for(state="visible", timeout=5000)
    assert "Denied: the action does not run" in message.inner_text()
    result = agent.result()
    assert result["ok"] is False and result["code"] == "approval_denied", result
    details = result["details"]  # the kernel may add timings (approvalMs) beside these
    assert details["reason"] == "confirmation_denied" and details["confirmationId"] == row.id
    assert keep.exists() and (keep / "file.txt").exists()
    done = page.locator(f"#done-{row.id}")
    done.wait_for(state="visible", timeout=5000)
    assert "denied" in done.locator(".outcome").inner_text()
    assert "by the dashboard" in done.locator(".outcome").inner_text()
    assert page.locator(f"#cf-{row.id}").count() == 0
    shot(page, "confirmations-answered")


def test_an_answer_after_the_expiry_is_refused(
    page: Any, ui_server: UiServer, browser: Any, db: Database, agents: Any, tmp_path: Path
) -> None:
    Settings.update(db, confirmation_timeout_seconds=5)
    (tmp_path / "late").mkdir()
    agent = agents(tmp_path, "rm -rf late")
    row = _pending(db, agent)
    page.locator(f"#note-{row.id}").wait_for(state="visible", timeout=5000)
    stale = _stale_tab(browser, page, ui_server)
    result = agent.result()  # the broker gave up waiting
    assert result["ok"] is False and result["code"] == "approval_denied"
    assert result["details"]["reason"] == "confirmation_expired"
    page.locator(f"#note-{row.id}").wait_for(state="detached", timeout=8000)
    stale.locator(f"#cf-{row.id} button.approve").click()
    assert "expired; the action did not run" in stale.locator("#answer-message").inner_text()
    stale.context.close()
    assert (tmp_path / "late").exists()
    expired = Confirmations(db, SessionManager(db)).repo.get(row.id)
    assert expired is not None and expired.status == "expired"


def test_a_remote_browser_answers_only_up_to_l2(tmp_path: Path) -> None:
    """The guard at the confirmation's own level, through the real app on a real SQLite file:
    a browser on another machine (Starlette's test client is not a loopback peer) may answer
    an L2 confirmation when ``remote.approveL2`` is on, never an L3 one, and learns nothing
    more than that."""
    store = Database(tmp_path / "remote.sqlite3")
    SessionRepository(store).insert("cs_remote", "agent-r", "atomic", TaskContract(), None)
    repo = Confirmations(store, SessionManager(store)).repo
    repo.create("cf_00000000000a", "cs_remote", "a1", "click", RiskLevel.L2, "r", "L2 one", 60)
    repo.create("cf_00000000000b", "cs_remote", "a2", "click", RiskLevel.L3, "r", "L3 one", 60)
    Settings.update(store, remote={"observe": True, "approveL2": True, "control": False})
    ctx = DashboardContext(db=store)
    ctx.bind("http://testserver", frozenset({"testserver"}))
    with TestClient(create_app(ctx), base_url="http://testserver") as client:
        assert client.get(f"/login?token={ctx.access.new_login()}").status_code == 200
        listed = client.get("/confirmations")
        assert "L2 one" in listed.text and "L3 one" in listed.text  # observing is allowed
        found = re.search(r'name="csrf-token" content="([^"]+)"', listed.text)
        assert found is not None
        headers = {
            "Origin": "http://testserver",
            "X-CSRF-Token": found.group(1),
            "Accept": "application/json",
        }
        l3 = client.post("/confirmations/cf_00000000000b/approve", headers=headers)
        assert l3.status_code == 403 and "Only a browser on this machine" in l3.text
        l2 = client.post("/confirmations/cf_00000000000a/approve", headers=headers)
        assert l2.status_code == 200 and l2.json()["ok"] is True
        assert client.post("/unhalt", headers=headers).status_code == 403  # never remote
        Settings.update(store, remote={"observe": True, "approveL2": False, "control": False})
        off = client.post("/confirmations/cf_00000000000b/deny", headers=headers)
        assert off.status_code == 403 and "remote.approveL2" in off.text
    statuses = {
        cid: getattr(repo.get(cid), "status", None)
        for cid in ("cf_00000000000a", "cf_00000000000b")
    }
    assert statuses == {"cf_00000000000a": "approved", "cf_00000000000b": "pending"}
