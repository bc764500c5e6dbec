"""The state a Chromium action returns shows the page it loaded (host/page_loads.py).

Chromium says nothing of a load until the server answers, so a click on a link used to
return the page before it, its title still the old one. The server here takes its time
(``Site.delays``): a link, a reload and the address bar are waited for, a load that takes
too long is said to be unconfirmed, and a click that loads nothing is not held up.
Firefox (whose pages say busy while they load) is test_atspi_firefox.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from host_harness import HostProcess, line_id, observe_until

from deskpilot.desktop import apps
from deskpilot.host.page_loads import LOAD_WAIT_S
from desktop_kit import HAS_CHROMIUM, needs_chromium, site

pytestmark = [pytest.mark.desktop, pytest.mark.chromium, needs_chromium]

HOME = """<!doctype html><html><head><title>Home</title></head><body>
<p><a href="/slow">slow page</a> <a href="/slower">slower page</a> <a href="#part">a part</a></p>
<p><button onclick="document.title = 'Clicked'">Nothing to load</button></p>
<p id="part">Part</p></body></html>"""
SLOW = """<!doctype html><html><head><title>Slow page</title></head><body>
<h1>Arrived</h1><a href="/">home</a></body></html>"""
SLOWER = "<!doctype html><title>Slower page</title><h1>Late</h1>"


@pytest.fixture(scope="module")
def chromium(desktop: object) -> Iterator[apps.App]:
    if not HAS_CHROMIUM:
        pytest.skip("chromium is not installed")
    pages = {"/": HOME, "/slow": SLOW, "/slower": SLOWER}
    with site(pages, {"/slow": 1.0, "/slower": LOAD_WAIT_S + 3}) as served:
        app = apps.launch_chromium(served.url)
        try:
            apps.wait_accessible(pid=app.pid, timeout=60)
            yield app
        finally:
            app.stop()


def _act(host: HostProcess, obs: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    response, _ = host.request(
        {
            "type": "execute_action",
            "sessionId": "p1",
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": action,
            "observeAfter": True,
        },
        timeout=40,
    )
    assert response["type"] == "action_result", response
    return response


def _home(host: HostProcess, app: apps.App) -> dict[str, Any]:
    """The home page's state (back to it by its link from the slow page)."""
    obs = observe_until(host, {"pid": app.pid}, r'document "Home"|link "home"', "p1", timeout=60)
    if 'document "Home"' not in obs["tree"]:
        back = _act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], 'link "home"')})
        obs = back["observation"]
    assert 'document "Home"' in obs["tree"], obs["tree"]
    return obs


def test_a_link_and_a_reload_return_the_page_they_loaded(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = _home(host, chromium)
    followed = _act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], "slow page")})
    state = followed["observation"]
    assert state["tree"].startswith('- window "Slow page - Chromium"'), state["tree"]
    assert 'heading "Arrived"' in state["tree"] and followed.get("effect") is None, followed
    reloaded = _act(host, state, {"kind": "press_key", "keys": ["F5"]})
    assert followed["durationMs"] >= 1000 and reloaded["durationMs"] >= 1000, reloaded
    assert 'heading "Arrived"' in reloaded["observation"]["tree"], reloaded


def test_a_load_that_takes_too_long_is_unconfirmed_and_a_click_that_loads_nothing_is_quick(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = _home(host, chromium)
    # a link within the page and a button that changes the title load nothing: not held up
    part = _act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], "a part")})
    assert part["durationMs"] < 1500 and part.get("effect") is None, part
    obs = part["observation"]
    button = line_id(obs["tree"], r'button "Nothing to load"')
    clicked = _act(host, obs, {"kind": "click", "elementId": button})
    assert clicked["durationMs"] < 1500 and clicked.get("effect") is None, clicked
    obs = observe_until(host, {"pid": chromium.pid}, r'document "Clicked"', "p1")
    late = _act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], "slower page")})
    assert late["effect"] == "unconfirmed", late
    assert re.match(r"no page load was seen within 5 s", late["effectNote"]), late
    assert late["durationMs"] >= LOAD_WAIT_S * 1000, late
    observe_until(host, {"pid": chromium.pid}, r'document "Slower page"', "p1", timeout=30)
