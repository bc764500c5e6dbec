"""A live session's controls from the dashboard, in a real browser, against real agents.

* a delegated task — ``deskpilot run`` (its own process) on gnome-calculator, its decisions
  from the scripted OpenAI-compatible model server (tests/operator/scripted_model.py) — is
  paused from the page, stays still while paused, is resumed and finishes;
* an MCP client (the official SDK over Streamable HTTP to ``deskpilot serve``) has its click
  refused with ``handoff_required`` while the person holds the desktop; the person's own
  keys reach the calculator meanwhile; Hand back, and the agent's next click works and its
  result says what changed;
* Change window lists the desktop's windows without the minimised one and re-binds the paused
  session; a control the owning process cannot carry out (it is stopped with SIGSTOP) shows
  its error on the page in words; bad input is a typed 400.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.oversight.session_controls import available, choices
from deskpilot.oversight.sessions_view import session_summary
from deskpilot.protocol.session import TERMINAL_STATES, EventType
from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.timeline import TimelineRepository
from person_input import person_types

from .session_kit import DESKPILOT, LoopThread, McpAgent, Result
from .uikit import UiServer, shot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from scripted_model import Calculator, ScriptedModel

pytestmark = [pytest.mark.desktop, pytest.mark.chromium]

DISPLAY_SHOWS_42 = {
    "kind": "accessibility",
    "selector": {"role": "textField", "notStates": ["readonly"]},
    "assertion": "value_equals",
    "expected": "42",
}


def _wait(predicate: Any, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def calculator(dp_desktop: Any) -> Iterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = launch_accessible(["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database()
    yield database
    database.close()


@pytest.fixture
def mcp_agent(dp_desktop: Any) -> Iterator[McpAgent]:
    loop = LoopThread()
    agent = McpAgent(loop)
    try:
        yield agent
    finally:
        agent.stop()
        loop.close()


def _display(state: Result) -> str:
    """The calculator's display value in a state text (its editable text field)."""
    for line in state.text.splitlines():
        stripped = line.strip()
        if stripped.startswith("- textField") and "readonly" not in stripped:
            found = re.search(r' = "((?:[^"\\]|\\.)*)"', stripped)
            return found.group(1) if found else ""
    raise AssertionError(state.text[:2000])


def _agent_session(db: Database, owner_pid: int) -> str:
    """The live session the process ``owner_pid`` drives."""
    rows = [r for r in SessionRepository(db).list_active() if r.owner_pid == owner_pid]
    assert len(rows) == 1, rows
    return rows[0].id


def _card_saying(page: Any, card: str, words: str) -> None:
    """Wait for the timeline card ``card`` holding ``words``, as one element. CI twice read a
    card that had just shown (``wait_for``) and found it without its text (an empty card,
    a timeline without it); waiting for card and words together rides that out, and a miss
    says what the timeline held."""
    try:
        page.locator(f"#timeline {card}", has_text=words).wait_for(timeout=10_000)
    except Exception as exc:
        raise AssertionError(page.locator("#timeline").inner_html()) from exc


def _badge(page: Any) -> str | None:
    value = page.locator("#session-badge").get_attribute("data-state")
    return str(value) if value is not None else None


# ------------------------------------------------------------------ pause → resume a task


class Run:
    """``deskpilot run --json`` as a subprocess; its JSON lines collected by a thread."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [DESKPILOT, "run", *args, "--json"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.lines.append(json.loads(line))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def task_id(self, timeout: float = 60.0) -> str:
        _wait(
            lambda: any(x["type"] == "started" for x in self.lines) or self.proc.poll() is not None,
            timeout,
            "the task to start",
        )
        started = [x for x in self.lines if x["type"] == "started"]
        assert started, (self.lines, "".join(self.stderr))
        return str(started[0]["taskId"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def test_pause_then_resume_a_delegated_task_and_see_it_finish(
    dp_desktop: Any,
    calculator: App,
    ui_server: UiServer,
    logged_in: Any,
    db: Database,
    tmp_path: Path,
) -> None:
    criteria = tmp_path / "criteria.json"
    criteria.write_text(json.dumps({"success_criteria": [DISPLAY_SHOWS_42]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKPILOT_PROVIDER_")}
    # each decision takes 2.5 s: the pause lands while the operator waits for the first one
    with ScriptedModel(Calculator("7*6"), delay=2.5) as model:
        env |= {
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "DESKPILOT_PROVIDER_KEY_STORAGE": "file",
            "DESKPILOT_PROVIDER_BASE_URL": model.base_url,
            "DESKPILOT_PROVIDER_MODEL": "scripted",
            "DESKPILOT_PROVIDER_API_KEY": "test",
        }
        run = Run(["compute 7*6", "--app", str(calculator.pid), "--criteria", str(criteria)], env)
        try:
            task = run.task_id()
            page = logged_in
            page.goto(f"{ui_server.base_url}/sessions/{task}")
            assert page.locator("#session-mode").inner_text() == "delegated"
            assert page.locator("#session-objective").inner_text().endswith("compute 7*6")
            # a running task offers Pause, Take over and Stop — not Resume
            assert page.locator("#control-pause").is_visible()
            assert page.locator("#control-resume").count() == 0
            page.locator("#control-pause").click()
            _wait(lambda: _badge(page) == "paused", what="the paused badge")
            assert page.locator("#control-resume").inner_text() == "Resume"
            assert page.locator("#control-pause").count() == 0
            assert page.locator("#change-window-form").is_visible()
            page.locator("#timeline li.card.state[data-event='paused']").wait_for()
            assert "Paused by the person" in page.locator("#timeline").inner_text()
            shot(page, "controls-paused-task")

            # paused means still: the model's answer in flight is not acted on
            acted = len(ActionRepository(db).list(task))
            time.sleep(4.0)
            assert len(ActionRepository(db).list(task)) == acted
            row = SessionRepository(db).get(task)
            assert row is not None and row.state.value == "paused"
            assert run.proc.poll() is None  # the run waits; it did not end

            page.locator("#control-resume").click()
            _wait(lambda: _badge(page) != "paused", what="the resume")
            _wait(lambda: _badge(page) == "completed", timeout=120, what="the task to finish")
            assert run.proc.wait(60) == 0, (run.lines, "".join(run.stderr))
        finally:
            run.stop()
    assert not model.errors, model.errors
    result = run.lines[-1]
    assert result["type"] == "result" and result["state"] == "completed", result
    timeline = page.locator("#timeline")
    assert timeline.locator("li.card.verification[data-passed='true']").count() >= 1
    events = [c.get_attribute("data-event") for c in timeline.locator("li.card.state").all()]
    assert events.index("paused") < events.index("resumed") < events.index("completed"), events
    assert "Resumed by the person" in timeline.inner_text()
    clicks = timeline.locator("li.card.action[data-status='executed']")
    assert clicks.count() >= 4  # 7 × 6 =
    assert page.locator("#control-buttons").count() == 0  # ended: no controls
    assert page.locator("#controls-ended").is_visible()
    shot(page, "controls-task-completed")


# ------------------------------------------------------------------ take over → hand back


def test_take_over_refuses_the_agent_then_hand_back_lets_it_continue(
    dp_desktop: Any,
    calculator: App,
    mcp_agent: McpAgent,
    ui_server: UiServer,
    logged_in: Any,
    db: Database,
) -> None:
    agent = mcp_agent
    state = agent.call("get_app_state", {"app": calculator.pid})
    assert not state.is_error, state.text
    first = agent.call(
        "click", {"state_id": state.state_id(), "element_id": state.element('"7 7"')}
    )
    assert not first.is_error, first.text
    assert _display(first) == "7"
    sid = _agent_session(db, agent.pid)

    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{sid}")
    assert _badge(page) == "observing"
    page.locator("#control-takeover").click()
    _wait(lambda: _badge(page) == "taken_over", what="the taken-over badge")
    assert page.locator("#session-badge").inner_text() == "taken over"
    assert page.locator("#control-resume").inner_text() == "Hand back"
    assert page.locator("#control-takeover").count() == 0
    assert page.locator("#takeover-note").is_visible()
    assert page.locator("#session-held-by").inner_text() == "the person"
    shot(page, "controls-taken-over")

    # the agent's click is refused (not queued), and nothing reached the calculator
    actions_before = len(ActionRepository(db).list(sid))
    refused = agent.call(
        "click", {"state_id": first.state_id(), "element_id": first.element('"× ×"')}
    )
    assert refused.is_error and "handoff_required" in refused.text, refused.text
    assert len(ActionRepository(db).list(sid)) == actions_before
    # the person's own keys work while they hold the desktop; the agent may still look
    window = first.text.split("Window=(", 1)[1].split("id=", 1)[1].split(")", 1)[0]
    person_types(os.environ["DISPLAY"], ["5"], focus_window=int(window, 16))
    looked = agent.call("get_app_state", {"app": calculator.pid})
    assert not looked.is_error, looked.text
    _wait(
        lambda: _display(agent.call("get_app_state", {"app": calculator.pid})) == "75",
        what="the person's key on the display",
    )
    time.sleep(1.0)  # a queued click would have landed by now: it was refused, not queued
    assert _display(agent.call("get_app_state", {"app": calculator.pid})) == "75"

    page.locator("#control-resume").click()
    _wait(lambda: _badge(page) == "observing", what="the hand back")
    _card_saying(page, "li.card.state.handback", "Handed back by the person")
    assert page.locator("#control-pause").is_visible()

    # the agent continues: a fresh state, and the hand back's note rides on its next result
    state = agent.call("get_app_state", {"app": calculator.pid})
    assert not state.is_error, state.text
    assert "handBack: " in state.text, state.text[:1500]
    note = json.loads(state.text.split("handBack: ", 1)[1].splitlines()[0])
    assert note["by"] == "person" and note["treeVersionChanged"] is True, note
    times = agent.call(
        "click", {"state_id": state.state_id(), "element_id": state.element('"× ×"')}
    )
    assert not times.is_error, times.text
    assert _display(times) == "75×"
    assert len(ActionRepository(db).list(sid)) == actions_before + 1
    kinds = [e.type for e in TimelineRepository(db).list(sid, limit=10_000)]
    paused = [i for i, k in enumerate(kinds) if k is EventType.SESSION_PAUSED]
    resumed = [i for i, k in enumerate(kinds) if k is EventType.SESSION_RESUMED]
    assert paused and resumed and paused[-1] < resumed[-1]
    page.locator("#timeline li.card.action").nth(1).wait_for()
    shot(page, "controls-handed-back")


def test_a_takeover_from_mcp_shows_here_and_either_side_hands_back(
    dp_desktop: Any,
    calculator: App,
    mcp_agent: McpAgent,
    ui_server: UiServer,
    logged_in: Any,
    db: Database,
) -> None:
    agent = mcp_agent
    state = agent.call("get_app_state", {"app": calculator.pid})
    assert not state.is_error, state.text
    sid = _agent_session(db, agent.pid)
    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{sid}")
    assert _badge(page) == "observing"

    # the agent hands the desktop to the person (MCP takeover): the open page follows
    taken = agent.call("takeover", {})
    assert not taken.is_error, taken.text
    _wait(lambda: _badge(page) == "taken_over", what="the taken-over badge")
    assert page.locator("#control-resume").inner_text() == "Hand back"
    # the kernel records the agent's own takeover with by="agent": the card says who did it
    _wait(
        lambda: (
            "The agent handed the desktop to the person" in page.locator("#timeline").inner_text()
        ),
        what="the agent's takeover card",
    )
    assert "Taken over by" not in page.locator("#timeline").inner_text()
    refused = agent.call(
        "click", {"state_id": state.state_id(), "element_id": state.element('"1 1"')}
    )
    assert refused.is_error and "handoff_required" in refused.text, refused.text
    # ... and the agent's own resume hands it back (MCP resume): the page follows again
    back = agent.call("resume", {})
    assert not back.is_error, back.text
    assert '"handBack"' in back.text
    _wait(lambda: _badge(page) == "observing", what="the MCP hand back")
    assert page.locator("#timeline li.card.state.handback").count() == 1

    # a second takeover by the agent, handed back by the person from here
    assert not agent.call("takeover", {}).is_error
    _wait(lambda: _badge(page) == "taken_over", what="the second takeover")
    page.locator("#control-resume").click()
    _wait(lambda: _badge(page) == "observing", what="the hand back from the page")
    _wait(
        lambda: page.locator("#timeline li.card.state.handback").count() == 2,
        what="the second hand back's card",
    )
    state = agent.call("get_app_state", {"app": calculator.pid})
    assert not state.is_error and "handBack: " in state.text, state.text[:1500]
    one = agent.call("click", {"state_id": state.state_id(), "element_id": state.element('"1 1"')})
    assert not one.is_error and _display(one) == "1", one.text
    shot(page, "controls-mcp-takeover-handed-back")


# ------------------------------------------------------------------ change window, failures


def _iconify(window_id: str) -> None:
    """What a window manager does to minimise a window (ICCCM): WM_STATE Iconic, unmapped."""
    from Xlib import X, display

    d = display.Display(os.environ["DISPLAY"])
    try:
        win = d.create_resource_object("window", int(window_id, 16))
        wm_state = d.intern_atom("WM_STATE")
        win.change_property(wm_state, wm_state, 32, [3, X.NONE])
        win.unmap()
        d.sync()
    finally:
        d.close()


def test_change_window_lists_windows_without_minimised_ones_and_rebinds(
    dp_desktop: Any,
    calculator: App,
    mcp_agent: McpAgent,
    ui_server: UiServer,
    logged_in: Any,
    db: Database,
) -> None:
    zenity = shutil.which("zenity")
    if zenity is None:
        pytest.skip("zenity is not installed")
    shown = launch_accessible([zenity, "--info", "--title=Pick me", "--text=pick me"])
    hidden = launch_accessible([zenity, "--info", "--title=Minimised", "--text=hidden"])
    try:
        agent = mcp_agent
        listed = agent.call("list_windows", {})
        assert not listed.is_error, listed.text
        data = json.loads(listed.text.split("\n\ndeskpilot diagnostic:")[0])
        windows = {w["title"]: w["windowId"] for w in data["windows"]}
        _iconify(windows["Minimised"])
        state = agent.call("get_app_state", {"app": calculator.pid})
        assert not state.is_error, state.text
        sid = _agent_session(db, agent.pid)

        page = logged_in
        page.goto(f"{ui_server.base_url}/sessions/{sid}")
        assert page.locator("#change-window-form").count() == 0  # only while paused
        page.locator("#control-pause").click()
        _wait(lambda: _badge(page) == "paused", what="the paused badge")
        options = page.locator("#window-select option")
        _wait(lambda: options.count() > 0, what="the window list")
        values = [o.get_attribute("value") for o in options.all()]
        texts = [o.inner_text() for o in options.all()]
        assert windows["Pick me"] in values and windows["Calculator"] in values, texts
        assert windows["Minimised"] not in values, texts
        shot(page, "controls-change-window")

        page.locator("#window-select").select_option(windows["Pick me"])
        page.locator("#control-bind_target").click()
        # the notification says what changed, with the window's title and id
        said = f"Window changed to “Pick me” ({windows['Pick me']})"
        page.locator("#notifications .note", has_text=said).wait_for(timeout=5000)
        _card_saying(page, "li.card.state[data-event='target_bound']", windows["Pick me"])
        _wait(
            lambda: windows["Pick me"] in page.locator("#session-target").inner_text(),
            what="the new target in the head",
        )
        # the bound target is one thing: the new window, never the old one joined to it
        target = page.locator("#session-target").inner_text()
        assert windows["Calculator"] not in target and target.count("0x") == 1, target
        assert "Pick me" in target, target
        row = SessionRepository(db).get(sid)
        assert row is not None and row.target is not None
        assert row.target.window_id == windows["Pick me"] and row.state.value == "paused"

        # bad input is a typed 400 in words, not a crash
        csrf = page.locator('meta[name="csrf-token"]').get_attribute("content")
        headers = {"X-CSRF-Token": csrf, "Accept": "application/json", "Origin": ui_server.base_url}
        # a window that does not exist: the kernel refuses it (target_not_found), in words
        gone = page.request.post(
            f"{ui_server.base_url}/sessions/{sid}/control",
            form={"verb": "bind_target", "windowId": "0x7ffffff0"},
            headers=headers,
        )
        assert gone.status == 409 and gone.json()["code"] == "target_not_found", gone.text()
        assert "window 0x7ffffff0 is not there any more" in gone.json()["message"]
        bad = page.request.post(
            f"{ui_server.base_url}/sessions/{sid}/control",
            form={"verb": "bind_target", "windowId": "calculator"},
            headers=headers,
        )
        assert bad.status == 400 and bad.json()["code"] == "invalid_request"
        assert "choose a window from the list" in bad.json()["message"]
        bad = page.request.post(
            f"{ui_server.base_url}/sessions/{sid}/control",
            form={"verb": "explode"},
            headers=headers,
        )
        assert bad.status == 400 and "unknown control 'explode'" in bad.json()["message"]
        # without JavaScript: a plain form post gets the page back with the error in words
        plain = page.request.post(
            f"{ui_server.base_url}/sessions/{sid}/control",
            form={"csrf": csrf or "", "verb": "bind_target", "windowId": "0xZZ"},
            headers={"Origin": ui_server.base_url},
            max_redirects=0,
        )
        assert plain.status == 400 and "text/html" in plain.headers["content-type"]
        assert "Change window did not work: choose a window from the list" in plain.text()
        plain = page.request.post(
            f"{ui_server.base_url}/sessions/{sid}/control",
            form={"csrf": csrf or "", "verb": "resume"},
            headers={"Origin": ui_server.base_url},
            max_redirects=0,
        )
        assert plain.status == 303 and plain.headers["location"] == f"/sessions/{sid}"
        row = SessionRepository(db).get(sid)
        assert row is not None and row.state.value != "paused"
    finally:
        shown.stop()
        hidden.stop()


def test_a_control_that_cannot_be_carried_out_shows_its_error_on_the_page(
    dp_desktop: Any,
    calculator: App,
    mcp_agent: McpAgent,
    ui_server: UiServer,
    logged_in: Any,
    db: Database,
) -> None:
    agent = mcp_agent
    state = agent.call("get_app_state", {"app": calculator.pid})
    assert not state.is_error, state.text
    sid = _agent_session(db, agent.pid)
    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{sid}")
    os.kill(agent.pid, signal.SIGSTOP)  # the owning process is stuck: nobody takes the pause
    try:
        t0 = time.monotonic()
        page.locator("#control-pause").click()
        error = page.locator("#control-error")
        error.wait_for(state="visible", timeout=30_000)
        took = time.monotonic() - t0
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    text = error.inner_text()
    assert text.startswith("Pause did not work:"), text
    assert "did not take the pause within 10 s; nothing was done" in text, text
    code = error.locator("a.code")
    assert code.inner_text() == "environment_unavailable"
    assert code.get_attribute("href") == "/errors#environment_unavailable"
    assert 9.0 < took < 25.0, took
    shot(page, "controls-error")
    row = SessionRepository(db).get(sid)
    assert row is not None and row.state.value == "observing"  # indeed nothing was done
    # once the process runs again, the same button works, and the error goes away
    page.locator("#control-pause").click()
    _wait(lambda: _badge(page) == "paused", what="the paused badge")
    assert page.locator("#control-error").is_hidden()
    # Stop ends it for good: no controls any more, and why it ended
    page.locator("#control-stop").click()
    _wait(lambda: _badge(page) == "canceled", what="the stopped badge")
    assert page.locator("#session-badge").inner_text() == "stopped"
    assert page.locator("#session-reason").inner_text() == "user_stop"
    assert page.locator("#control-buttons").count() == 0
    page.locator("#timeline li.card.state[data-event='canceled']").wait_for()


def test_a_session_whose_process_is_gone_can_only_be_stopped(
    dp_desktop: Any,
    calculator: App,
    mcp_agent: McpAgent,
    ui_server: UiServer,
    logged_in: Any,
    db: Database,
) -> None:
    agent = mcp_agent
    state = agent.call("get_app_state", {"app": calculator.pid})
    assert not state.is_error, state.text
    sid = _agent_session(db, agent.pid)
    os.killpg(agent.pid, signal.SIGKILL)  # the server dies without closing its sessions
    agent.proc.wait(10)
    page = logged_in
    page.goto(f"{ui_server.base_url}/sessions/{sid}")
    assert _badge(page) == "observing"  # the row still says so: nobody ended it
    note = page.locator("#controls-owner-gone")
    assert f"(pid {agent.pid}) has ended: it can only be stopped" in note.inner_text()
    assert [b.get_attribute("id") for b in page.locator("#control-buttons button").all()] == [
        "control-stop"
    ]
    shot(page, "controls-owner-gone")
    page.locator("#control-stop").click()
    _wait(lambda: _badge(page) == "canceled", what="the stopped badge")
    row = SessionRepository(db).get(sid)
    assert row is not None and row.cancel_reason == "user_stop"


def test_buttons_follow_the_state(db: Database) -> None:
    """Which controls a state offers (no browser: the rule the page renders)."""
    rows = SessionRepository(db).list_recent(200)
    assert rows, "the tests above leave sessions behind"
    for row in rows:
        summary = session_summary(db, row.id)
        verbs = [c.verb for c in available(summary)]
        if row.state in TERMINAL_STATES:
            assert verbs == []
        elif summary.badge == "taken_over":
            assert verbs == ["resume", "stop"]
        elif row.state.value in ("paused", "handoff_required"):
            assert verbs == ["resume", "takeover", "stop"]
        else:
            assert verbs == ["pause", "takeover", "stop"]


def test_minimised_windows_are_not_offered() -> None:
    def window(wid: str, *, minimized: bool) -> WindowInfo:
        return WindowInfo(
            window_id=wid,
            title=wid,
            bounds=Rect(x=0, y=0, width=10, height=10),
            minimized=minimized,
            app=AppIdentity(name="app"),
        )

    offered = choices([window("0x1", minimized=False), window("0x2", minimized=True)])
    assert [c.window_id for c in offered] == ["0x1"]
