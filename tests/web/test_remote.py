"""The ``remote`` setting for real: ``deskpilot ui --bind`` on a non-loopback address of this
machine, requests made *from* that address (so the server sees a peer that is not
loopback), and each of observe / approveL2 / control flipped between requests of the same
server process — read per request, no restart. Settings and Unhalt stay local-only whatever
``remote`` says.

A machine without a non-loopback IPv4 address skips these tests: binding 0.0.0.0 instead would
not do — the dashboard answers only to the one address it is bound as (its Host check), and a
wildcard bind would serve every interface at once.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.session import RiskLevel
from deskpilot.store.confirmations import ConfirmationRepository
from deskpilot.store.db import Database
from deskpilot.store.settings import RemoteAccess, Settings

from .uikit import UiServer, shot, start_ui


def _lan_address() -> str | None:
    """A non-loopback IPv4 address of this machine: the one its default route would use,
    else the first one ``hostname -I`` lists."""
    found: list[str] = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("198.51.100.1", 9))  # TEST-NET-2; a UDP connect sends nothing
            found.append(str(s.getsockname()[0]))
    except OSError:
        pass
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5)
        found += out.stdout.split()
    except (OSError, subprocess.SubprocessError):
        pass
    for address in found:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            continue
        if ip.version == 4 and not ip.is_loopback and not ip.is_unspecified:
            return address
    return None


LAN = _lan_address()
pytestmark = pytest.mark.skipif(
    LAN is None, reason="this machine has no non-loopback IPv4 address to bind the dashboard to"
)


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database()
    Settings.reset(database)
    yield database
    Settings.reset(database)
    database.close()


@pytest.fixture
def remote_ui(db: Database) -> Iterator[UiServer]:
    assert LAN is not None
    server = start_ui("--bind", LAN)
    assert server.base_url.startswith(f"http://{LAN}:"), server.base_url
    yield server
    server.stop()


def _client(server: UiServer) -> httpx.Client:
    """An HTTP client whose requests leave from the LAN address: the server's peer."""
    assert LAN is not None
    transport = httpx.HTTPTransport(local_address=LAN)
    return httpx.Client(
        base_url=server.base_url, transport=transport, follow_redirects=False, timeout=15
    )


def _remote(db: Database, **flags: bool) -> None:
    Settings.update(db, remote=RemoteAccess(**flags).model_dump())


def _confirmation(db: Database, risk: RiskLevel) -> str:
    session = SessionManager(db).create("agent-remote-test", "atomic")
    cid = f"cf_{uuid.uuid4().hex[:12]}"
    ConfirmationRepository(db).create(
        cid, session.id, f"act_{uuid.uuid4().hex[:12]}", "click", risk, "test", "a click", 600
    )
    return cid


def test_each_remote_flag_gates_what_it_says_read_per_request(
    remote_ui: UiServer, db: Database
) -> None:
    http = _client(remote_ui)
    login = remote_ui.login_url.replace(remote_ui.base_url, "")
    # all off (the default): a browser on another machine gets nothing, not even the login
    refused = http.get(login)
    assert refused.status_code == 403 and "remote.observe" in refused.text
    assert "set-cookie" not in refused.headers

    # observe on: the login link works (the refusal did not spend it), looking works
    _remote(db, observe=True)
    assert http.get(login).status_code == 303
    for path in ("/live", "/sessions", "/readiness", "/confirmations", "/errors", "/settings"):
        assert http.get(path).status_code == 200, path
    page = http.get("/settings")
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert csrf
    headers = {"Origin": remote_ui.base_url}
    # ... but settings are looked at, never changed, from another machine
    assert 'id="settings-remote-note"' in page.text and 'id="settings-save"' not in page.text
    post = http.post("/settings", data={"csrf": csrf.group(1), "enabled": ["0"]}, headers=headers)
    assert post.status_code == 403 and "Only a browser on this machine" in post.text
    assert Settings.load(db).enabled is True
    reset = http.post(
        "/settings/reset", data={"csrf": csrf.group(1), "name": "remote"}, headers=headers
    )
    assert reset.status_code == 403 and Settings.load(db).remote.observe is True
    assert http.post("/unhalt", data={"csrf": csrf.group(1)}, headers=headers).status_code == 403

    # control: off → refused naming the setting; on → the guard lets the request through
    # (the made-up session then answers as unknown, which is past the gate)
    control = {"csrf": csrf.group(1), "verb": "pause"}
    r = http.post("/sessions/cs_nosuchsession/control", data=control, headers=headers)
    assert r.status_code == 403 and "remote.control" in r.text
    _remote(db, observe=True, control=True)
    r = http.post("/sessions/cs_nosuchsession/control", data=control, headers=headers)
    assert r.status_code != 403, r.text[:300]

    # approveL2: off → refused; on → an L2 confirmation is answered, an L3 one never
    l2 = _confirmation(db, RiskLevel.L2)
    l3 = _confirmation(db, RiskLevel.L3)
    answer = {"csrf": csrf.group(1)}
    r = http.post(f"/confirmations/{l2}/approve", data=answer, headers=headers)
    assert r.status_code == 403 and "remote.approveL2" in r.text
    assert ConfirmationRepository(db).get(l2).status == "pending"  # type: ignore[union-attr]
    _remote(db, observe=True, approveL2=True)
    r = http.post(f"/confirmations/{l2}/approve", data=answer, headers=headers)
    assert r.status_code == 303, r.text[:300]
    assert ConfirmationRepository(db).get(l2).status == "approved"  # type: ignore[union-attr]
    r = http.post(f"/confirmations/{l3}/approve", data=answer, headers=headers)
    assert r.status_code == 403 and "Only a browser on this machine" in r.text
    assert ConfirmationRepository(db).get(l3).status == "pending"  # type: ignore[union-attr]
    # control went off again with that write: checked per request
    r = http.post("/sessions/cs_nosuchsession/control", data=control, headers=headers)
    assert r.status_code == 403 and "remote.control" in r.text

    # observe off again: the same browser session sees nothing from the next request on
    _remote(db, observe=False, approveL2=True, control=True)
    for path in ("/live", "/settings", "/sessions"):
        r = http.get(path)
        assert r.status_code == 403 and "remote.observe" in r.text, path
    r = http.post(f"/confirmations/{l3}/deny", data=answer, headers=headers)
    assert r.status_code == 403


def test_a_remote_browser_sees_the_settings_read_only(
    remote_ui: UiServer, browser: Any, db: Database
) -> None:
    _remote(db, observe=True)
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    page.goto(remote_ui.login_url)  # Chromium connects to the LAN address from it
    response = page.goto(f"{remote_ui.base_url}/settings")
    assert response is not None and response.status == 200
    assert page.locator("#settings-remote-note").is_visible()
    assert page.locator("#settings-save").count() == 0
    assert page.locator('[name="killSwitch"]').is_disabled()
    assert page.locator('[name="enabled"][type="checkbox"]').is_disabled()
    shot(page, "settings-remote")
    context.close()
