"""Every setting changes behaviour in the processes that act — also when *another* process
writes it (the dashboard, ``deskpilot settings set``, this test process).

The acting process is a real ``deskpilot serve --transport http`` on the private desktop,
driven by the official MCP client against a real gnome-calculator; each test gets its own
server and data dir (its kill switch, halts and settings touch nothing else of the suite).
Escape needs an action long enough to press a key during it, so that one reader is a kernel in
this process over the recorded backend, with the setting written by a ``deskpilot settings``
subprocess. Figures (re-arm latency, the cost of full recording) are printed.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from statistics import median
from typing import Any

import pytest
from PIL import Image

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.desktop.virtual import is_private_display
from deskpilot.kernel import Kernel
from deskpilot.kernel.broker.admission import check_environment
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import SessionState
from deskpilot.protocol.wire import TypeTextAction
from deskpilot.store.confirmations import ConfirmationRepository
from deskpilot.store.db import Database
from deskpilot.store.settings import Environments, Settings, SettingsModel
from deskpilot.vault.service import SnapshotService
from deskpilot.vault.store import Vault
from serve_kit import HttpServer, http_server
from web.settings_kit import (
    McpThread,
    dashboard,
    diag_of,
    element_id,
    error_code,
    state_id_of,
    text_of,
    until,
    xtest_chord,
)
from web.uikit import start_ui

from . import trees
from .backends import RecordedBackend, screen

pytestmark = pytest.mark.desktop

#: the broker's settings cache re-reads another process's write within 1 s
CACHE_S = 1.0


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    return d


@pytest.fixture
def db(data_dir: Path) -> Iterator[Database]:
    database = Database(data_dir / "deskpilot.sqlite3")
    yield database
    database.close()


@pytest.fixture
def env(data_dir: Path) -> dict[str, str]:
    """What the subprocesses of one test share: its data dir, a file vault key."""
    return {"DESKPILOT_DATA_DIR": str(data_dir), "DESKPILOT_VAULT_KEY_STORAGE": "file"}


@pytest.fixture
def calculator(dp_desktop: Any) -> Iterator[App]:
    app = launch_accessible(["gnome-calculator"])
    yield app
    app.stop()


@pytest.fixture
def served(env: dict[str, str], calculator: App) -> Iterator[tuple[HttpServer, McpThread]]:
    with http_server(env) as serve:
        client = McpThread(serve)
        try:
            yield serve, client
        finally:
            client.close()


def _state(client: McpThread) -> Any:
    result = client.call("get_app_state", {"app": "gnome-calculator"})
    assert not result.is_error, text_of(result)[:2000]
    return result


def _click(client: McpThread, label: str, state: Any | None = None) -> Any:
    state = state or _state(client)
    args = {"state_id": state_id_of(state), "element_id": element_id(state, f'"{label} {label}"')}
    return client.call("click", args)


def _written(db: Database, **changes: Any) -> None:
    """A write by this process, which is another process for the server; then the time the
    broker's cache may take to see it."""
    Settings.update(db, **changes)
    time.sleep(CACHE_S + 0.2)


# ---------------------------------------------------------------------- environments


def _bare_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """An X server deskpilot did not start: what "my desktop" looks like to the kernel."""
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "320x200x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as r:
        number = r.readline().strip().decode()
    assert number.isdigit(), "Xvfb reported no display"
    return proc, f":{number}"


def test_which_desktops_are_private(dp_desktop: vdesk.DesktopState, tmp_path: Path) -> None:
    display = dp_desktop.display
    assert is_private_display(display)
    assert is_private_display(f"{display}.0") and is_private_display(f"unix{display}")
    assert not is_private_display(f"localhost{display}")  # TCP: never one of ours
    assert not is_private_display(None) and not is_private_display("")
    proc, bare = _bare_xvfb()
    try:
        assert not is_private_display(bare)
        # a state file for it that names a process which is not the recorded one: not ours
        state_file = vdesk.virtual.state_dir() / f"{bare.lstrip(':')}.json"
        forged = {"display": bare, "pids": {"xvfb": proc.pid}, "starts": {"xvfb": 1}}
        state_file.write_text(json.dumps(forged))
        try:
            assert not is_private_display(bare)
        finally:
            state_file.unlink()
        # the kernel's rule on that display: "my desktop"
        mine_off = SettingsModel(environments=Environments(my_desktop=False))
        with pytest.raises(DeskpilotError) as e:
            check_environment(mine_off, display=bare)
        assert e.value.code is ErrorCode.COMPUTER_DISABLED
        assert e.value.details == {
            "reason": "environment_disabled",
            "environment": "myDesktop",
            "display": bare,
        }
        check_environment(
            SettingsModel(environments=Environments(private_desktop=False)), display=bare
        )
    finally:
        proc.terminate()
        proc.wait(5)


def test_environments_gate_actions_not_observing(
    served: tuple[HttpServer, McpThread], db: Database
) -> None:
    _, client = served
    first = _click(client, "7")
    assert not first.is_error, text_of(first)[:2000]
    _written(db, environments={"myDesktop": True, "privateDesktop": False})
    state = _state(client)  # observing works
    refused = _click(client, "8", state)
    d = diag_of(refused)
    assert d["code"] == "computer_disabled", d
    assert d["details"]["reason"] == "environment_disabled", d
    assert d["details"]["environment"] == "privateDesktop", d
    assert "privateDesktop" in text_of(refused) or "private" in text_of(refused)
    # "my desktop" off does not touch a private desktop
    _written(db, environments={"myDesktop": False, "privateDesktop": True})
    again = _click(client, "8", _state(client))
    assert not again.is_error, text_of(again)[:2000]


# ---------------------------------------------------------------------- the broker's inputs


def test_enabled_allowed_apps_and_confirmations_follow_another_process(
    served: tuple[HttpServer, McpThread], db: Database
) -> None:
    _, client = served
    # enabled
    _written(db, enabled=False)
    state = _state(client)
    assert error_code(_click(client, "1", state)) == "computer_disabled"
    _written(db, enabled=True)
    assert not _click(client, "1").is_error

    # allowedApps: a list without the calculator blocks it; with it (any case), allowed
    _written(db, allowed_apps=["mousepad"])
    blocked = _click(client, "2")
    d = diag_of(blocked)
    assert d["code"] == "action_blocked", d
    assert "app_not_allowed" in json.dumps(d), d
    _written(db, allowed_apps=["mousepad", "GNOME-Calculator"])
    assert not _click(client, "2").is_error
    _written(db, allowed_apps=[])

    # requireConfirmationAbove + confirmationTimeoutSeconds: a click (L1) now waits for the
    # person, for as long as the timeout says; a denial from here ends it
    _written(db, require_confirmation_above="L0", confirmation_timeout_seconds=7)
    state = _state(client)
    args = {"state_id": state_id_of(state), "element_id": element_id(state, '"3 3"')}
    waiting = client.submit("click", args)
    repo = ConfirmationRepository(db)
    until(lambda: repo.list("pending"), timeout=10)
    (pending,) = repo.list("pending")
    assert pending.expires_at - pending.created_at == pytest.approx(7, abs=0.5)
    assert int(pending.risk_level) == 1
    assert repo.resolve(pending.id, "denied", "test")
    result = waiting.result(30)
    assert error_code(result) == "approval_denied", text_of(result)[:1000]

    # and back to "off": no confirmation any more
    _written(db, require_confirmation_above="off")
    assert not _click(client, "3").is_error
    assert repo.list("pending") == []


def test_external_readback_follows_another_process(
    served: tuple[HttpServer, McpThread], db: Database
) -> None:
    _, client = served
    spec = {"kind": "external_readback", "argv": ["true"], "expectExit": 0}
    state = _state(client)
    args = {
        "state_id": state_id_of(state),
        "element_id": element_id(state, '"4 4"'),
        "expect": [spec],
    }
    refused = client.call("click", args)
    assert error_code(refused) == "invalid_request", text_of(refused)[:2000]
    assert "allowExternalReadback" in text_of(refused), text_of(refused)[:2000]
    _written(db, allow_external_readback=True)
    state = _state(client)
    args["state_id"] = state_id_of(state)
    args["element_id"] = element_id(state, '"4 4"')
    accepted = client.call("click", args)
    assert not accepted.is_error, text_of(accepted)[:2000]
    assert "Expectations: all passed." in text_of(accepted), text_of(accepted)[:2000]


# ---------------------------------------------------------------------- full recording


def _evidence(db: Database) -> list[dict[str, Any]]:
    rows = db.query(
        "SELECT id, redaction_json FROM snapshots WHERE kind = 'evidence' ORDER BY created_at"
    )
    return [{"id": r["id"], **json.loads(r["redaction_json"])} for r in rows]


def test_full_recording_keeps_frames_before_and_after_each_action(
    served: tuple[HttpServer, McpThread], db: Database, env: dict[str, str]
) -> None:
    _, client = served
    off_ms: list[float] = []
    on_ms: list[float] = []
    for label in ("1", "2", "3", "4", "5"):  # off (the default): no frame at all
        state = _state(client)
        t0 = time.perf_counter()
        assert not _click(client, label, state).is_error
        off_ms.append((time.perf_counter() - t0) * 1000)
    assert _evidence(db) == []

    _written(db, full_recording_enabled=True)
    for label in ("6", "7", "8", "9", "0"):
        state = _state(client)
        t0 = time.perf_counter()
        clicked = _click(client, label, state)
        on_ms.append((time.perf_counter() - t0) * 1000)
        assert not clicked.is_error, text_of(clicked)[:2000]
    frames = _evidence(db)
    assert [f["trigger"] for f in frames] == ["before", "after"] * 5, frames
    actions = [
        r["id"] for r in db.query("SELECT id FROM actions WHERE kind = 'click' ORDER BY created_at")
    ][-5:]
    assert [f["actionId"] for f in frames] == [a for a in actions for _ in (0, 1)]
    # the frames are the calculator's window, before and after the press: they differ
    vault = Vault.open(Path(env["DESKPILOT_DATA_DIR"]) / "snapshot-vault")
    service = SnapshotService(db, vault)
    before = Image.open(io.BytesIO(service.read_blob(frames[0]["id"], "evidence")))
    after = Image.open(io.BytesIO(service.read_blob(frames[1]["id"], "evidence")))
    assert before.size == after.size and before.width <= 1200
    assert before.tobytes() != after.tobytes()

    _written(db, full_recording_enabled=False)  # and off again: no more frames
    assert not _click(client, "7").is_error
    assert len(_evidence(db)) == 10
    print(
        f"click round trip: full recording off median {median(off_ms):.0f} ms, "
        f"on median {median(on_ms):.0f} ms"
    )


# ---------------------------------------------------------------------- vault maintenance


def _settings_cli(env: dict[str, str], name: str, value: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "deskpilot", "settings", "set", name, value],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def _noise_png(width: int, height: int) -> bytes:
    """An incompressible PNG: its encrypted blob is as large as its pixels."""
    img = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def test_retention_and_quota_are_read_when_used_not_at_start(
    db: Database, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived vault service (as in ``deskpilot serve``) follows a ``deskpilot settings``
    write by another process at its next capture and its next maintenance run."""
    from deskpilot.protocol.wire import AppIdentity

    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "file")
    vault = Vault.open(Path(env["DESKPILOT_DATA_DIR"]) / "snapshot-vault")
    service = SnapshotService(db, vault)  # started with the defaults: 30 days, 1 GiB
    app = AppIdentity(executable="mousepad")
    kept = service.capture_app_snapshot(_noise_png(64, 64), app=app)
    assert service.run_maintenance().expired_snapshots == 0
    _settings_cli(env, "evidenceRetentionDays", "0")
    assert service.run_maintenance().expired_snapshots == 1
    assert db.query("SELECT id FROM snapshots WHERE id = ?", (kept.id,)) == []

    big = _noise_png(1600, 1200)  # ≈ 5.8 MB each
    first = service.capture_app_snapshot(big, app=app)
    service.capture_app_snapshot(big, app=app)
    service.capture_app_snapshot(big, app=app)
    assert service.repo.total_bytes() > 16 * 1024**2  # under the 1 GiB default, all kept
    _settings_cli(env, "vaultQuotaBytes", str(16 * 1024**2))
    last = service.capture_app_snapshot(big, app=app)  # the next capture enforces it
    assert service.repo.total_bytes() <= 16 * 1024**2
    ids = {r["id"] for r in db.query("SELECT id FROM snapshots")}
    assert first.id not in ids and last.id in ids  # least recently used went first


# ---------------------------------------------------------------------- the kill switch


def test_a_chord_written_by_the_dashboard_rearms_a_running_serve(
    served: tuple[HttpServer, McpThread], db: Database, env: dict[str, str], dp_desktop: Any
) -> None:
    _, client = served
    _state(client)  # the server now has a session on the desktop
    status = json.loads(text_of(client.call("status", {})).split("\n\n")[0])
    # a fresh install (no settings row at all) arms the default chord
    assert db.query("SELECT key FROM settings WHERE key = 'killSwitch'") == []
    assert status["killSwitch"]["chord"] == "ctrl+shift+Escape", status["killSwitch"]
    assert status["killSwitch"]["state"] == "armed", status["killSwitch"]
    ui = start_ui(env=env)
    try:
        page = dashboard(ui)
        # the new chord does nothing while it is not the setting
        xtest_chord(dp_desktop.display, "Control_L", "Alt_L", "k")
        time.sleep(0.7)
        assert not _halted(db)
        t0 = time.monotonic()
        saved = page.save(killSwitch="ctrl+alt+k")
        assert saved.status_code == 303, saved.text[:500]

        def armed() -> bool:
            ks = json.loads(text_of(client.call("status", {})).split("\n\n")[0])["killSwitch"]
            return bool(ks["chord"] == "ctrl+alt+k" and ks["state"] == "armed")

        until(armed, timeout=5.0, step=0.05)
        rearm_ms = (time.monotonic() - t0) * 1000
        xtest_chord(dp_desktop.display, "Control_L", "Alt_L", "k")
        until(lambda: _halted(db), timeout=5.0)
        sessions = db.query("SELECT state FROM sessions")
        assert sessions and all(r["state"] == SessionState.CANCELED.value for r in sessions)
        print(f"kill switch re-armed {rearm_ms:.0f} ms after the dashboard saved the chord")
        assert rearm_ms < 1500, rearm_ms
        # (the chord pressed before it was armed reached the calculator, which may have
        # taken it as a mode shortcut: "Undo" is there in every mode)
        state = _state(client)
        args = {"state_id": state_id_of(state), "element_id": element_id(state, '"Undo"')}
        refused = client.call("click", args)
        assert error_code(refused) == "kill_switch_engaged", text_of(refused)[:500]
    finally:
        ui.stop()


def _halted(db: Database) -> bool:
    from deskpilot.kernel.halt import Halt

    return Halt(db).active() is not None


# ---------------------------------------------------------------------- Escape


async def test_escape_follows_a_setting_written_by_another_process(
    dp_desktop: vdesk.DesktopState, db: Database, env: dict[str, str]
) -> None:
    backend = RecordedBackend(default=screen(trees.EDITOR))
    backend.delay = 1.5
    kernel = Kernel(backend, db, flags=Flags({}))

    async def type_and_press_escape() -> Any:
        sid = await kernel.open_session("agent-a")
        obs = (await kernel.observe(sid)).observation
        running = asyncio.ensure_future(
            kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="long"))
        )
        await asyncio.sleep(0.2)
        await asyncio.to_thread(xtest_chord, dp_desktop.display, "Escape")
        return sid, running

    try:
        await kernel.start_kill_switch(dp_desktop.display)
        # on (the default): the person's Escape ends the action and hands the session over
        sid, running = await type_and_press_escape()
        with pytest.raises(DeskpilotError) as e:
            await asyncio.wait_for(running, 10)
        assert e.value.code is ErrorCode.HANDOFF_REQUIRED
        assert kernel.escape_interrupts == 1
        # off, written by another process
        out = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "deskpilot", "settings", "set", "escapeCancelsAction", "false"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        await asyncio.sleep(CACHE_S + 0.2)
        assert kernel.settings().escape_cancels_action is False
        sid, running = await type_and_press_escape()
        result = await asyncio.wait_for(running, 10)
        assert result.result.dispatched  # the person's Escape did not end it: the setting is off
        assert kernel.escape_interrupts == 1
        assert kernel.session_state(sid) is not SessionState.HANDOFF_REQUIRED
    finally:
        await kernel.close()
